// Package session is RavenDB's unit of work over a hilodb document store,
// shaped like the RavenDB Node.js client's session: Store, Load, LoadAny,
// Delete, GetDocumentID and SaveChanges, with entities that are pointers to
// structs or object literals (map[string]any), mapped to documents by the
// store's naming.Conventions.
//
//	ss := session.Open(store, session.Options{})
//	ss.Store(ctx, &Order{Total: 12}) // a HiLo id now: orders/1-A
//	err := ss.SaveChanges(ctx)       // one transaction, all or nothing
//
// HiLo, numeric, UUID and custom ids are assigned when an entity is
// stored; ids that are empty (a UUID), end in the separator (this node's
// sequence) or end in "|" (an identity from the sync server) are resolved
// by SaveChanges, which writes every new, changed and deleted entity with
// one Store.SaveBatch: if an identity cannot be had (offline) or any write
// fails, nothing is saved and the session can try again. docs/ids.md
// describes the id strategies and the conventions.
//
// A session needs of the store only the small Store interface, which
// *core.Store implements; errors are *core.Error values, tested with
// errors.Is against core's sentinels.
//
// # Concurrency
//
// A Session is not safe for concurrent use: open one per unit of work (the
// store under it is safe for concurrent use).
//
// # Wasm
//
// The package uses neither os, net nor syscall/js and passes its tests on
// the host and under GOOS=js GOARCH=wasm.
package session
