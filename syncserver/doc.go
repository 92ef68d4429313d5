// Package syncserver is the hilodb sync server: the one authority that hands
// out HiLo ranges, identities and node tags, over the websocket protocol of
// docs/protocol.md, for many databases in one store. docs/operations.md
// describes running, securing, backing up and repairing it.
//
// It owns the protocol, that authority, the change feed and the one guard
// every door passes. The HTTP doors (packages ravendoor and arangodoor)
// stand outside it: each registers its routes through Config.Doors, wraps
// every route in Server.Guard and reaches the documents, ids and
// collections through the exported methods (WriteDocs, ReadDocs,
// FindDocs, NextRange, DefineCollection, …). The server imports no door.
//
// # Durability
//
// Every reply that hands out numbers is sent only after the new state is
// durable. The state lives in package storage (the buntdb data file, or an
// etcd cluster that several servers with different tags share), which
// owns its key layout, group commit, backup, restore and repair; this
// package decides what to write and keeps the authority over HiLo ranges,
// identities, node tags and the change feed.
//
// # Ops
//
// Requests are routed on their op through a registry: a file adds an op by
// calling registerOp from its init function with an opHandler, which gets
// the connection (its database and node tag after hello), the request id and
// the raw frame, and returns the reply or an error. Handlers that take
// batches check their size with Server.CheckBatch; state that must end with
// the connection is released through conn.onClose; goroutines are started
// with Server.spawn so that Close waits for them; server-initiated messages
// are written with conn.send, which is safe from any goroutine.
//
// # Security
//
// Per-database tokens (constant-time compare), loopback-only without tokens,
// an Origin allow-list for browsers, and limits on message size, JSON depth,
// batch size, request rate and idle time; each refusal is an error reply
// with a stable code, after which the connection closes where the protocol
// says so.
//
// # Concurrency
//
// A Server is safe for concurrent use; each connection's requests are handled
// in order of arrival. No goroutine of the Server outlives Close.
package syncserver
