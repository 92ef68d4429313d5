package database

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"unsafe"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/query"
)

// savedIndexMeta is a saved index's definition in a snapshot of format 4
// to 7.
type savedIndexMeta struct {
	Collection string   `json:"collection"`
	Name       string   `json:"name"`
	Fields     []string `json:"fields"`
	KeyFormat  int      `json:"keyFormat"`
}

// indexWriter appends the entries of a store's built indexes to a
// snapshot, after its items (the format 7 section).
type indexWriter struct {
	parts []indexPart
}

// indexPart is one index as the section holds it.
type indexPart struct {
	meta  []byte // the definition, as JSON
	count int    // its entries
	keys  []byte // every entry's key, one after another
	table []byte // each entry's span of keys (spanSize bytes)
}

// spanSize is how many bytes a span takes in the section: its four
// numbers as query.Span holds them, each 32 bits, little-endian.
const spanSize = 16

// The section's table is read in place as query.Span's (spanTable).
var (
	_ [unsafe.Sizeof(query.Span{}) - spanSize]byte
	_ [spanSize - unsafe.Sizeof(query.Span{})]byte
)

// add appends one index.
func (w *indexWriter) add(ix core.SavedIndex) error {
	meta, err := json.Marshal(savedIndexMeta{Collection: ix.Collection, Name: ix.Def.Name, Fields: ix.Def.Fields, KeyFormat: ix.KeyFormat})
	if err != nil {
		return fmt.Errorf("save index %q: %w", ix.Def.Name, err)
	}
	part := indexPart{meta: meta, keys: make([]byte, 0, 32*ix.Len), table: make([]byte, 0, spanSize*ix.Len)}
	ix.Each(func(e core.SavedEntry) bool {
		doc := int32(-1) // not known
		if e.Item >= 0 && e.Item <= math.MaxInt32 {
			doc = int32(e.Item)
		}
		off := len(part.keys)
		part.keys = append(part.keys, e.Key...)
		part.table = binary.LittleEndian.AppendUint32(part.table, uint32(off))
		part.table = binary.LittleEndian.AppendUint32(part.table, uint32(len(part.keys)))
		part.table = binary.LittleEndian.AppendUint32(part.table, uint32(e.IDLen))
		part.table = binary.LittleEndian.AppendUint32(part.table, uint32(doc))
		part.count++
		return true
	})
	if len(part.keys) > math.MaxUint32 {
		return fmt.Errorf("save index %q: %w: its keys take %d bytes, more than a snapshot holds", ix.Def.Name, errSnapshot, len(part.keys))
	}
	w.parts = append(w.parts, part)
	return nil
}

// appendTo appends the section to snap, whose start the tables are
// aligned to.
func (w *indexWriter) appendTo(snap []byte) []byte {
	snap = binary.AppendUvarint(snap, uint64(len(w.parts)))
	for _, part := range w.parts {
		snap = binary.AppendUvarint(snap, uint64(len(part.meta)))
		snap = append(snap, part.meta...)
		snap = binary.AppendUvarint(snap, uint64(part.count))
		snap = binary.AppendUvarint(snap, uint64(len(part.keys)))
		snap = append(snap, part.keys...)
		pad := (4 - (len(snap)+1)%4) % 4
		snap = append(snap, byte(pad))
		snap = append(snap, make([]byte, pad)...)
		snap = append(snap, part.table...)
	}
	return snap
}

// readIndexes reads the section of a snapshot of format (4 to 7) that b
// holds exactly. The entries are read when the store takes them
// (SavedIndex.Spans, not ok for entries that are not whole), each key a
// slice of b's bytes read in place (handedOver); from format 5 on each
// names the snapshot's item that holds its document. Format 7's spans are
// b's own bytes where they can be (spanTable).
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
		ix := core.SavedIndex{
			Collection: meta.Collection,
			Def:        core.IndexDef{Name: meta.Name, Fields: meta.Fields},
			KeyFormat:  meta.KeyFormat,
			Len:        count,
		}
		if format >= 7 {
			// size is the keys'; the pad and the table follow.
			keys := text[p : p+size]
			p += size
			if p == len(b) || b[p] > 3 || int(b[p]) >= len(b)-p || count > (len(b)-p-1-int(b[p]))/spanSize {
				return nil, fmt.Errorf("snapshot: %w: saved index %d of %d cut short", errSnapshot, i+1, n)
			}
			p += 1 + int(b[p])
			table := b[p : p+spanSize*count]
			p += len(table)
			ix.Spans = func() (string, []query.Span, bool) { return keys, spanTable(table, count), true }
		} else {
			if count > size/3 { // an entry takes 3 bytes at least
				return nil, fmt.Errorf("snapshot: %w: saved index %d of %d: %d entries in %d bytes", errSnapshot, i+1, n, count, size)
			}
			entries := b[p : p+size]
			p += size
			ix.Spans = func() (string, []query.Span, bool) { return readSpans(entries, format, count) }
		}
		out = append(out, ix)
	}
	if p != len(text) {
		return nil, fmt.Errorf("snapshot: %w: %d bytes after its saved indexes", errSnapshot, len(text)-p)
	}
	return out, nil
}

// readSpans reads the count entries encoded in b (a snapshot of format 4
// to 6), each key a slice of b, and reports whether b held whole entries
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

// littleEndian reports whether the machine keeps a number's low byte
// first, as the section's tables do.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// spanTable returns the count spans of a format 7 table: the table's own
// bytes where the machine is little-endian and they are aligned as a
// query.Span must be (the writer aligns them to the snapshot's start, and
// a snapshot's copy starts aligned), else a copy. Not to be changed: it
// may be the snapshot.
func spanTable(table []byte, count int) []query.Span {
	if count == 0 {
		return nil
	}
	if spans, ok := inPlace[query.Span](table, count); ok {
		return spans
	}
	spans := make([]query.Span, count)
	for i := range spans {
		t := table[spanSize*i : spanSize*(i+1)]
		spans[i] = query.Span{
			Off:   binary.LittleEndian.Uint32(t),
			End:   binary.LittleEndian.Uint32(t[4:]),
			IDLen: binary.LittleEndian.Uint32(t[8:]),
			Doc:   int32(binary.LittleEndian.Uint32(t[12:])),
		}
	}
	return spans
}

// inPlace returns the first count T's of b read in place: b's own bytes,
// where the machine keeps numbers little-endian as the snapshot does and b
// is aligned as a T must be; ok is false otherwise (the caller decodes a
// copy). b must hold count T's.
func inPlace[T any](b []byte, count int) (ts []T, ok bool) {
	var t T
	p := unsafe.Pointer(unsafe.SliceData(b))
	if !littleEndian || uintptr(p)%unsafe.Alignof(t) != 0 {
		return nil, false
	}
	return unsafe.Slice((*T)(p), count), true
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
