// Package mirror holds what the browser build's get needs to answer a read
// on a path that never waits: a copy of each open store's documents by id,
// kept in step with its write transactions (Docs), and the buffers through
// which JavaScript passes an id in and reads a document's JSON text out of
// the WebAssembly memory (Lookup).
//
// A function exported with //go:wasmexport is called by JavaScript
// directly, at a fraction of the cost of a js.FuncOf, but under GOOS=js it
// must never park until JavaScript runs: no event can come while such a
// call is under way, so a goroutine that waits there for one stops the
// runtime. The mirror promises more: it never parks at all, not even for
// a lock a running goroutine holds or a garbage collection assist. The
// store's own reads cannot promise that: buntdb's View takes buntdb's lock,
// which a write holds across the transaction, and allocates (wasm's
// fastfind.go says why a query may be exported all the same, and what a
// get gains here beyond it: no allocation, no lock waited for). So the
// fast path reads a map of its own instead, under a lock it only ever tries
// (TryRLock), and copies the text into a buffer allocated beforehand:
// Lookup.Get allocates nothing (its tests assert it with
// testing.AllocsPerRun on the host and under GOOS=js). Whenever it cannot
// answer at once (the document is not in the mirror, a lock is held, the
// text does not fit) it says so, and the caller takes the ordinary path.
//
// # Keeping in step
//
// Docs.Apply takes every write transaction's changes while the store holds
// its write lock (core.Journal's Commit, through database.Config.Observe),
// so the mirror changes in the same step as the store: a read from it is
// never older than a write that returned. Documents loaded before Apply was
// installed (a persisted store's snapshot and log) enter it through Seed, in
// one read transaction of the store, or when the ordinary path reads them
// (Docs.Fill), unless a write came in between (Docs.Gen). Text is shared with the store, not copied: an entry costs the
// map's own overhead, about 52 bytes, and a mirror holds at most MaxDocs
// documents (a full one keeps those it holds in step and takes no more).
//
// # Concurrency
//
// Docs and Lookup are safe for concurrent use, but Lookup's input and
// output buffers belong to one caller at a time: JavaScript's one thread
// under GOOS=js.
package mirror
