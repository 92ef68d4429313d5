//go:build js && wasm

package main

import (
	"fmt"
	"runtime"
	"sync"
	"syscall/js"
	"unsafe"

	"github.com/hilodb/hilodb/database"
)

// persister is the database.Storage and database.Meta of a persisted store:
// a storage adapter that index.js makes (IndexedDB in browsers, files in
// Node):
//
//	load()               → Promise<{snapshot: Uint8Array|null, log: Uint8Array|null, node: string|null, ranges: {tag: text}}>
//	append(bytes)        → Promise, settled once bytes are at the end of the log (held by the operating system, or on the disk)
//	canAppendNow()       → whether appendNow can write (optional; asked once, after load)
//	appendNow(bytes)     → true once bytes are at the end of the log as append would put them, written before it returns; false when it cannot now (nothing written); throws when the write failed
//	appendNowAt(at, n)   → appendNow of the n bytes at address at of the WebAssembly memory (optional; index.js adds it where it can read the memory)
//	flush()              → Promise, settled once every append so far is on the disk (optional: without it, appends are)
//	compact(bytes)       → Promise, settled once bytes are the durable snapshot and the log is empty
//	saveNode(node)       → Promise, settled once the node tag is durable
//	saveRange(tag, text) → Promise, settled once the range is durable
//	close()              → Promise
//
// Every write transaction is a frame appended to the log (concurrent ones
// share an append), and a write resolves once its frame is durable; the log
// is compacted into a snapshot in the background. Each HiLo tag's journal
// entry is saved at once, before a number it covers is handed out.
//
// # Concurrency
//
// A persister is safe for concurrent use. Its methods wait for the adapter's
// Promises, so they must run in goroutines, never on the event loop.
type persister struct {
	adapter js.Value
	// appendAt says the adapter has appendNowAt: a frame is then passed as
	// its place in the memory, not copied into a new Uint8Array (an object,
	// a reference held by Go and a finalizer per durable write).
	appendAt bool

	mu    sync.Mutex
	found persisted // what load found, until the DB takes it
}

var (
	_ database.Storage = (*persister)(nil)
	_ database.Meta    = (*persister)(nil)
	_ database.Flusher = (*persister)(nil)

	_ database.NowAppender = (*persister)(nil)
)

// persisted is what load found.
type persisted struct {
	snapshot []byte // nil for none
	log      []byte
	node     string
	ranges   map[string][]byte
}

// loadPersister reads what adapter holds.
func loadPersister(adapter js.Value) (*persister, error) {
	p := &persister{adapter: adapter}
	v, err := awaitPromise(func() js.Value { return adapter.Call("load") })
	if err != nil {
		return nil, fmt.Errorf("load persisted store: %w", err)
	}
	p.found.ranges = map[string][]byte{}
	if v.Type() != js.TypeObject {
		return p, nil
	}
	if p.found.snapshot, err = snapshotOf(v); err != nil {
		return nil, fmt.Errorf("load persisted store: %w", err)
	}
	p.found.log = bytesOf(v.Get("log"))
	if n := v.Get("node"); n.Type() == js.TypeString {
		p.found.node = n.String()
	}
	if r := v.Get("ranges"); r.Type() == js.TypeObject {
		keys := jsObject.Call("keys", r)
		for i := range keys.Length() {
			tag := keys.Index(i).String()
			p.found.ranges[tag] = []byte(r.Get(tag).String())
		}
	}
	return p, nil
}

// snapshotOf returns the snapshot load found (v, its result): read by the
// adapter into a buffer of Go's (readSnapshot(ptr, n), the buffer at
// address ptr of the WebAssembly memory, which Go does not move), or
// copied from the bytes it read itself.
func snapshotOf(v js.Value) ([]byte, error) {
	read := v.Get("readSnapshot")
	if read.Type() != js.TypeFunction {
		return bytesOf(v.Get("snapshot")), nil
	}
	n := v.Get("snapshotSize").Int()
	if n <= 0 {
		return nil, nil
	}
	b := make([]byte, n)
	// Nothing in Go runs while the adapter reads: the memory does not grow
	// (which would detach its view) between the call and the read. A read
	// that throws is an error, not a panic.
	got, err := protect(func() (any, error) {
		return read.Invoke(uintptr(unsafe.Pointer(unsafe.SliceData(b))), n).Int(), nil
	})
	if err != nil {
		return nil, fmt.Errorf("read snapshot: %w", err)
	}
	if got != n {
		return nil, fmt.Errorf("read snapshot: %d of its %d bytes", got, n)
	}
	return b, nil
}

// bytesOf copies a Uint8Array into Go; anything else is nil.
func bytesOf(v js.Value) []byte {
	if v.Type() != js.TypeObject {
		return nil
	}
	b := make([]byte, v.Get("length").Int())
	js.CopyBytesToGo(b, v)
	return b
}

// Load implements database.Storage: what the adapter's load found.
func (p *persister) Load() ([]byte, []byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.found
	p.found.snapshot, p.found.log = nil, nil
	return f.snapshot, f.log, nil
}

