package core

import (
	"slices"
	"strings"

	"github.com/tidwall/buntdb"

	"github.com/hilodb/hilodb/core/loaded"
	"github.com/hilodb/hilodb/core/query"
)

// Saved indexes. A snapshot may keep the entries of the indexes built when
// it was written, so that a reopen need not build them again from the
// documents: ItemsAndIndexes hands them out after the items, in the same
// read transaction, and LoadSaved takes them back between a snapshot's
// items and the changes after it. Saved entries are used only when the
// same key encoding made them (query.KeyFormat), for a definition the
// loaded items hold unchanged, in a load into an empty store, and when
// they are in strict key order; otherwise that index is built when a query
// first needs it, as without them.

// SavedIndex is one built index's entries, as a snapshot keeps them.
type SavedIndex struct {
	Collection string
	Def        IndexDef
	// KeyFormat is the key encoding that made the entries (query.KeyFormat).
	KeyFormat int
	// Len is how many entries there are.
	Len int
	// Each calls add with every entry, in key order, until add returns
	// false; it reports whether it handed out every entry: how
	// ItemsAndIndexes hands the entries to a snapshot's writer.
	Each func(add func(SavedEntry) bool) bool
	// Spans returns the entries at once, in key order, as a load takes them
	// (LoadSaved): each span's key is a slice of keys, and its Doc is the
	// number of the item that holds its document, from 0 in the order the
	// load was handed the items (-1: not known). ok is false when the
	// entries are not whole. The load keeps keys and the spans, and changes
	// neither: both may be the snapshot's own bytes. An index handed to a
	// load without Spans is built when a query first needs it.
	Spans func() (keys string, spans []query.Span, ok bool)
}

// SavedEntry is one entry of a saved index.
type SavedEntry struct {
	// Key is the entry's key (the values' keys, then the document's id),
	// IDLen the length of the id it ends with.
	Key   string
	IDLen int
	// Item numbers the snapshot's item that holds the entry's document,
	// from 0 in the order ItemsAndIndexes hands the items out; -1 when not
	// known.
	Item int
}

// ItemsAndIndexes calls fn as Items does, then index with the entries of
// every index that is built, in the same read transaction: what index is
// given matches the items exactly, and each entry names the item of its
// document (SavedEntry.Item). A key handed to index is valid only during
// the call. at is told whether index will be called at all.
func (s *Store) ItemsAndIndexes(at func(indexed bool), fn func(key, value string) error, index func(SavedIndex) error) error {
	return s.db.View(func(tx *buntdb.Tx) error {
		// The item of each document, by id, when an index will need it.
		var items map[string]int
		if set := s.ixs.Load(); index != nil && set != nil {
			for _, ix := range set.all {
				if ix.built.Load() {
					items = map[string]int{}
					break
				}
			}
		}
		if at != nil {
			at(items != nil)
		}
		var ferr error
		n := 0
		err := ascendAll(&txn{bt: tx, loaded: &s.loaded, marks: s.marks}, func(key, value string) bool {
			if items != nil && strings.HasPrefix(key, docPrefix) {
				items[key[len(docPrefix):]] = n
			}
			n++
			ferr = fn(key, value)
			return ferr == nil
		})
		if ferr != nil {
			return ferr
		}
		if err != nil || index == nil {
			return err
		}
		// Under the read lock: no write changes a tree or builds one
		// meanwhile.
		set := s.ixs.Load()
		if set == nil {
			return nil
		}
		for _, ix := range set.all {
			if !ix.built.Load() {
				continue
			}
			tree := ix.tree
			err := index(SavedIndex{
				Collection: ix.coll,
				Def:        ix.def,
				KeyFormat:  query.KeyFormat,
				Len:        tree.Len(),
				Each: func(add func(SavedEntry) bool) bool {
					all := true
					tree.Each(func(e query.Entry) bool {
						item, ok := items[e.ID]
						if !ok {
							item = -1
						}
						all = add(SavedEntry{Key: e.Key, IDLen: len(e.ID), Item: item})
						return all
					})
					return all
				},
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// restoreIndexes compiles the definitions the transaction holds and gives
// each the saved entries made for it, where they can be used: the index
// set a load keeps up to date with the changes after its snapshot. order
// says which loaded item each of the snapshot's items became: an entry
// keeps its document when the item it names is that document's, which
// the index checks when it reads the entry (query.Index.RestoreSpans).
func (s *Store) restoreIndexes(t *txn, saved []SavedIndex, order *loaded.Order) (*indexSet, error) {
	defs, err := readAllIndexDefs(t)
	if err != nil || len(defs) == 0 {
		return nil, err
	}
	l := t.loaded
	for _, ix := range defs {
		ix.docPfx = docPrefix + s.Prefix(ix.coll) + s.sep
		for _, sv := range saved {
			if sv.Collection != ix.coll || sv.Def.Name != ix.def.Name || !slices.Equal(sv.Def.Fields, ix.def.Fields) ||
				sv.KeyFormat != query.KeyFormat || sv.Spans == nil {
				continue
			}
			keys, spans, ok := sv.Spans()
			if !ok {
				break
			}
			if !order.Same() { // else each change is the loaded item of its number
				spans = slices.Clone(spans) // not the snapshot's own
				for i := range spans {
					spans[i].Doc = order.Item(spans[i].Doc) // -1: past the items, or not loaded in place
				}
			}
			tree := query.NewDocIndex(ix.fields)
			if tree.RestoreSpans(keys, spans, l.Docs(), docPrefix) {
				ix.tree = tree
				ix.built.Store(true)
			}
			break
		}
	}
	return &indexSet{all: defs}, nil
}
