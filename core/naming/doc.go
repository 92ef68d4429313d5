// Package naming holds RavenDB's conventions for naming what a store
// keeps: Conventions (the collection of an entity type, English plurals by
// default; a collection's id prefix; the identity parts separator; the
// identity property, the type name kept in @metadata, and the id
// generators of entities), with Pluralize and IDPrefix, their defaults.
// The names follow the RavenDB Node.js client's conventions; docs/ids.md
// lists them.
//
// A store (core.Options.Conventions) uses the separator and the id
// prefixes; a session (core/session) uses all of them to map structs and
// object literals to documents.
//
// # Concurrency
//
// Set a Conventions' fields before the store is used: they are read
// without locks. RegisterIDConvention, RegisterType and their readers lock,
// and are safe for concurrent use.
package naming
