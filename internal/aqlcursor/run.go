package aqlcursor

import (
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

// Run runs plan over src. fullCount asks for the matches before the LIMIT.
func Run(src Source, plan *aql.Plan, fullCount bool) (Result, error) {
	switch plan.Kind {
	case aql.Value:
		return Result{Rows: [][]byte{plan.Value}}, nil
	case aql.ForValues:
		rows, full, err := plan.Run()
		return Result{Rows: rows, FullCount: full, Scanned: len(plan.Values)}, err
	case aql.Length:
		if err := exists(src, plan.Collection); err != nil {
			return Result{}, err
		}
		n, err := src.Count(plan.Collection, nil)
		return Result{Rows: [][]byte{fmt.Appendf(nil, "%d", n)}, Scanned: n}, err
	case aql.Document:
		docs, err := src.Get(plan.DocIDs)
		if err != nil {
			return Result{}, err
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
	for i, d := range docs {
		rows[i] = plan.Project(d)
	}
	return Result{Rows: rows, FullCount: matches, Scanned: max(matches, len(docs))}, nil
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
