//go:build js && wasm

package main

import (
	"time"

	"github.com/hilodb/hilodb/wasm/mirror"
)

// reads is the fast path of get: the open stores' document mirrors and the
// buffers JavaScript passes ids and documents through. index.js calls the
// functions below directly, through the WebAssembly instance's exports,
// without the event hand-off of a js.FuncOf; see package mirror for why
// they never wait. Nothing else may be exported this way without a proof
// of its own that it never waits for JavaScript (fastfind.go gives
// find's).
var reads = mirror.NewLookup()

// fastGet looks up the id JavaScript wrote into the input buffer (n bytes
// of UTF-8) in the mirror of the store numbered store and copies its JSON
// text to the output buffer: it returns the text's length, or a negative
// code when the store's get (getText) must answer instead. It must never
// park (package mirror): no allocation, no lock it does not merely try.
//
//go:wasmexport hilodbGet
func fastGet(store, n int32) int32 { return reads.Get(store, n) }

// fastInput returns the input buffer's address in the WebAssembly memory.
//
//go:wasmexport hilodbInput
func fastInput() uint32 { return uint32(reads.InputAddr()) }

// fastInputSize returns the input buffer's size in bytes.
//
//go:wasmexport hilodbInputSize
func fastInputSize() int32 { return mirror.InSize }

// fastOutput returns the output buffer's address in the WebAssembly memory.
// It changes when getText grows the buffer.
//
//go:wasmexport hilodbOutput
func fastOutput() uint32 { return uint32(reads.OutputAddr()) }

// seedChunk is how many documents seedMirror reads in one read transaction
// (about half a millisecond under wasm, once optimized) before it lets
// JavaScript run: a call that comes meanwhile waits for the part.
const seedChunk = 500

// seedQuiet is how long a store has had no new call before seedMirror
// reads a part: an app's first screen asks its questions at once after
// the open (a query, its indexes made sure of), and a part of the seed,
// 5-10 ms of a new page's unoptimized code, was in their way, as it was
// in a burst of queries' after; gets meanwhile take getText, which adds
// what they read.
const seedQuiet = 50 * time.Millisecond

// seedMirror fills the store's mirror with the documents it loaded from its
// snapshot and log at open, seedChunk at a time, each part in one read
// transaction (so in step with the writes Observe applies), each once the
// store has been quiet for seedQuiet (no call began: h.began), so that
// open does not wait for it and calls seldom do; JavaScript runs between
// parts (gets of documents not there yet take getText, which adds them).
// 100,000 documents cost about 50–100 ms of Go's time in all. It stops
// when the store closes or the mirror is full. The caller has added it to
// h.calls.
func (h *handle) seedMirror() {
	defer h.calls.Done()
	after := ""
	for {
		last := h.began.Load()
		quiet := time.Since(h.born) - time.Duration(last)
		t := time.NewTimer(max(time.Millisecond, seedQuiet-quiet))
		select {
		case <-h.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if h.began.Load() != last {
			continue // a call began meanwhile: wait for quiet again
		}
		n, stop := 0, false
		err := h.docs.Seed(func(fn func(id, text string) bool) error {
			return h.store.EachDocument(after, func(id, text string) bool {
				if n == seedChunk {
					return false
				}
				if !fn(id, text) {
					stop = true // closed or full
					return false
				}
				n, after = n+1, id
				return true
			})
		})
		if err != nil || stop || n < seedChunk {
			return // an error leaves the mirror emptier: getText answers what it lacks
		}
	}
}
