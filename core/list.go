package core

import (
	"fmt"
	"strings"
)

// MaxListLimit bounds one page of List.
const MaxListLimit = 10000

// Page is one page of a collection's documents, in key order. Next is the
// cursor for the page after it (the last _id of this one), empty when there
// are no more documents.
type Page struct {
	Docs [][]byte
	Next string
}

// List returns up to limit documents of collection (those whose _id is the
// collection's prefix, the separator and a key) in key order, starting after
// the _id after ("" for the first page). limit is 1 to MaxListLimit; 0 means
// 100.
func (s *Store) List(collection, after string, limit int) (Page, error) {
	if err := validateCollection(collection); err != nil {
		return Page{}, err
	}
	switch {
	case limit == 0:
		limit = 100
	case limit < 0 || limit > MaxListLimit:
		return Page{}, newError(ErrBadParameter, "", "", "list: limit must be 1 to %d", MaxListLimit)
	}
	start := docPrefix + s.Prefix(collection) + s.sep
	if after != "" && !strings.HasPrefix(docPrefix+after, start) {
		return Page{}, newError(ErrBadParameter, after, "", "list: cursor %q is not an id of collection %q", after, collection)
	}
	pivot := start
	if after != "" {
		pivot = docPrefix + after + "\x00" // just past it
	}
	end := start + "\xff" // past every UTF-8 key
	var page Page
	more := false
	err := s.view(func(tx *txn) error {
		return tx.AscendRange("", pivot, end, func(key, value string) bool {
			if len(page.Docs) == limit {
				more = true
				return false
			}
			page.Docs = append(page.Docs, []byte(value))
			page.Next = key[len(docPrefix):]
			return true
		})
	})
	if err != nil {
		return Page{}, fmt.Errorf("list documents: %w", err)
	}
	if !more {
		page.Next = ""
	}
	return page, nil
}

// Count returns how many documents collection holds (those List pages
// through).
func (s *Store) Count(collection string) (int, error) {
	if err := validateCollection(collection); err != nil {
		return 0, err
	}
	start := docPrefix + s.Prefix(collection) + s.sep
	n := 0
	err := s.view(func(tx *txn) error {
		return tx.AscendRange("", start, start+"\xff", func(string, string) bool {
			n++
			return true
		})
	})
	if err != nil {
		return 0, fmt.Errorf("count documents: %w", err)
	}
	return n, nil
}
