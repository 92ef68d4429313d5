// Package syncserver is the hilodb sync server: the one authority that hands
// out HiLo ranges, identities and node tags, over the websocket protocol of
// docs/protocol.md, for many databases in one data file. docs/operations.md
// describes running, securing, backing up and repairing it.
//
// # Durability
//
// Every reply that hands out numbers is sent only after the new state is on
// disk. Concurrent requests share one buntdb transaction and one fsync (group
// commit), so many clients do not wait for as many fsyncs in a row. A failed
// fsync stops all further changes until a restart. At start the data file is
// read in full: an unfinished last write is cut off, damage elsewhere is a
// *CorruptError, and Repair rebuilds the file, raising every counter past
// anything that may have been handed out. Restore does the same for a
// backup.
//
// # Storage
//
// The server's state goes through a small key-value interface (kvStore and
// its transactions, kvTx, in kv.go), with two implementations: the embedded
// buntdb file above, the default, and an etcd cluster (Config.Etcd,
// etcdstore.go), which several servers with different tags share. On etcd
// an update is an optimistic transaction committed with one etcd Txn whose
// compares require every key it read to be unchanged, so no two servers hand
// out the same number; requests that arrive together share one Txn, as they
// share one fsync on buntdb. Each server holds its tag under an etcd lease
// (etcdnodes.go). On etcd a database's change sequence is etcd's revision
// (etcdchanges.go): a document's sequence is its key's mod revision, so a
// push writes no counter; each server follows one etcd watch of every
// document write, whose recent keys (the change log, etcdfeed.go) answer
// pulls from recent checkpoints and prove a push's prevSeq, and each live
// feed follows an etcd watch of its own. Tombstones go once etcd's history
// is compacted past them (tombstones.go).
//
// # Ops
//
// Requests are routed on their op through a registry: a file adds an op by
// calling registerOp from its init function with an opHandler, which gets
// the connection (its database and node tag after hello), the request id and
// the raw frame, and returns the reply or an error. Handlers that take
// batches check their size with Server.checkBatch; state that must end with
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
