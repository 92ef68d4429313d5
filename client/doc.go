// Package client is the hilodb sync client: it dials the sync server over a
// websocket, leases HiLo ranges (it is an idgen.RangeSource), and takes
// identities.
//
// # Wasm
//
// The same code runs natively and under GOOS=js GOARCH=wasm, where
// coder/websocket uses the host's WebSocket.
//
// # Concurrency
//
// A Client is safe for concurrent use. It connects lazily and redials after
// a lost connection on the next call, so it can be created while offline.
package client
