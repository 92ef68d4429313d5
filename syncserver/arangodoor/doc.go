// Package arangodoor is the sync server's ArangoDB door: the subset of
// ArangoDB's HTTP API that arangojs needs (documents, collections,
// indexes, AQL cursors, import, databases; docs/http.md lists it), under
// /_db/{db}/_api/… and /_api/… for the default database, answered with
// ArangoDB's statuses, error numbers and headers. It owns ArangoDB's
// shapes and semantics (key generators, overwrite modes, preconditions,
// keepNull and mergeObjects, collection properties) and its open cursors.
//
// The door holds no state of its own on disk: it works over a narrow
// interface of the server (documents, ids, collections, databases) and
// every route passes the server's one guard (syncserver.Server.Guard:
// Host and Origin rules, tokens and roles, limits, metrics), so it is
// guarded exactly as the websocket and the RavenDB door are. The server
// does not know the door: whoever builds the server adds it with
// Config.Doors (Register).
//
// ArangoDB's _system database is hilodb's database "default" (a hilodb
// database name starts with a letter).
package arangodoor