// Append implements database.Storage.
func (p *persister) Append(frames []byte) error {
	_, err := awaitPromise(func() js.Value { return p.adapter.Call("append", toJS(frames)) })
	return err
}

// CanAppendNow implements database.NowAppender: the adapter's canAppendNow.
func (p *persister) CanAppendNow() bool {
	if p.adapter.Get("canAppendNow").Type() != js.TypeFunction {
		return false
	}
	p.appendAt = p.adapter.Get("appendNowAt").Type() == js.TypeFunction
	v, err := protect(func() (any, error) { return p.adapter.Call("canAppendNow").Truthy(), nil })
	return err == nil && v == true
}

// AppendNow implements database.NowAppender through the adapter's
// appendNow, a call that writes before it returns (no Promise): it may run
// on the event loop.
func (p *persister) AppendNow(frames []byte) (ok bool, err error) {
	v, err := protect(func() (any, error) {
		if p.appendAt && len(frames) > 0 {
			// JavaScript writes the bytes before the call returns, while
			// Go waits in it: they stay where they are (Go's collector
			// does not move memory) and alive (KeepAlive).
			at := uintptr(unsafe.Pointer(unsafe.SliceData(frames)))
			ok := p.adapter.Call("appendNowAt", at, len(frames)).Truthy()
			runtime.KeepAlive(frames)
			return ok, nil
		}
		return p.adapter.Call("appendNow", toJS(frames)).Truthy(), nil
	})
	if err != nil {
		return true, fmt.Errorf("append to log: %w", err)
	}
	return v == true, nil
}

// Flush implements database.Flusher through the adapter's flush, if it has
// one (an adapter without it puts every append on the disk).
func (p *persister) Flush() error {
	if p.adapter.Get("flush").Type() != js.TypeFunction {
		return nil
	}
	_, err := awaitPromise(func() js.Value { return p.adapter.Call("flush") })
	return err
}

// Compact implements database.Storage.
func (p *persister) Compact(snap []byte) error {
	_, err := awaitPromise(func() js.Value { return p.adapter.Call("compact", toJS(snap)) })
	return err
}

func toJS(b []byte) js.Value {
	u8 := jsUint8Array.New(len(b))
	js.CopyBytesToJS(u8, b)
	return u8
}

// LoadMeta implements database.Meta from what load found.
func (p *persister) LoadMeta() (string, map[string][]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.found.node, p.found.ranges, nil
}

// SaveNode implements database.Meta.
func (p *persister) SaveNode(node string) error {
	_, err := awaitPromise(func() js.Value { return p.adapter.Call("saveNode", node) })
	return err
}

// SaveRange implements database.Meta: the adapter replaces the tag's entry
// in one write, so a failed save leaves the previous entry.
func (p *persister) SaveRange(tag string, entry []byte) error {
	_, err := awaitPromise(func() js.Value { return p.adapter.Call("saveRange", tag, string(entry)) })
	return err
}

// close releases the adapter (in browsers, the lock on its name).
func (p *persister) close() error {
	_, err := awaitPromise(func() js.Value { return p.adapter.Call("close") })
	return err
}

var jsUint8Array = js.Global().Get("Uint8Array")

// jsRejection is a Promise rejected with something other than an Error
// carrying a code.
type jsRejection struct{ msg string }

func (e *jsRejection) Error() string { return e.msg }

// hostCodedError is a rejection from index.js's adapter that carries a code
// and a number, such as "locked".
type hostCodedError struct {
	code string
	num  int
	msg  string
}

func (e *hostCodedError) Error() string { return e.msg }

// awaitPromise calls start, which returns a Promise (or a value), and waits
// for it to settle. It must run in a goroutine: the event loop goes on while
// it waits. A start that throws is a rejection.
func awaitPromise(start func() js.Value) (js.Value, error) {
	type outcome struct {
		v  js.Value
		ok bool
	}
	ch := make(chan outcome, 1)
	var onOK, onErr js.Func
	onOK = js.FuncOf(func(_ js.Value, args []js.Value) any { ch <- outcome{arg(args, 0), true}; return nil })
	onErr = js.FuncOf(func(_ js.Value, args []js.Value) any { ch <- outcome{arg(args, 0), false}; return nil })
	defer onOK.Release()
	defer onErr.Release()
	_, err := protect(func() (any, error) {
		jsPromise.Call("resolve", start()).Call("then", onOK, onErr)
		return nil, nil
	})
	if err != nil {
		return js.Undefined(), err
	}
	o := <-ch
	if o.ok {
		return o.v, nil
	}
	return js.Undefined(), rejectionError(o.v)
}

// rejectionError turns a rejection reason into an error, keeping its code
// and num when it has them.
func rejectionError(reason js.Value) error {
	if reason.Type() != js.TypeObject {
		return &jsRejection{msg: reason.String()}
	}
	msg := reason.Get("message")
	text := reason.Call("toString").String()
	if msg.Type() == js.TypeString {
		text = msg.String()
	}
	code, num := reason.Get("code"), reason.Get("num")
	if code.Type() == js.TypeString && num.Type() == js.TypeNumber {
		return &hostCodedError{code: code.String(), num: num.Int(), msg: text}
	}
	return &jsRejection{msg: text}
}
