package loaded_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core/loaded"
)

// live returns the keys of l's live items, in order.
func live(l *loaded.List) []string {
	var keys []string
	for i := range l.Len() {
		if !l.IsGone(i) {
			keys = append(keys, l.Key(i)+"="+l.Val(i))
		}
	}
	return keys
}

// added is a list of items added one by one; table the same items as a
// snapshot's table.
func added(t *testing.T, kv ...string) *loaded.List {
	t.Helper()
	l := new(loaded.List)
	l.Reserve(len(kv) / 2)
	for i := 0; i < len(kv); i += 2 {
		if !l.Add(kv[i], kv[i+1]) {
			t.Fatalf("Add(%q) refused", kv[i])
		}
	}
	return l
}

func table(kv ...string) *loaded.List {
	var text strings.Builder
	var rows []loaded.Row
	for i := 0; i < len(kv); i += 2 {
		k := uint32(text.Len())
		text.WriteString(kv[i])
		v := uint32(text.Len())
		text.WriteString(kv[i+1])
		rows = append(rows, loaded.Row{KeyOff: k, KeyEnd: v, ValOff: v, ValEnd: uint32(text.Len())})
	}
	l := new(loaded.List)
	l.UseTable(text.String(), rows)
	return l
}

func TestList(t *testing.T) {
	kv := []string{"a", "1", "c", "3", "e", "5", "g", "7"}
	for _, tt := range []struct {
		name string
		list func() *loaded.List
	}{
		{"added", func() *loaded.List { return added(t, kv...) }},
		{"table", func() *loaded.List { return table(kv...) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := tt.list()
			if l.FromTable() != (tt.name == "table") {
				t.Errorf("FromTable = %v", l.FromTable())
			}
			if l.Len() != 4 || l.Live() != 4 {
				t.Fatalf("Len %d, Live %d, want 4 and 4", l.Len(), l.Live())
			}
			for _, c := range []struct {
				key  string
				from int
				at   int
				ok   bool
			}{{"", 0, 0, false}, {"a", 0, 0, true}, {"b", 1, 0, false}, {"e", 2, 2, true}, {"g", 3, 3, true}, {"h", 4, 0, false}} {
				if got := l.From(c.key); got != c.from {
					t.Errorf("From(%q) = %d, want %d", c.key, got, c.from)
				}
				if at, ok := l.Find(c.key); ok != c.ok || (ok && at != c.at) {
					t.Errorf("Find(%q) = %d %v, want %d %v", c.key, at, ok, c.at, c.ok)
				}
			}
			if d := l.Docs(); d.Len() != 4 || d.Key(2) != "e" || d.Doc(2) != "5" {
				t.Errorf("Docs: %d items, item 2 %q=%q", d.Len(), d.Key(2), d.Doc(2))
			}

			// A transaction that fails puts back what it marked gone.
			l.Drop(1)
			l.Drop(3)
			if _, ok := l.Find("c"); ok || l.Live() != 2 {
				t.Errorf("after Drop: c found %v, Live %d", ok, l.Live())
			}
			l.Undo()
			if got := live(l); !slices.Equal(got, []string{"a=1", "c=3", "e=5", "g=7"}) {
				t.Errorf("after Undo: %q", got)
			}
			// One that succeeds keeps it.
			l.Drop(0)
			l.Commit()
			l.Undo() // nothing left to undo
			if got := live(l); !slices.Equal(got, []string{"c=3", "e=5", "g=7"}) {
				t.Errorf("after Commit: %q", got)
			}

			// A Reset (DeleteAll) in a failed transaction: the list as the
			// transaction found it comes back, its earlier drops undone.
			l.Drop(1)
			l.Keep()
			l.Reset()
			if l.Len() != 0 || l.Live() != 0 {
				t.Errorf("after Reset: Len %d, Live %d", l.Len(), l.Live())
			}
			l.Keep() // a second Keep keeps the first
			l.Undo()
			if got := live(l); !slices.Equal(got, []string{"c=3", "e=5", "g=7"}) {
				t.Errorf("after Reset and Undo: %q", got)
			}
			// Hide (a load's) has no undo.
			l.Hide(2)
			l.Undo()
			if got := live(l); !slices.Equal(got, []string{"c=3", "g=7"}) {
				t.Errorf("after Hide and Undo: %q", got)
			}
		})
	}
}

func TestListAdd(t *testing.T) {
	l := added(t, "b", "2")
	if l.Add("a", "1") || l.Add("b", "x") {
		t.Error("Add took a key not after every key held")
	}
	if !l.Add("c", "3") || l.Len() != 2 {
		t.Errorf("Add(c): Len %d", l.Len())
	}
	// Past a word of gone bits and the room reserved.
	for i := range 200 {
		if !l.Add("d"+strings.Repeat("z", i), "v") {
			t.Fatalf("Add %d refused", i)
		}
	}
	l.Drop(150)
	if l.Live() != 201 || !l.IsGone(150) || l.IsGone(149) {
		t.Errorf("Live %d after dropping item 150 of 202", l.Live())
	}
	if table("a", "1").Add("b", "2") {
		t.Error("Add to a table")
	}
}

func TestOrder(t *testing.T) {
	var same loaded.Order
	same.Skip(3)
	same.Next(3)
	if !same.Same() || same.Handed() != 4 || same.Item(2) != 2 || same.Item(4) != -1 || same.Item(-1) != -1 {
		t.Errorf("the same order: Same %v, Handed %d, Item(2) %d", same.Same(), same.Handed(), same.Item(2))
	}

	var o loaded.Order
	o.Next(0)
	o.Next(1)
	o.Next(-1) // a pending mark: no item
	o.Next(2)
	o.Skip(1)
	if o.Same() || o.Handed() != 5 {
		t.Fatalf("Same %v, Handed %d, want false and 5", o.Same(), o.Handed())
	}
	for n, want := range []int32{0, 1, -1, 2, 4} {
		if got := o.Item(int32(n)); got != want {
			t.Errorf("Item(%d) = %d, want %d", n, got, want)
		}
	}
}
