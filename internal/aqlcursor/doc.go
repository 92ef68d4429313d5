// Package aqlcursor answers ArangoDB's /_api/cursor for every hilodb door
// that speaks it (the sync server, the edge replica): it reads the
// request, runs a parsed AQL plan (package core/query/aql) over a Source
// (a store's documents), and keeps the results not yet fetched in a Table
// of cursors, bounded in number, bytes and lifetime.
//
// # Concurrency
//
// A Table is safe for concurrent use.
//
// # Wasm
//
// The package uses neither os, net nor syscall/js: the edge replica runs
// it under GOOS=js GOARCH=wasm.
package aqlcursor
