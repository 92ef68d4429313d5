package database

import (
	"slices"
	"testing"

	"github.com/hilodb/hilodb/core"
)

// savedFrom is a SavedIndex handing out entries (key, id length).
func savedFrom(coll, name string, fields []string, entries [][2]any) core.SavedIndex {
	return core.SavedIndex{
		Collection: coll, Def: core.IndexDef{Name: name, Fields: fields}, KeyFormat: 1, Len: len(entries),
		Each: func(add func(string, int) bool) bool {
			for _, e := range entries {
				if !add(e[0].(string), e[1].(int)) {
					return false
				}
			}
			return true
		},
	}
}

// TestIndexSectionRoundTrip: what indexWriter writes, readIndexes reads
// back, entry for entry.
func TestIndexSectionRoundTrip(t *testing.T) {
	var w indexWriter
	in := []core.SavedIndex{
		savedFrom("orders", "by-total", []string{"total"}, [][2]any{{"\x02k1orders/1", 8}, {"\x02k2orders/2", 8}}),
		savedFrom("todos", "empty", []string{"a", "b.c"}, nil),
	}
	for _, ix := range in {
		if err := w.add(ix); err != nil {
			t.Fatal(err)
		}
	}
	text := w.appendTo([]byte("items"))[len("items"):]
	out, err := readIndexes(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d indexes, want %d", len(out), len(in))
	}
	for i := range in {
		a, b := in[i], out[i]
		if a.Collection != b.Collection || a.Def.Name != b.Def.Name || !slices.Equal(a.Def.Fields, b.Def.Fields) || a.KeyFormat != b.KeyFormat || a.Len != b.Len {
			t.Fatalf("index %d: %+v, want %+v", i, b, a)
		}
		var want, got []string
		a.Each(func(k string, n int) bool { want = append(want, k[len(k)-n:]+"|"+k); return true })
		if !b.Each(func(k string, n int) bool { got = append(got, k[len(k)-n:]+"|"+k); return true }) {
			t.Fatalf("index %d: entries not whole", i)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("index %d: entries %q, want %q", i, got, want)
		}
	}
	for cut := range len(text) {
		if _, err := readIndexes(text[:cut]); err == nil {
			t.Fatalf("a section cut at byte %d of %d was read", cut, len(text))
		}
	}
}

// FuzzReadIndexes: any text either fails to read or hands out entries
// within it, without a panic.
func FuzzReadIndexes(f *testing.F) {
	var w indexWriter
	_ = w.add(savedFrom("o", "i", []string{"x"}, [][2]any{{"ab/1", 3}, {"cd/2", 3}}))
	f.Add(w.appendTo(nil))
	f.Add([]byte("\x00"))
	f.Add([]byte("\x01\x02{}\x05\x03"))
	f.Fuzz(func(t *testing.T, text []byte) {
		saved, err := readIndexes(text)
		if err != nil {
			return
		}
		for _, ix := range saved {
			ix.Each(func(key string, idLen int) bool {
				if idLen > len(key) {
					t.Fatalf("id length %d past key %q", idLen, key)
				}
				return true
			})
		}
	})
}
