// Command edge is hilodb's edge worker: a Go program built with GOOS=js
// GOARCH=wasm and run by workerd (Cloudflare Workers), one instance per
// Durable Object, each the replica of one database.
//
// The replica is a database.DB like any other: its store, node tag and
// journaled HiLo ranges are kept in the Durable Object's storage (an
// adapter in worker.mjs; see doStorage), it leases ranges from the sync
// server and replicates with it live (push as writes are made, follow the
// change feed, conflicts by _rev with the server-wins policy).
//
// It serves ArangoDB's document API (the subset the sync server serves,
// docs/http.md) under /_api/document/… and /_db/{db}/_api/document/…, and
// two short forms:
//
//	POST /docs/{collection}  store the body with a HiLo id; wait (at most a
//	                         few seconds) for the server's acknowledgement
//	GET  /docs/{id...}       the document, by _id
//
// A write is answered once it is durable in the Durable Object: 201 when
// the sync server has acknowledged it too, 202 when it is stored locally
// and pending (X-Hilodb-Sync: synced or pending). While the sync server is
// unreachable writes go on being accepted, with HiLo ids from the range in
// use and the spare one held for that; the object's alarm pushes them once
// the server is back. A read is served from the replica: fresh while it
// follows the live feed (X-Hilodb-Fresh: live), after a pull of at most a
// second otherwise (pulled), or as the replica has it when the server
// cannot be reached (stale). An object that starts answers its first read
// before its store is loaded, from the bytes its storage holds (starter),
// then loads the store and connects in the background; its reads are
// stale for a second at most, until it follows the feed, unless a read
// asks with Cache-Control: no-cache.
//
// # Access
//
// The glue checks each request's token (auth.mjs: the static
// HILODB_EDGE_TOKEN, or a signed token by the sync server's rules) and
// hands handle the role it grants in the request's database; refuse
// (roles.go) holds the request to it: read may read and query, write may
// also write, admin may also see the status. A worker bound to no keys
// gives every request admin.
//
// # Wasm
//
// worker.mjs starts the program once per Durable Object and calls its
// handle function for every request; a read the replica can answer at once
// is answered synchronously, without a goroutine or a Promise. The program
// uses no net/http (the request and response types are its own) and no
// net/url (urlcodec.go), which keeps the bundle small and the start short.
// The live loop begins once the first request has its answer: the program
// returns to the event loop only when every goroutine waits, so work begun
// before would come before that answer. A Durable Object, unlike a stateless worker, may
// keep a socket across requests, which is what lets the replica hold one
// connection to the sync server.
//
// Built for the host instead, the same API runs as a plain HTTP server on
// loopback with the replica kept in a directory, for development and for
// this package's tests.
//
// # Concurrency
//
// The API is safe for concurrent use: requests run in their own goroutines
// over one replica.
package main
