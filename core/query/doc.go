// Package query is hilodb's query language, shared by every front end: the
// npm package's Mango selectors (find, count, watchQuery), RavenDB's session
// queries and, over the HTTP doors, RQL and AQL all compile to one *Query
// that this package evaluates against a document's JSON.
//
// It holds the collation (one total order across JSON types, used by
// comparisons, sorting and index keys alike), the selector language and its
// parser, sorting, paging bookmarks and projection. It knows nothing of
// stores or indexes: package core plans a Query over its indexes and calls
// Match, SortKey and Project here.
//
// # Collation
//
// Values order by type first, then within the type:
//
//	missing < null < false < true < numbers < strings < arrays < objects
//
// Numbers compare by their float64 value; strings by their UTF-8 bytes
// (code point order, not a locale's); arrays element by element, a shorter
// prefix first; objects member by member in their written order, key first,
// then value, fewer members first. A missing field (the document has no
// value at the path) sorts before null. AppendKey writes a value as bytes
// whose byte order is this order, so an index is a sorted range of keys.
//
// # Wasm
//
// The package uses neither os, net nor syscall/js, and passes its tests on
// the host and under GOOS=js GOARCH=wasm.
//
// # Concurrency
//
// A parsed Query or Selector is immutable and safe for concurrent use.
package query
