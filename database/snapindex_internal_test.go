package database

import (
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
	items := []storedItem{{"doc/orders/2", `{"n":2}`}, {"doc/orders/1", `{"n":1}`}}
	text := w.appendTo([]byte("items"))[len("items"):]
	out, err := readIndexes(text, 5, items)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d indexes, want %d", len(out), len(in))
	}
	show := func(e core.SavedEntry) string {
		return fmt.Sprintf("%s|%s|%d|%s|%s", e.Key[len(e.Key)-e.IDLen:], e.Key, e.Item, e.ItemKey, e.ItemValue)
	}
	for i := range in {
		a, b := in[i], out[i]
		if a.Collection != b.Collection || a.Def.Name != b.Def.Name || !slices.Equal(a.Def.Fields, b.Def.Fields) || a.KeyFormat != b.KeyFormat || a.Len != b.Len {
			t.Fatalf("index %d: %+v, want %+v", i, b, a)
		}
		var want, got []string
		a.Each(func(e core.SavedEntry) bool {
			if e.Item >= len(items) {
				e.Item = -1 // past the items: not known
			}
			if e.Item >= 0 {
				e.ItemKey, e.ItemValue = items[e.Item].key, items[e.Item].value
			}
			want = append(want, show(e))
			return true
		})
		if !b.Each(func(e core.SavedEntry) bool { got = append(got, show(e)); return true }) {
			t.Fatalf("index %d: entries not whole", i)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("index %d: entries %q, want %q", i, got, want)
		}
	}
	for cut := range len(text) {
		if _, err := readIndexes(text[:cut], 5, items); err == nil {
			t.Fatalf("a section cut at byte %d of %d was read", cut, len(text))
		}
	}
}

// FuzzReadIndexes: any text, read as format 4 or 5, either fails to read
// or hands out entries within it, each naming an item there is or none,
// without a panic.
func FuzzReadIndexes(f *testing.F) {
	var w indexWriter
	_ = w.add(savedFrom("o", "i", []string{"x"}, [][3]any{{"ab/1", 3, 0}, {"cd/2", 3, 1}}))
	f.Add(w.appendTo(nil), true)
	f.Add([]byte("\x00"), false)
	f.Add([]byte("\x01\x02{}\x05\x03"), false)
	items := []storedItem{{"doc/b/1", "{}"}, {"doc/d/2", "{}"}}
	f.Fuzz(func(t *testing.T, text []byte, v5 bool) {
		format := 4
		if v5 {
			format = 5
		}
		saved, err := readIndexes(text, format, items)
		if err != nil {
			return
		}
		for _, ix := range saved {
			ix.Each(func(e core.SavedEntry) bool {
				if e.IDLen > len(e.Key) {
					t.Fatalf("id length %d past key %q", e.IDLen, e.Key)
				}
				if e.Item < -1 || e.Item >= len(items) || (e.Item >= 0) != (e.ItemKey != "") {
					t.Fatalf("entry %+v names an item that is not there", e)
				}
				return true
			})
		}
	})
}
