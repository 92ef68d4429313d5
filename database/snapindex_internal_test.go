package database

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/hilodb/hilodb/core"
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
// back, entry for entry, each with the item it names (format 5); read as
// format 4, the entries name none.
func TestIndexSectionRoundTrip(t *testing.T) {
	var w indexWriter
	in := []core.SavedIndex{
		savedFrom("orders", "by-total", []string{"total"}, [][3]any{{"\x02k1orders/1", 8, 1}, {"\x02k2orders/2", 8, 0}, {"\x02k3orders/3", 8, -1}, {"\x02k4orders/4", 8, 7}}),
		savedFrom("todos", "empty", []string{"a", "b.c"}, nil),
	}
	for _, ix := range in {
		if err := w.add(ix); err != nil {
			t.Fatal(err)
		}
	}
	text := w.appendTo([]byte("items"))[len("items"):]
	out, err := readIndexes(text, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d indexes, want %d", len(out), len(in))
	}
	for _, format := range []int{5, 4} {
		if format == 4 {
			// The same entries without their item numbers: format 4's.
			if out, err = readIndexes(asFormat4(t, text), 4); err != nil {
				t.Fatal(err)
			}
		}
		for i := range in {
			a, b := in[i], out[i]
			if a.Collection != b.Collection || a.Def.Name != b.Def.Name || !slices.Equal(a.Def.Fields, b.Def.Fields) || a.KeyFormat != b.KeyFormat || a.Len != b.Len {
				t.Fatalf("index %d: %+v, want %+v", i, b, a)
			}
			var want, got []string
			a.Each(func(e core.SavedEntry) bool {
				if format == 4 {
					e.Item = -1
				}
				want = append(want, fmt.Sprintf("%s|%s|%d", e.Key[len(e.Key)-e.IDLen:], e.Key, e.Item))
				return true
			})
			keys, spans, ok := b.Spans()
			if !ok {
				t.Fatalf("format %d index %d: entries not whole", format, i)
			}
			for _, sp := range spans {
				got = append(got, fmt.Sprintf("%s|%s|%d", keys[sp.End-sp.IDLen:sp.End], keys[sp.Off:sp.End], sp.Doc))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("format %d index %d: entries %q, want %q", format, i, got, want)
			}
		}
	}
	for cut := range len(text) {
		if _, err := readIndexes(text[:cut], 5); err == nil {
			t.Fatalf("a section cut at byte %d of %d was read", cut, len(text))
		}
	}
}

// asFormat4 is the index section text of format 5 or 6 without the
// entries' item numbers: format 4's.
func asFormat4(t *testing.T, text []byte) []byte {
	t.Helper()
	saved, err := readIndexes(text, 5)
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
		}
		out = binary.AppendUvarint(out, uint64(len(meta)))
		out = append(out, meta...)
		out = binary.AppendUvarint(out, uint64(ix.Len))
		out = binary.AppendUvarint(out, uint64(len(entries)))
		out = append(out, entries...)
	}
	return out
}

// FuzzReadIndexes: any text, read as format 4 or 5, either fails to read
// or hands out entries within it, as many as it says, each naming an item
// or none, without a panic.
func FuzzReadIndexes(f *testing.F) {
	var w indexWriter
	_ = w.add(savedFrom("o", "i", []string{"x"}, [][3]any{{"ab/1", 3, 0}, {"cd/2", 3, 1}}))
	f.Add(w.appendTo(nil), true)
	f.Add([]byte("\x00"), false)
	f.Add([]byte("\x01\x02{}\x05\x03"), false)
	f.Fuzz(func(t *testing.T, text []byte, v5 bool) {
		format := 4
		if v5 {
			format = 5
		}
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
