// Command edge is hilodb's edge worker: a syumai/workers program, built with
// GOOS=js GOARCH=wasm and run by workerd (Cloudflare Workers), that serves a
// small HTTP API as a write-through, read-through cache of the sync server.
//
//	POST /docs/{collection}  store the JSON body, push it to the sync server,
//	                         and answer 201 with the document once the
//	                         server has acknowledged it
//	GET  /docs/{id...}       the document from the isolate's cache, or read
//	                         through from the sync server on a miss
//	                         (X-Hilodb-Cache: hit or miss)
//
// Documents stored without an id get HiLo ids (orders/1-A, orders/2-A, …)
// from number ranges leased from the sync server, one lease per range and
// none per document. A write the server did not acknowledge is not answered
// 201 and is not kept in the cache.
//
// # Residency
//
// The glue in worker.mjs starts the Go program once per isolate and sends
// every request to the same instance, so the leased ranges and the cache
// outlive the request that made them.
//
// # Wasm
//
// The worker runtime ties every socket to the request whose code opened it,
// and refuses I/O on it from any other request. The worker therefore keeps
// no connection between requests: each request that needs the sync server
// dials it (remote), uses that one connection for everything it asks (a
// lease and a push, or a get) and hangs up before it answers (see
// README.md).
//
// Built for the host instead, the same handler runs as a plain HTTP server
// on loopback, for development and for the tests of this package.
//
// # Concurrency
//
// The handler is safe for concurrent use: requests run in their own
// goroutines over one cache and one set of HiLo generators.
package main
