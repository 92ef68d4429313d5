// Package rql reads the subset of RavenDB's query language (RQL) that a
// RavenDB session sends for dynamic (collection) queries, and compiles it
// to hilodb's one query engine (package query): the where clause becomes a
// Mango selector, order by a sort, limit and offset a page.
//
// Served: from <Collection> (quoted or not, with an alias) and from
// @all_docs; where with =, ==, !=, <>, <, <=, >, >=, between, in, all in,
// startsWith(), endsWith(), exists(), regex(), exact(), true, and, or, not
// and parentheses, on fields (dotted paths, [] for array elements) and
// id(); order by fields, asc or desc, as long, as double, as string or as
// alphaNumeric; select of fields with aliases; include of paths; limit
// (count, or offset and count) and offset; parameters ($p0) and literals.
// String comparisons with = (and in, startsWith, endsWith, regex) ignore case, as
// RavenDB's automatic indexes do; exact() makes them exact. A condition on
// a field holding an array holds when it holds for an element, as
// RavenDB's indexes index each element.
//
// Not served, each refused with a message that says so: static indexes
// (from index), declare function, group by, load, filter, update,
// JavaScript projections, distinct, search(), lucene() and the other
// full-text, spatial and facet functions, counters, time series,
// revisions and compare-exchange includes, and order by score() or
// random().
//
// # Wasm
//
// The package is pure Go over package query and passes its tests under
// GOOS=js GOARCH=wasm.
//
// # Concurrency
//
// A parsed Query is immutable and safe for concurrent use.
package rql
