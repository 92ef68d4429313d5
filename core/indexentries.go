package core

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hilodb/hilodb/core/query"
)

// ixUndo is a change of an index's entries, put back if the transaction
// that made it fails.
type ixUndo struct {
	ix  *secIndex
	e   query.Entry
	set bool // the entry was set (else deleted)
}

// docChanged keeps the indexes and the live queries up to date with a
// write of the document key (docPrefix and its id): old is what it held
// (had: there was something), doc what it holds now (has).
func (t *txn) docChanged(key, old string, had bool, doc string, has bool) error {
	if t.ixs != nil {
		id := key[len(docPrefix):]
		for _, ix := range t.ixs.all {
			if !strings.HasPrefix(key, ix.docPfx) || !ix.built.Load() {
				continue
			}
			var ok []byte
			if had {
				ok = ix.tree.AppendKey(t.ixBuf[:0], old, id)
				t.ixBuf = ok
			}
			var nk string
			if has {
				nk = string(ix.tree.AppendKey(make([]byte, 0, 32+len(id)), doc, id))
				if had && string(ok) == nk {
					if old == doc {
						continue
					}
					// The same key, another document: the entry keeps the new one.
					e := query.Entry{Key: nk, ID: nk[len(nk)-len(id):], Doc: doc}
					if prev, replaced := ix.tree.Set(e); replaced {
						t.ixUndo = append(t.ixUndo, ixUndo{ix: ix, e: prev})
					}
					t.ixUndo = append(t.ixUndo, ixUndo{ix: ix, e: e, set: true})
					continue
				}
			}
			if had {
				if e, found := ix.tree.Delete(string(ok)); found {
					t.ixUndo = append(t.ixUndo, ixUndo{ix: ix, e: e})
				}
			}
			if has {
				e := query.Entry{Key: nk, ID: nk[len(nk)-len(id):], Doc: doc}
				if prev, replaced := ix.tree.Set(e); replaced {
					t.ixUndo = append(t.ixUndo, ixUndo{ix: ix, e: prev})
				}
				t.ixUndo = append(t.ixUndo, ixUndo{ix: ix, e: e, set: true})
			}
		}
	}
	if t.live {
		t.touched = append(t.touched, key[len(docPrefix):])
	}
	return nil
}

// undoIndexes puts back the index entries a failed transaction changed.
func (t *txn) undoIndexes() {
	for i := len(t.ixUndo) - 1; i >= 0; i-- {
		u := t.ixUndo[i]
		if u.set {
			u.ix.tree.Delete(u.e.Key)
		} else {
			u.ix.tree.Set(u.e)
		}
	}
	t.ixUndo = nil
}

// resolveIndexes makes the transaction's index entries follow its changes
// of definitions: a new index is built from the collection's documents, a
// dropped one's entries are removed. With rebuild, every index is built
// anew (after a load, whose entries were never kept). It returns the
// definitions the store has once the transaction commits.
func (s *Store) resolveIndexes(t *txn, rebuild bool) (*indexSet, error) {
	defs, err := readAllIndexDefs(t)
	if err != nil {
		return nil, err
	}
	// After a load its documents have no entries: each index is built
	// when a query first needs it (ensureBuilt), so a reopen reads only
	// the documents.
	old := t.ixs
	if rebuild && !t.restored {
		old = nil // but for what a load restored (restoreIndexes)
	}
	for i, ix := range defs {
		if o := old.named(ix.coll, ix.def.Name); o != nil && slices.Equal(o.def.Fields, ix.def.Fields) {
			defs[i] = o // the same index, built or not
			continue
		}
		ix.docPfx = docPrefix + s.Prefix(ix.coll) + s.sep
		if !rebuild {
			ix.tree = buildIndex(t, ix)
			ix.built.Store(true)
		}
	}
	if len(defs) == 0 {
		return nil, nil
	}
	return &indexSet{all: defs}, nil
}

// ensureBuilt builds ix's entries if they are not yet (after a load): under
// the write lock, so no write of the collection runs beside.
func (s *Store) ensureBuilt(ix *secIndex) error {
	if ix.built.Load() {
		return nil
	}
	err := s.update(func(t *txn) error {
		if ix.built.Load() || s.ixs.Load().named(ix.coll, ix.def.Name) != ix {
			return nil // built by another, or dropped
		}
		ix.tree = buildIndex(t, ix)
		ix.built.Store(true) // under the write lock: writes keep it from now on
		return nil
	})
	if err != nil {
		return fmt.Errorf("build index %q: %w", ix.def.Name, err)
	}
	return nil
}

// buildIndex returns ix's entries for every document of its collection.
func buildIndex(t *txn, ix *secIndex) *query.Index {
	tree := query.NewDocIndex(ix.fields)
	b := tree.Builder()
	_ = t.AscendRange("", ix.docPfx, ix.docPfx+"\xff", func(k, v string) bool {
		b.Add(v, k[len(docPrefix):])
		return true
	})
	b.Finish()
	return tree
}

// beginIndexes readies a write transaction to keep the indexes and the
// live queries.
func (s *Store) beginIndexes(t *txn) {
	t.ixs = s.ixs.Load()
	t.live = s.live.active()
}

// keyChanged follows a write of key: prev was its value (had: it had one),
// value is its value now (has: it has one).
func (t *txn) keyChanged(key, prev string, had bool, value string, has bool) error {
	switch {
	case strings.HasPrefix(key, docPrefix):
		if t.noIndexes {
			return nil // a load: built at its end
		}
		return t.docChanged(key, prev, had, value, has)
	case strings.HasPrefix(key, ixdefPrefix):
		t.ixDefs = true
	}
	return nil
}

// endIndexes brings the indexes up to date with the transaction's changes
// of definitions (all of them with rebuild, after a load) and makes them
// the store's. It runs last in a write transaction, under buntdb's write
// lock: a reader sees definitions and entries of the same commit.
func (s *Store) endIndexes(t *txn, rebuild bool) error {
	if !rebuild && !t.ixDefs {
		return nil
	}
	if rebuild && !t.restored {
		t.ixs = s.ixs.Load()
	}
	set, err := s.resolveIndexes(t, rebuild)
	if err != nil {
		return err
	}
	t.ixs = set
	s.ixs.Store(set)
	return nil
}
