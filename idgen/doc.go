// Package idgen holds hilodb's id strategies. HiLo hands out ids such as
// "orders/1-A" from number ranges leased through a RangeSource, one lease per
// range rather than one round trip per id.
//
// # Concurrency
//
// HiLo and Generator are safe for concurrent use and race-free: a number is
// taken by one atomic add on the current range, which is swapped whole, and
// concurrent callers that find a range spent share one in-flight lease.
//
// # Wasm
//
// idgen is pure Go and builds and passes its tests under GOOS=js GOARCH=wasm.
package idgen
