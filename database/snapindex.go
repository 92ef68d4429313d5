package database

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/hilodb/hilodb/core"
)

// savedIndexMeta is a saved index's definition in a format 4 or 5 snapshot.
type savedIndexMeta struct {
	Collection string   `json:"collection"`
	Name       string   `json:"name"`
	Fields     []string `json:"fields"`
	KeyFormat  int      `json:"keyFormat"`
}

// indexWriter appends the entries of a store's built indexes to a
// snapshot, after its items (the format 5 section).
type indexWriter struct {
	list    []byte // the indexes, each whole
	n       int    // how many
	entries []byte // one index's entries, reused
}

// add appends one index.
func (w *indexWriter) add(ix core.SavedIndex) error {
	meta, err := json.Marshal(savedIndexMeta{Collection: ix.Collection, Name: ix.Def.Name, Fields: ix.Def.Fields, KeyFormat: ix.KeyFormat})
	if err != nil {
		return fmt.Errorf("save index %q: %w", ix.Def.Name, err)
	}
	w.entries = w.entries[:0]
	count := 0
	ix.Each(func(e core.SavedEntry) bool {
		w.entries = binary.AppendUvarint(w.entries, uint64(len(e.Key)))
		w.entries = append(w.entries, e.Key...)
		w.entries = binary.AppendUvarint(w.entries, uint64(e.IDLen))
		w.entries = binary.AppendUvarint(w.entries, uint64(e.Item+1)) // 0: not known
		count++
		return true
	})
	w.list = binary.AppendUvarint(w.list, uint64(len(meta)))
	w.list = append(w.list, meta...)
	w.list = binary.AppendUvarint(w.list, uint64(count))
	w.list = binary.AppendUvarint(w.list, uint64(len(w.entries)))
	w.list = append(w.list, w.entries...)
	w.n++
	return nil
}

// appendTo appends the section to snap.
func (w *indexWriter) appendTo(snap []byte) []byte {
	snap = binary.AppendUvarint(snap, uint64(w.n))
	return append(snap, w.list...)
}

// storedItem is one item of a snapshot, as read.
type storedItem struct{ key, value string }

// readIndexes reads the section of a snapshot of format (4 or 5) that b
// holds exactly; items are the snapshot's items, in order, for format 5's
// entries to name. The entries are read when the store takes them
// (SavedIndex.Each, which reports false for entries that are not whole),
// each key a slice of b's bytes read in place (handedOver).
func readIndexes(b []byte, format int, items []storedItem) ([]core.SavedIndex, error) {
	text := handedOver(b)
	p := 0
	next := func(what string) (int, error) {
		n, k := binary.Uvarint(b[p:])
		if k <= 0 || n > uint64(len(b)) {
			return 0, fmt.Errorf("snapshot: %w: saved indexes: %s at byte %d", errSnapshot, what, p)
		}
		p += k
		return int(n), nil
	}
	n, err := next("count")
	if err != nil {
		return nil, err
	}
	var out []core.SavedIndex
	for i := range n {
		mlen, err := next("definition length")
		if err != nil {
			return nil, err
		}
		if mlen > len(text)-p {
			return nil, fmt.Errorf("snapshot: %w: saved index %d of %d cut short", errSnapshot, i+1, n)
		}
		var meta savedIndexMeta
		if err := json.Unmarshal([]byte(text[p:p+mlen]), &meta); err != nil {
			return nil, fmt.Errorf("snapshot: %w: saved index %d of %d: %v", errSnapshot, i+1, n, err)
		}
		p += mlen
		count, err := next("entry count")
		if err != nil {
			return nil, err
		}
		size, err := next("entries' length")
		if err != nil {
			return nil, err
		}
		if size > len(text)-p {
			return nil, fmt.Errorf("snapshot: %w: saved index %d of %d cut short", errSnapshot, i+1, n)
		}
		if count > size/3 { // an entry takes 3 bytes at least
			return nil, fmt.Errorf("snapshot: %w: saved index %d of %d: %d entries in %d bytes", errSnapshot, i+1, n, count, size)
		}
		entries := b[p : p+size]
		p += size
		out = append(out, core.SavedIndex{
			Collection: meta.Collection,
			Def:        core.IndexDef{Name: meta.Name, Fields: meta.Fields},
			KeyFormat:  meta.KeyFormat,
			Len:        count,
			Each:       func(add func(core.SavedEntry) bool) bool { return eachEntry(entries, format, items, add) },
		})
	}
	if p != len(text) {
		return nil, fmt.Errorf("snapshot: %w: %d bytes after its saved indexes", errSnapshot, len(text)-p)
	}
	return out, nil
}

// eachEntry hands add each entry encoded in b (a snapshot of format 4 or
// 5, whose items are items), and reports whether b held whole entries only
// and add took them all. An item number past the items is taken as not
// known.
func eachEntry(b []byte, format int, items []storedItem, add func(core.SavedEntry) bool) bool {
	s := handedOver(b)
	for p := 0; p < len(b); {
		n, k := binary.Uvarint(b[p:])
		if k <= 0 || n > uint64(len(b)-p-k) {
			return false
		}
		key := s[p+k : p+k+int(n)]
		p += k + int(n)
		idLen, k := binary.Uvarint(b[p:])
		if k <= 0 || idLen > uint64(len(key)) {
			return false
		}
		p += k
		e := core.SavedEntry{Key: key, IDLen: int(idLen), Item: -1}
		if format >= 5 {
			item, k := binary.Uvarint(b[p:])
			if k <= 0 {
				return false
			}
			p += k
			if item > 0 && item <= uint64(len(items)) {
				e.Item = int(item - 1)
				e.ItemKey, e.ItemValue = items[e.Item].key, items[e.Item].value
			}
		}
		if !add(e) {
			return false
		}
	}
	return true
}
