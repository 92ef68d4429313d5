// Package aql reads the subset of ArangoDB's query language (AQL) that
// document queries use, and compiles it to hilodb's query engine: a
// *query.Query (selector, sort, skip, limit) that any store runs, and a
// projection for the RETURN expression. The sync server's ArangoDB door
// and the edge replica both run what Parse returns, so a query answers the
// same from either.
//
// The subset:
//
//	FOR x IN coll | @@coll | a..b | [array] | @array
//	  FILTER cond        (==, !=, <, <=, >, >=, IN, NOT IN, LIKE,
//	                      AND/&&, OR/||, NOT/!, parentheses, x.a.b paths)
//	  SORT x.a [ASC|DESC], …
//	  LIMIT [offset,] count
//	  [COLLECT WITH COUNT INTO n]
//	  RETURN x | x.a | {k: x.a, …} | [x.a, …] | a literal
//	RETURN LENGTH(coll) | DOCUMENT("coll/key") | DOCUMENT(coll, key) |
//	       DOCUMENT(["c/a", …]) | a literal
//
// with bind parameters (@v for values, @@c for collections). FILTERs come
// before SORT and LIMIT. Anything else fails at once with a *SyntaxError
// that names the position, as ArangoDB's parse error (1501) does.
//
// Comparisons follow hilodb's collation (package query): a range
// comparison holds within one type (x.a < 5 is false for a string or a
// missing a, where AQL would order null below numbers); == null matches a
// missing attribute as in AQL.
//
// # Wasm
//
// The package uses neither os, net nor syscall/js, and passes its tests on
// the host and under GOOS=js GOARCH=wasm.
//
// # Concurrency
//
// A parsed Plan is immutable and safe for concurrent use.
package aql
