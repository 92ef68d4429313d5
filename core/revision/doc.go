// Package revision makes and reads hilodb's document revisions (_rev):
// ArangoDB's format, 11 characters of a hybrid logical clock value
// (milliseconds since the epoch << 20 | a 20-bit counter, in the alphabet
// -_A-Za-z0-9) followed by the node tag of the node that made it. The clock
// only moves forward, even when the wall clock steps back, and moves past
// the values it observes in other nodes' revisions; the node tag makes
// revisions made offline on different nodes distinct. Revisions compare by
// their clock values (Decode), never as strings.
//
// A store's revisions come from its Clock (core.Store.Clock); the sync
// server keeps one of its own and checks the revisions clients push with
// Decode. docs/ids.md describes the format and node tags.
//
// # Concurrency
//
// A Clock is safe for concurrent use (SetNow aside, which is for tests);
// Encode, Decode and IsNodeTag are pure functions.
//
// # Wasm
//
// The package builds and passes its tests on the host and under
// GOOS=js GOARCH=wasm; the random local node tag comes from the host
// (internal/hostrand).
package revision
