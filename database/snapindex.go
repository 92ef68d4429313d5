package database

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/hilodb/hilodb/core"
)

// savedIndexMeta is a saved index's definition in a format 4 snapshot.
type savedIndexMeta struct {
	Collection string   `json:"collection"`
	Name       string   `json:"name"`
	Fields     []string `json:"fields"`
	KeyFormat  int      `json:"keyFormat"`
}

// indexWriter appends the entries of a store's built indexes to a
// snapshot, after its items (the format 4 section).
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
	ix.Each(func(key string, idLen int) bool {
		w.entries = binary.AppendUvarint(w.entries, uint64(len(key)))
		w.entries = append(w.entries, key...)
		w.entries = binary.AppendUvarint(w.entries, uint64(idLen))
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

// readIndexes reads the section of a format 4 snapshot that b holds
// exactly. The entries are read when the store takes them (SavedIndex.Each,
// which reports false for entries that are not whole), each key a slice of
// b's bytes read in place (handedOver).
func readIndexes(b []byte) ([]core.SavedIndex, error) {
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
		entries := b[p : p+size]
		p += size
		out = append(out, core.SavedIndex{
			Collection: meta.Collection,
			Def:        core.IndexDef{Name: meta.Name, Fields: meta.Fields},
			KeyFormat:  meta.KeyFormat,
			Len:        count,
			Each:       func(add func(key string, idLen int) bool) bool { return eachEntry(entries, add) },
		})
	}
	if p != len(text) {
		return nil, fmt.Errorf("snapshot: %w: %d bytes after its saved indexes", errSnapshot, len(text)-p)
	}
	return out, nil
}

// eachEntry hands add each entry encoded in b, and reports whether b held
// whole entries only and add took them all.
func eachEntry(b []byte, add func(key string, idLen int) bool) bool {
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
		if !add(key, int(idLen)) {
			return false
		}
	}
	return true
}
