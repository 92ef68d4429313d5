package query_test

import (
	"testing"

	"github.com/hilodb/hilodb/core/query"
)

// TestIndexRestore: saved entries fill an index only when they are whole
// and in strict key order; otherwise the index stays empty.
func TestIndexRestore(t *testing.T) {
	type entry struct {
		key   string
		idLen int
	}
	for _, c := range []struct {
		name    string
		n       int
		entries []entry
		ok      bool
	}{
		{"in order", 3, []entry{{"a1x/1", 3}, {"a2x/2", 3}, {"b0y/9", 3}}, true},
		{"none", 0, nil, true},
		{"out of order", 2, []entry{{"bx/1", 3}, {"ax/2", 3}}, false},
		{"a repeated key", 2, []entry{{"ax/1", 3}, {"ax/1", 3}}, false},
		{"an id longer than its key", 1, []entry{{"x/1", 4}}, false},
		{"an empty id", 1, []entry{{"x/1", 0}}, false},
		{"fewer than said", 3, []entry{{"ax/1", 3}, {"bx/2", 3}}, false},
		{"more than said", 1, []entry{{"ax/1", 3}, {"bx/2", 3}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, _ := query.ParsePath("n")
			ix := query.NewIndex([]query.Path{p})
			ok := ix.Restore(c.n, func(add func(string, int, string) bool) bool {
				for _, e := range c.entries {
					if !add(e.key, e.idLen, "") {
						return false
					}
				}
				return true
			})
			if ok != c.ok {
				t.Fatalf("Restore = %v, want %v", ok, c.ok)
			}
			want := 0
			if c.ok {
				want = len(c.entries)
			}
			if ix.Len() != want {
				t.Fatalf("Len = %d, want %d", ix.Len(), want)
			}
			var ids []string
			ix.Each(func(e query.Entry) bool { ids = append(ids, e.ID); return true })
			for i, id := range ids {
				if e := c.entries[i]; id != e.key[len(e.key)-e.idLen:] {
					t.Fatalf("entry %d id %q", i, id)
				}
			}
		})
	}
}
