package database

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/query"
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

// readIndexes reads the section of a snapshot of format (4 or 5) that b
// holds exactly. The entries are read when the store takes them
// (SavedIndex.Spans, not ok for entries that are not whole), each key a
// slice of b's bytes read in place (handedOver); in format 5 each names
// the snapshot's item that holds its document.
func readIndexes(b []byte, format int) ([]core.SavedIndex, error) {
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
			Spans:      func() (string, []query.Span, bool) { return readSpans(entries, format, count) },
		})
	}
	if p != len(text) {
		return nil, fmt.Errorf("snapshot: %w: %d bytes after its saved indexes", errSnapshot, len(text)-p)
	}
	return out, nil
}

// readSpans reads the count entries encoded in b (a snapshot of format 4
// or 5), each key a slice of b, and reports whether b held whole entries
// only, count of them. An item number too large for a span is taken as
// not known.
func readSpans(b []byte, format, count int) (string, []query.Span, bool) {
	if len(b) > math.MaxUint32 || count > len(b)/3 {
		return "", nil, false
	}
	spans := make([]query.Span, count)
	p := 0
	for i := range spans {
		n, k := uvarint(b, p)
		if k <= 0 || n > uint64(len(b)-p-k) {
			return "", nil, false
		}
		off := p + k
		p = off + int(n)
		idLen, k := uvarint(b, p)
		if k <= 0 || idLen > n {
			return "", nil, false
		}
		p += k
		sp := &spans[i]
		sp.Off, sp.End, sp.IDLen, sp.Doc = uint32(off), uint32(off+int(n)), uint32(idLen), -1
		if format >= 5 {
			item, k := uvarint(b, p)
			if k <= 0 {
				return "", nil, false
			}
			p += k
			if item > 0 && item <= math.MaxInt32 {
				sp.Doc = int32(item - 1)
			}
		}
	}
	return handedOver(b), spans, p == len(b)
}

// uvarint is binary.Uvarint of b[p:], with the lengths of one and two
// bytes (most of a snapshot's) read without a loop: a load reads hundreds
// of thousands.
func uvarint(b []byte, p int) (uint64, int) {
	if p < len(b) && b[p] < 0x80 {
		return uint64(b[p]), 1
	}
	if p+1 < len(b) && b[p+1] < 0x80 {
		return uint64(b[p]&0x7f) | uint64(b[p+1])<<7, 2
	}
	if p >= len(b) {
		return 0, 0
	}
	return binary.Uvarint(b[p:])
}
