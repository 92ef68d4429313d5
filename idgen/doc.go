// Package idgen holds hilodb's HiLo id generator. HiLo hands out ids such as
// "orders/1-A" (and bare numbers, for key generators) from number ranges
// leased through a RangeSource, one lease per range rather than one round
// trip per id.
//
// Beyond RavenDB, Options add prefetching (the next range is leased in the
// background before the current one runs out, and serves as a one-range
// reserve for going offline) and a Journal hook that keeps the current range
// and a high-water mark durable, so a reloaded client goes on without a
// lease and never hands out a number twice.
//
// # Concurrency
//
// HiLo and Generator are safe for concurrent use and race-free: a number is
// taken by one atomic add on the current range, which is swapped whole, and
// concurrent callers that find a range spent share one in-flight lease. Ids
// are cut from small shared blocks (see arenaSize) written once before the
// string is made, so formatting an id usually allocates nothing. No
// goroutine outlives Close.
//
// # Wasm
//
// idgen is pure Go and builds and passes its tests under GOOS=js GOARCH=wasm.
package idgen
