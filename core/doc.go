// Package core holds hilodb's documents: key, id and collection-name rules,
// every id strategy (HiLo, UUID, semantic, node-sequence ids ending in the
// separator, identities ending in "|", keyOptions generators), ArangoDB's
// document operations (insert, replace, update, remove, read; single and
// multi-document, with _rev preconditions, overwriteMode, keepNull,
// mergeObjects, returnNew, returnOld and silent), error numbers, and the
// document store over buntdb. Beside it, in packages of their own:
// revisions, a hybrid logical clock plus the node tag (core/revision);
// UUIDs (core/uuid); ArangoDB's key generators (core/keygen); RavenDB's
// conventions (core/naming); and RavenDB's unit of work, a session built on
// the store (core/session), whose one write is SaveBatch.
//
// The names follow the RavenDB Node.js client where there is one (the
// conventions in core/naming, the session in core/session) and ArangoDB's
// document API otherwise (Insert, Replace, Update, Remove, Document,
// WriteOptions, and keygen.Options for keyOptions). docs/ids.md explains
// the strategies and where hilodb differs from both.
//
// Servers are reached only through small interfaces: IDSource and
// NumberSource (HiLo, implemented by *idgen.Generator) and IdentitySource
// (identities, implemented by the sync client). Without them the strategies
// that need them fail with ErrNeedsServer; nothing else does.
//
// # Wasm
//
// core uses neither os, net nor syscall/js, and builds and passes its tests
// on the host and under GOOS=js GOARCH=wasm.
//
// # Concurrency
//
// Store and Conventions (once set up) are safe for concurrent use;
// each single or multi-document write is one buntdb transaction.
package core
