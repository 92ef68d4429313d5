// Command edge is hilodb's edge worker: a syumai/workers program, built with
// GOOS=js GOARCH=wasm and run by workerd (Cloudflare Workers), that serves a
// small HTTP API over a resident in-memory document store.
//
//	POST /docs/{collection}  store the JSON body, 201 and the stored document
//	GET  /docs/{id...}       the document, or 404 with errorNum 1202
//
// Documents stored without an id get HiLo ids (orders/1-A, orders/2-A, …)
// from number ranges leased from the sync server, one round trip per range
// and none per document.
//
// # Residency
//
// The glue in worker.mjs starts the Go program once per isolate and sends
// every request to the same instance, so the leased ranges and the store
// outlive the request that made them.
//
// # Wasm
//
// The worker runtime ties every socket to the request whose code opened it,
// and refuses I/O on it from any other request. The worker therefore keeps
// no connection between requests: leaser dials the sync server inside the
// request that needs a new range and hangs up before that request ends (see
// README.md).
//
// Built for the host instead, the same handler runs as a plain HTTP server
// on loopback, for development and for the tests of this package.
//
// # Concurrency
//
// The handler is safe for concurrent use: requests run in their own
// goroutines over one store and one set of HiLo generators.
package main
