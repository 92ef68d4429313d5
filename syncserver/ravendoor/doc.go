// Package ravendoor is the sync server's RavenDB door: the subset of
// RavenDB's HTTP API that its clients need for sessions and ids (topology
// with this server as the one node, HiLo next and return, identities,
// batches, documents, dynamic collection queries in RQL, lazy operations;
// docs/http.md lists it), answered in RavenDB's shapes and error bodies.
// It owns RavenDB's conventions: change vectors, the Raven/Hilo documents
// over the server's HiLo state, server-made ids ("orders/", "orders|"),
// @metadata, and the answers that say a feature is not served.
//
// The door holds no state of its own: it works over a narrow interface of
// the server (documents, ids) and every route passes the server's one
// guard (syncserver.Server.Guard: Host and Origin rules, tokens and roles,
// limits, metrics), so it is guarded exactly as the websocket and the
// ArangoDB door are. Numbers come from the same counters as the websocket
// ops, so the doors never hand out one twice. The server does not know the
// door: whoever builds the server adds it with Config.Doors (Register).
package ravendoor
