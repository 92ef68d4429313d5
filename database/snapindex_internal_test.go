package database

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/query"
)

// savedFrom is a SavedIndex handing out entries (key, id length, item).
func savedFrom(coll, name string, fields []string, entries [][3]any) core.SavedIndex {
	return core.SavedIndex{
		Collection: coll, Def: core.IndexDef{Name: name, Fields: fields}, KeyFormat: 1, Len: len(entries),
		Each: func(add func(core.SavedEntry) bool) bool {
			for _, e := range entries {
				if !add(core.SavedEntry{Key: e[0].(string), IDLen: e[1].(int), Item: e[2].(int)}) {
					return false
				}
			}
			return true
		},
	}
}

// TestIndexSectionRoundTrip: what indexWriter writes, readIndexes reads
// back, entry for entry, each with the item it names (format 7), whether
// the section's tables are aligned in memory (read in place) or not
// (copied); written as format 5 or 6 the same, and as format 4 the
// entries name no item.
func TestIndexSectionRoundTrip(t *testing.T) {
	var w indexWriter
	in := []core.SavedIndex{
		savedFrom("orders", "by-total", []string{"total"}, [][3]any{{"\x02k1orders/1", 8, 1}, {"\x02k2orders/2", 8, 0}, {"\x02k3orders/3", 8, -1}, {"\x02k4orders/4", 8, 7}}),
		savedFrom("todos", "empty", []string{"a", "b.c"}, nil),
		savedFrom("todos", "one", []string{"a"}, [][3]any{{"\x05todos/9", 7, 2}}),
	}
	for _, ix := range in {
		if err := w.add(ix); err != nil {
			t.Fatal(err)
		}
	}
	for _, head := range []string{"items", "item", "it", "i", ""} {
		snap := w.appendTo(append(make([]byte, 0, 256), head...))
		text := snap[len(head):]
		// A copy one byte off: the tables are then not aligned.
		shifted := append(make([]byte, 1, len(text)+1), text...)[1:]
		for _, c := range []struct {
			name   string
			text   []byte
			format int
		}{{"7", text, 7}, {"7 unaligned", shifted, 7}, {"6", asFormat(t, text, 6), 6}, {"5", asFormat(t, text, 5), 5}, {"4", asFormat(t, text, 4), 4}} {
			out, err := readIndexes(c.text, c.format)
			if err != nil {
				t.Fatalf("after %q, format %s: %v", head, c.name, err)
			}
			if len(out) != len(in) {
				t.Fatalf("format %s: %d indexes, want %d", c.name, len(out), len(in))
			}
			for i := range in {
				a, b := in[i], out[i]
				if a.Collection != b.Collection || a.Def.Name != b.Def.Name || !slices.Equal(a.Def.Fields, b.Def.Fields) || a.KeyFormat != b.KeyFormat || a.Len != b.Len {
					t.Fatalf("format %s index %d: %+v, want %+v", c.name, i, b, a)
				}
				var want, got []string
				a.Each(func(e core.SavedEntry) bool {
					if c.format == 4 {
						e.Item = -1
					}
					want = append(want, fmt.Sprintf("%s|%s|%d", e.Key[len(e.Key)-e.IDLen:], e.Key, e.Item))
					return true
				})
				keys, spans, ok := b.Spans()
				if !ok {
					t.Fatalf("format %s index %d: entries not whole", c.name, i)
				}
				for _, sp := range spans {
					got = append(got, fmt.Sprintf("%s|%s|%d", keys[sp.End-sp.IDLen:sp.End], keys[sp.Off:sp.End], sp.Doc))
				}
				if !slices.Equal(got, want) {
					t.Fatalf("format %s index %d: entries %q, want %q", c.name, i, got, want)
				}
			}
		}
		for cut := range len(text) {
			if _, err := readIndexes(text[:cut], 7); err == nil {
				t.Fatalf("a section cut at byte %d of %d was read", cut, len(text))
			}
		}
	}
}

