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
// they never wait. Nothing else may be exported this way without the same
// proof.
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
// (about 2 ms under wasm) before it lets JavaScript run.
const seedChunk = 2000

// seedFirstPause is how long after the open seedMirror starts: an app's
// first screen asks its questions at once (a query, its indexes made
// sure of), and a part of the seed, 5-10 ms of a new page's unoptimized
// code, was in their way; gets meanwhile take getText, which adds what
// they read.
const seedFirstPause = 100 * time.Millisecond

// seedMirror fills the store's mirror with the documents it loaded from its
// snapshot and log at open, seedChunk at a time, each part in one read
// transaction (so in step with the writes Observe applies), pausing before
// each part so that open does not wait for it and JavaScript runs between
// parts (gets of documents not there yet take getText, which adds them).
// 100,000 documents cost about 50–100 ms of Go's time in all. It stops when the store closes or
// the mirror is full. The caller has added it to h.calls.
func (h *handle) seedMirror() {
	defer h.calls.Done()
	after := ""
	pause := seedFirstPause
	for {
		// Pause first: openStore resolves without waiting for any part,
		// and an app's first calls after it do not wait behind one.
		t := time.NewTimer(pause)
		pause = time.Millisecond
		select {
		case <-h.ctx.Done():
			t.Stop()
			return
		case <-t.C:
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
