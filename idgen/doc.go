// Package idgen holds hilodb's HiLo id generator. HiLo hands out ids such as
// "orders/1-A" (and bare numbers, for key generators) from number ranges
// leased through a RangeSource, one lease per range rather than one round
// trip per id.
//
// Beyond RavenDB, Options let a client go on without the server:
//
//   - Reserve holds whole ranges leased beyond the current one. When the
//     current range runs out, the next reserved one takes its place with no
//     round trip; the reserve is refilled in the background while the
//     source answers (and retried on a later call when it did not).
//     Offline, ids come from the reserve until it is spent; then NextID
//     fails with the lease's error, which wraps the RangeSource's.
//   - Prefetch leases the next range when a fraction of the current one is
//     left; alone it is a one-range reserve.
//   - A Journal keeps everything leased durable: the current range with a
//     high-water mark, written before any number above the mark is handed
//     out, and every reserved range. A generator made after a reload goes
//     on from the journal without a lease, offline as well, and never hands
//     out a number twice; a crash skips at most JournalStep numbers.
//
// Close returns unused numbers to a RangeReturner only when no journal
// holds them: a journaled generator keeps its ranges for the next session,
// since numbers both given back and kept in the journal could be handed out
// twice. A number that may have
// been handed out is never given back.
//
// # Concurrency
//
// HiLo and Generator are safe for concurrent use and race-free: a number is
// taken by one atomic add on the current range, which is swapped whole, and
// concurrent callers that find a range spent share one in-flight lease.
// Reserve leases run one at a time in a background goroutine; journal
// writes of one tag are serialized and never made while the generator's
// state lock is held. Ids are cut from small shared blocks (see arenaSize)
// written once before the string is made, so formatting an id usually
// allocates nothing. No goroutine outlives Close.
//
// # Wasm
//
// idgen is pure Go and builds and passes its tests under GOOS=js GOARCH=wasm.
// There a Journal's SaveRanges typically waits for an IndexedDB or file
// write (see the wasm command's persister); it is called from goroutines
// (the caller's, the reserve's, Close's), never on the JavaScript event loop.
package idgen