// TestSpanTableInPlace: an aligned format 7 table is read in place on a
// little-endian machine, and as a copy otherwise, with the same spans.
func TestSpanTableInPlace(t *testing.T) {
	var w indexWriter
	if err := w.add(savedFrom("o", "i", []string{"x"}, [][3]any{{"ab/1", 3, 0}, {"cd/2", 3, 5}})); err != nil {
		t.Fatal(err)
	}
	snap := w.appendTo(make([]byte, 0, 64))
	table := snap[len(snap)-2*spanSize:]
	if uintptr(unsafe.Pointer(&table[0]))%4 != 0 {
		t.Fatalf("the table starts at %p, not aligned", &table[0])
	}
	in := spanTable(table, 2)
	if littleEndian && unsafe.Pointer(&in[0]) != unsafe.Pointer(&table[0]) {
		t.Fatal("an aligned table was copied")
	}
	odd := append(make([]byte, 1, len(table)+1), table...)[1:]
	copied := spanTable(odd, 2)
	if unsafe.Pointer(&copied[0]) == unsafe.Pointer(&odd[0]) {
		t.Fatal("an unaligned table was read in place")
	}
	want := []query.Span{{Off: 0, End: 4, IDLen: 3, Doc: 0}, {Off: 4, End: 8, IDLen: 3, Doc: 5}}
	if !slices.Equal(in, want) || !slices.Equal(copied, want) {
		t.Fatalf("spans %+v and %+v, want %+v", in, copied, want)
	}
}

// asFormat is the index section text of format 7 as format (4 to 6)
// writes it: each entry a uvarint length and its key, a uvarint length of
// its id, and (from format 5) one more than its item's number.
func asFormat(t testing.TB, text []byte, format int) []byte {
	t.Helper()
	saved, err := readIndexes(text, 7)
	if err != nil {
		t.Fatal(err)
	}
	out := binary.AppendUvarint(nil, uint64(len(saved)))
	for _, ix := range saved {
		meta, _ := json.Marshal(savedIndexMeta{Collection: ix.Collection, Name: ix.Def.Name, Fields: ix.Def.Fields, KeyFormat: ix.KeyFormat})
		keys, spans, ok := ix.Spans()
		if !ok {
			t.Fatalf("index %q: entries not whole", ix.Def.Name)
		}
		var entries []byte
		for _, sp := range spans {
			entries = binary.AppendUvarint(entries, uint64(sp.End-sp.Off))
			entries = append(entries, keys[sp.Off:sp.End]...)
			entries = binary.AppendUvarint(entries, uint64(sp.IDLen))
			if format >= 5 {
				entries = binary.AppendUvarint(entries, uint64(sp.Doc+1))
			}
		}
		out = binary.AppendUvarint(out, uint64(len(meta)))
		out = append(out, meta...)
		out = binary.AppendUvarint(out, uint64(ix.Len))
		out = binary.AppendUvarint(out, uint64(len(entries)))
		out = append(out, entries...)
	}
	return out
}

// FuzzReadIndexes: any text, read as format 4, 5 or 7, either fails to
// read or hands out entries within it, as many as it says, each naming an
// item or none, without a panic.
func FuzzReadIndexes(f *testing.F) {
	var w indexWriter
	_ = w.add(savedFrom("o", "i", []string{"x"}, [][3]any{{"ab/1", 3, 0}, {"cd/2", 3, 1}}))
	seed := w.appendTo(nil)
	f.Add(seed, uint8(7))
	f.Add(asFormat(f, seed, 5), uint8(5))
	f.Add([]byte("\x00"), uint8(4))
	f.Add([]byte("\x01\x02{}\x05\x03"), uint8(4))
	f.Fuzz(func(t *testing.T, text []byte, v uint8) {
		format := []int{4, 5, 7}[int(v)%3]
		saved, err := readIndexes(text, format)
		if err != nil {
			return
		}
		for _, ix := range saved {
			keys, spans, ok := ix.Spans()
			if !ok {
				continue
			}
			if len(spans) != ix.Len {
				t.Fatalf("%d entries, the section says %d", len(spans), ix.Len)
			}
			for _, sp := range spans {
				if format == 7 {
					continue // its spans are checked when restored (query.Index.RestoreSpans)
				}
				if sp.Off > sp.End || int(sp.End) > len(keys) || sp.IDLen > sp.End-sp.Off {
					t.Fatalf("span %+v out of its %d bytes", sp, len(keys))
				}
				if sp.Doc < -1 || (format == 4 && sp.Doc != -1) {
					t.Fatalf("span %+v names an item it cannot", sp)
				}
			}
		}
	})
}

// FuzzUvarint: uvarint reads what binary.Uvarint reads, from any place of
// any bytes.
func FuzzUvarint(f *testing.F) {
	f.Add([]byte{0x05}, 0)
	f.Add([]byte{0x85, 0x01, 0x02}, 0)
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f}, 1)
	f.Add([]byte{0x80}, 0)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 0)
	f.Fuzz(func(t *testing.T, b []byte, p int) {
		if p < 0 || p > len(b) {
			return
		}
		n, k := uvarint(b, p)
		wn, wk := binary.Uvarint(b[p:])
		if n != wn || k != wk {
			t.Fatalf("uvarint(%x, %d) = %d, %d; binary.Uvarint: %d, %d", b, p, n, k, wn, wk)
		}
	})
}
