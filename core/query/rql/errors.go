package rql

import (
	"fmt"

	"github.com/hilodb/hilodb/core/query"
)

// Error is a query that cannot run: malformed, or asking for what is not
// served (NotServed). It wraps query.ErrBadQuery.
type Error struct {
	Pos       int    // the byte offset in the query's text
	Msg       string // what is wrong
	NotServed bool   // the query is valid RQL that hilodb does not serve
}

func (e *Error) Error() string {
	return fmt.Sprintf("RQL at offset %d: %s", e.Pos, e.Msg)
}

// Unwrap makes every Error a query.ErrBadQuery.
func (e *Error) Unwrap() error { return query.ErrBadQuery }

func errorAt(pos int, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func notServed(pos int, what string) *Error {
	return &Error{Pos: pos, Msg: what + " is not served by hilodb (dynamic collection queries are; see docs/http.md)", NotServed: true}
}
