package aqlcursor

import (
	"errors"
	"fmt"

	"github.com/hilodb/hilodb/core/query"
	"github.com/hilodb/hilodb/core/query/aql"
)

// Source is a store's documents as a door reads them for a query.
// Documents are given as the door's clients see them.
type Source interface {
	// Exists reports whether the collection coll exists.
	Exists(coll string) (bool, error)
	// Find runs q over coll's documents: the page in q's order, and,
	// with total, the number of every match.
	Find(coll string, q *query.Query, total bool) (docs [][]byte, matches int, err error)
	// Count returns the number of coll's documents sel matches (all,
	// when sel is nil).
	Count(coll string, sel *query.Selector) (int, error)
	// Get returns the documents ids names, nil for each one missing.
	Get(ids []string) ([][]byte, error)
}

// CollectionNotFoundError is a query over a collection that does not
// exist (ArangoDB's 1203).
type CollectionNotFoundError struct{ Name string }

func (e *CollectionNotFoundError) Error() string {
	return "collection or view not found: " + e.Name
}

// Result is a query's answer: every result row, and its statistics.
type Result struct {
	Rows      [][]byte
	FullCount int // the matches before the LIMIT, when asked for
	Scanned   int // documents read
}

// ErrTooBig is a query whose results would pass the door's reply bound
// (the door answers reply_too_big).
var ErrTooBig = errors.New("query results too big")

// Run runs plan over src. fullCount asks for the matches before the LIMIT.
// The results may take at most maxBytes together, measured as they are
// made (a RETURN can repeat a document many times): past it, Run fails
// with ErrTooBig. A DOCUMENT() that names an id twice fails with
// ErrBadRequest, as the doors' other reads of many documents do.
func Run(src Source, plan *aql.Plan, fullCount bool, maxBytes int) (Result, error) {
	switch plan.Kind {
	case aql.Value:
		return Result{Rows: [][]byte{plan.Value}}, nil
	case aql.ForValues:
		rows, full, err := plan.RunWithin(maxBytes)
		if errors.Is(err, query.ErrTooBig) {
			return Result{}, tooBig(maxBytes)
		}
		return Result{Rows: rows, FullCount: full, Scanned: len(plan.Values)}, err
	case aql.Length:
		if err := exists(src, plan.Collection); err != nil {
			return Result{}, err
		}
		n, err := src.Count(plan.Collection, nil)
		return Result{Rows: [][]byte{fmt.Appendf(nil, "%d", n)}, Scanned: n}, err
	case aql.Document:
		seen := make(map[string]bool, len(plan.DocIDs))
		for _, id := range plan.DocIDs {
			if seen[id] {
				return Result{}, badRequest("DOCUMENT() names %q more than once; ask for each document once", truncate(id, 100))
			}
			seen[id] = true
		}
		docs, err := src.Get(plan.DocIDs)
		if err != nil {
			return Result{}, err
		}
		size := 0
		for _, d := range docs {
			size += len(d) + 1
		}
		if size > maxBytes && len(docs) > 1 {
			return Result{}, tooBig(maxBytes)
		}
		if !plan.DocArray {
			if docs[0] == nil {
				return Result{Rows: [][]byte{[]byte("null")}}, nil
			}
			return Result{Rows: [][]byte{docs[0]}, Scanned: 1}, nil
		}
		row := []byte{'['}
		n := 0
		for _, d := range docs {
			if d == nil {
				continue // ArangoDB leaves out what it does not find
			}
			if n > 0 {
				row = append(row, ',')
			}
			row = append(row, d...)
			n++
		}
		return Result{Rows: [][]byte{append(row, ']')}, Scanned: n}, nil
	}
	if err := exists(src, plan.Collection); err != nil {
		return Result{}, err
	}
	if plan.Count {
		n, err := src.Count(plan.Collection, plan.Query.Selector)
		if err != nil {
			return Result{}, err
		}
		return Result{Rows: [][]byte{plan.CountResult(n)}, FullCount: n}, nil
	}
	docs, matches, err := src.Find(plan.Collection, plan.Query, fullCount)
	if err != nil {
		return Result{}, err
	}
	rows := make([][]byte, len(docs))
	room := maxBytes
	for i, d := range docs {
		if i == 0 {
			room = max(room, len(d)+256) // one document may pass the bound alone, as in the doors' other reads
		}
		row, ok := plan.ProjectWithin(d, room)
		if !ok {
			return Result{}, tooBig(maxBytes)
		}
		rows[i] = row
		room -= len(row) + 1
	}
	return Result{Rows: rows, FullCount: matches, Scanned: max(matches, len(docs))}, nil
}

func tooBig(maxBytes int) error {
	return fmt.Errorf("%w: the query's results pass the reply bound of %d bytes; ask for fewer, or return less of each", ErrTooBig, maxBytes)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func exists(src Source, coll string) error {
	ok, err := src.Exists(coll)
	if err != nil {
		return err
	}
	if !ok {
		return &CollectionNotFoundError{Name: coll}
	}
	return nil
}
