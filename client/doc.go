// Package client is the hilodb sync client: it dials the sync server over a
// websocket, leases HiLo ranges (it is an idgen.RangeSource), and takes
// identities.
//
// # Wasm
//
// The same code runs natively and under GOOS=js GOARCH=wasm. Natively the
// websocket is coder/websocket's; under GOOS=js it is the host's global
// WebSocket (browsers, workerd, Node with one installed), driven through
// syscall/js by a thin wrapper that keeps net/http out of the build. The
// wrapper's event listeners never block: they queue what arrived and return,
// because a listener that waited would hold the host's event loop, and with
// it the very event it waits for. It sends only text messages and closes
// only with status 1000, the one code browsers let a script send; a message
// over Options.MaxMessageBytes ends the connection with an error.
//
// # Concurrency
//
// A Client is safe for concurrent use. It connects lazily and redials after
// a lost connection on the next call, so it can be created while offline. A
// connection counts as lost once its reader ends, a write to it fails, or a
// request on it gets no reply within Options.RequestTimeout; the call that
// finds it so fails with ErrDisconnected (or ErrNoReply), and the next dials.
package client
