// Package syncserver is the hilodb sync server: the one authority that hands
// out HiLo ranges, identities and node tags, over the websocket protocol of
// docs/protocol.md.
//
// # Durability
//
// Every reply that hands out numbers is sent only after the new state is on
// disk. Concurrent requests share one buntdb transaction and one fsync (group
// commit), so many clients do not wait for as many fsyncs in a row.
//
// # Concurrency
//
// A Server is safe for concurrent use; each connection's requests are handled
// in order of arrival.
package syncserver
