// Package database makes a hilodb document store durable on any storage:
// a file on the host, IndexedDB or a file through Node in the browser build,
// a Durable Object's storage at the edge. It builds for the host and for
// GOOS=js alike.
//
// A store's writes go to a Journal (core.Journal): each write transaction
// becomes one frame appended to a log, and concurrent writes share one
// append (group commit). A write returns only once its frame is durable, so
// what a store acknowledged survives a killed process, tab or browser. The
// log is compacted in the background into a snapshot; a write costs what it
// changes, never what the store holds.
//
// A Storage is what the journal needs from the place it keeps bytes: load
// the snapshot and the log, append to the log, replace both with a new
// snapshot. Dir is the host's Storage.
package database
