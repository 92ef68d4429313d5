//go:build js && wasm

package main

import (
	"encoding/binary"
	"strings"
	"syscall/js"
	"unsafe"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/wasm/mirror"
)

// observeBoth returns the database.Config.Observe function that keeps the
// fast path's mirror in step with every write transaction, then tells
// index.js's read cache. The mirror changes first: JavaScript the
// invalidation runs may read through the fast path, and must see the write.
func observeBoth(docs *mirror.Docs, invalidate func([]core.Change)) func([]core.Change) {
	return func(changes []core.Change) {
		docs.Apply(changes)
		invalidate(changes)
	}
}

// newInvalidator returns the database.Config.Observe function that tells
// index.js's read cache which documents a write transaction changed, and
// its live change feeds how far the local change feed has moved. It is
// called before the write returns and while the store still holds its write
// lock: JavaScript runs only between Go's steps, so a get answered from the
// cache never sees a document older than the last write that returned.
//
// With a drop log (log not nil) the ids go there, in the WebAssembly
// memory, where the cache reads them before its next look-up, and
// JavaScript is called only when the feed moved: a call into JavaScript
// costs more than the rest of a small put's bookkeeping. Without one, they
// go to invalidate as one string.
func newInvalidator(invalidate js.Value, log *dropLog) func([]core.Change) {
	return func(changes []core.Change) {
		// One call per transaction (a call into JavaScript costs more than
		// the ids): the ids joined by NUL, which no id holds, and the feed's
		// new head (-1: not moved, or no feed).
		var ids strings.Builder
		for _, ch := range changes {
			if id, ok := core.DocIDOf(ch); ok {
				if log != nil {
					log.add(id)
					continue
				}
				if ids.Len() > 0 {
					ids.WriteByte(0)
				}
				ids.WriteString(id)
			}
		}
		head, moved := core.FeedHeadOf(changes)
		if !moved {
			head = -1
		}
		if ids.Len() > 0 || moved {
			invalidate.Invoke(ids.String(), head)
		}
	}
}

// Layout of a drop log: a little-endian uint32 of the bytes of ids held,
// a byte that is 1 once an id did not fit (the cache then drops
// everything), three bytes unused, then the ids, each followed by a NUL.
const (
	dropHeader  = 8
	dropLogSize = 16 << 10
)

// dropLog is where a store's write transactions leave the ids of the
// documents they changed, for index.js's read cache (ReadCache) to drop
// before its next look-up: JavaScript reads it straight from the
// WebAssembly memory and empties it, so telling the cache of a write costs
// no call into JavaScript. Go adds to it only inside a write transaction
// (one at a time, under the store's write lock) and JavaScript empties it
// only while Go is not running (its one thread), so neither ever sees the
// other's half-done change. The buffer never moves: its address is handed
// to JavaScript once.
type dropLog struct {
	buf []byte
}

func newDropLog() *dropLog { return &dropLog{buf: make([]byte, dropLogSize)} }

// addr returns the log's address in the WebAssembly memory.
func (l *dropLog) addr() int { return int(uintptr(unsafe.Pointer(unsafe.SliceData(l.buf)))) }

// add records that document id changed.
func (l *dropLog) add(id string) {
	if l.buf[4] != 0 {
		return // full: the cache drops everything anyway
	}
	used := int(binary.LittleEndian.Uint32(l.buf))
	at := dropHeader + used
	if at+len(id)+1 > len(l.buf) {
		l.buf[4] = 1
		return
	}
	copy(l.buf[at:], id)
	l.buf[at+len(id)] = 0
	binary.LittleEndian.PutUint32(l.buf, uint32(used+len(id)+1))
}
