package core

import "fmt"

// EachDocument calls fn with the id and JSON text of every document whose
// id sorts after after ("" for all), in id order, inside one read
// transaction, until fn returns false. No write commits while it runs, so
// fn sees one state of the store; fn must not call the store. The text is
// the store's own, not a copy. It is how a cache of documents (the browser
// build's mirror) catches up with a store loaded from its snapshot and log,
// a part at a time.
func (s *Store) EachDocument(after string, fn func(id, text string) bool) error {
	pivot := docPrefix
	if after != "" {
		pivot = docPrefix + after + "\x00" // just past it
	}
	err := s.view(func(tx *txn) error {
		return tx.AscendRange("", pivot, docPrefix+"\xff", func(key, value string) bool {
			return fn(key[len(docPrefix):], value)
		})
	})
	if err != nil {
		return fmt.Errorf("read documents: %w", err)
	}
	return nil
}

// ForEach calls fn with every document, in id order, until fn returns an
// error.
func (s *Store) ForEach(fn func(id string, doc []byte) error) error {
	var ferr error
	err := s.view(func(tx *txn) error {
		return ascendPrefix(tx, docPrefix, func(k, v string) bool {
			ferr = fn(k[len(docPrefix):], []byte(v))
			return ferr == nil
		})
	})
	if ferr != nil {
		return ferr
	}
	return err
}
