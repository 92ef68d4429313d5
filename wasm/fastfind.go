//go:build js && wasm

package main

import (
	"encoding/json"
	"sync/atomic"
	"unsafe"

	"github.com/hilodb/hilodb/core"
)

// The fast path of find: index.js writes the collection and the query's
// JSON text into the write buffer (writes.go) and calls the hilodbFind
// export, which runs the query and leaves the page's JSON text in the
// page buffer, read out of the WebAssembly memory. A call through a
// js.FuncOf costs more than the query itself: the event's hand-off, a
// reference and a finalizer for each JavaScript value taken in or handed
// back, and every goroutine made runnable meanwhile run before JavaScript
// goes on. The worker's part of a query of 100 documents from a tab took
// about 1.7 times as long that way in Chromium (329 against 192 µs).
//
// Why it may be exported (package mirror says what such a call must not
// do: park until JavaScript runs). It runs what find ran already as a
// js.FuncOf answered at once (immediate), which may not wait for
// JavaScript either: there no event could come to wake it, the runtime
// would stop with a deadlock. It reads the in-memory store under buntdb's
// read lock, which no one holds across a wait for JavaScript: a write
// holds the write lock only while it applies its changes in memory and
// hands them to the journal (core's Journal.Commit, which appends at once
// or queues them, never waiting for the storage), and ids that come from
// the sync server are taken before the transaction. An index a query needs
// and no query built yet since the load is built in the call, in memory.
// The page buffer's lock is only tried. A garbage collection, or a switch
// to a goroutine that can run, is safe inside such a call (the Go
// runtime's own tests of //go:wasmexport under GOOS=js do both); a
// goroutine the call makes runnable runs at the next event.

// findAPI is the api whose stores the find export serves: the one main
// started (a test sets its own).
var findAPI atomic.Pointer[api]

// Answers of fastFind besides a page's length.
const (
	// findOrdinary: the store object's find must answer (no api, the
	// request does not fit, the page buffer is busy).
	findOrdinary int32 = -1
	// findFailed and less: the query failed; its error is JSON text
	// {code, num, message} of findFailed-r bytes in the page buffer.
	findFailed int32 = -2
)

// fastFind runs the query of store number store whose collection (coll
// bytes) and JSON text (text bytes) index.js wrote, in that order, at the
// start of the write buffer: the page's length in bytes in the page buffer
// (hilodbFindOutput), or an answer above. Read the page before the next
// call into Go.
//
//go:wasmexport hilodbFind
func fastFind(store, coll, text int32) int32 {
	a := findAPI.Load()
	if a == nil || coll < 0 || text < 0 || int64(coll)+int64(text) > int64(len(writes.buf)) {
		return findOrdinary
	}
	b := writes.buf
	return a.findIn(int(store), string(b[:coll]), b[coll:coll+text])
}

// fastFindOutput returns the address of the page buffer, where fastFind
// leaves its answer. It changes when a page outgrows the buffer.
//
//go:wasmexport hilodbFindOutput
func fastFindOutput() uint32 {
	a := findAPI.Load()
	if a == nil {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(a.q.out))))
}

// findIn runs find's query text over collection coll of store id into
// the page buffer, as fastFind answers.
func (a *api) findIn(id int, coll string, text []byte) int32 {
	if !a.q.pageMu.TryLock() {
		return findOrdinary
	}
	defer a.q.pageMu.Unlock()
	var page []byte
	_, err := protect(func() (any, error) {
		return a.call(id, func(h *handle) (any, error) {
			q, err := core.ParseQuery(text)
			if err != nil {
				return nil, err
			}
			page, _, err = h.store.AppendFind(a.q.pageBuf[:0], coll, q)
			return nil, err
		})
	})
	if err != nil {
		code, num := describe(err)
		page, _ = json.Marshal(struct {
			Code    string `json:"code"`
			Num     int    `json:"num"`
			Message string `json:"message"`
		}{code, num, err.Error()})
		a.q.out = page
		return findFailed - int32(len(page))
	}
	if cap(page) <= maxPageBuf {
		a.q.pageBuf = page
	}
	a.q.out = page
	return int32(len(page))
}
