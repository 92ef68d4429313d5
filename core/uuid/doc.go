// Package uuid makes and reads the UUIDs hilodb's ids are made of: random
// ones (version 4, New) for ids given as "", time-ordered ones (version 7,
// NewV7) for the ids a store makes offline before it has a node tag or a
// HiLo range, and the UUID type a session's identity property may have
// (docs/ids.md).
//
// The random bits come from the host (internal/hostrand): the operating
// system natively, crypto.getRandomValues under WebAssembly.
//
// # Concurrency
//
// New, NewV7 and Parse are safe for concurrent use.
package uuid
