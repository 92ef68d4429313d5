package query_test

import (
	"testing"

	"github.com/hilodb/hilodb/core/query"
)

// spansOf lays keys out one after another, as a snapshot holds them, and
// returns them with their spans, each with the id length idLen and doc.
func spansOf(keys []string, idLen func(i int) int, doc func(i int) int32) (string, []query.Span) {
	var all string
	spans := make([]query.Span, len(keys))
	for i, k := range keys {
		all += "|" // something between the keys, as a snapshot has
		spans[i] = query.Span{Off: uint32(len(all)), End: uint32(len(all) + len(k)), IDLen: uint32(idLen(i)), Doc: doc(i)}
		all += k
	}
	return all, spans
}

// TestIndexRestore: saved entries fill an index only when they are whole
// and within their bounds; otherwise the index stays empty. (Their key
// order is the caller's to vouch for.)
func TestIndexRestore(t *testing.T) {
	type entry struct {
		key   string
		idLen int
		doc   int32
	}
	docs := []string{`{"n":1}`, `{"n":2}`}
	docKeys := []string{"doc/x/2", "doc/y/9"} // where each is stored
	for _, c := range []struct {
		name    string
		entries []entry
		cut     int // bytes taken off the keys' end
		ok      bool
	}{
		{"in order", []entry{{"a1x/1", 3, -1}, {"a2x/2", 3, 0}, {"b0y/9", 3, 1}}, 0, true},
		{"a document of another id", []entry{{"a1x/1", 3, 1}, {"a2x/2", 3, 0}}, 0, true},
		{"none", nil, 0, true},
		{"an id longer than its key", []entry{{"x/1", 4, -1}}, 0, false},
		{"an empty id", []entry{{"x/1", 0, -1}}, 0, false},
		{"a key past the keys", []entry{{"ax/1", 3, -1}, {"bx/2", 3, -1}}, 1, false},
		{"a document past the documents", []entry{{"ax/1", 3, 2}}, 0, false},
		{"a document before the first", []entry{{"ax/1", 3, -2}}, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, _ := query.ParsePath("n")
			ix := query.NewDocIndex([]query.Path{p})
			keys := make([]string, len(c.entries))
			for i, e := range c.entries {
				keys[i] = e.key
			}
			all, spans := spansOf(keys, func(i int) int { return c.entries[i].idLen }, func(i int) int32 { return c.entries[i].doc })
			ok := ix.RestoreSpans(all[:len(all)-c.cut], spans, listDocs{docs, docKeys}, "doc/")
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
			i := 0
			ix.Each(func(e query.Entry) bool {
				want := ""
				if d := c.entries[i].doc; d >= 0 && docKeys[d] == "doc/"+e.ID {
					want = docs[d] // only the document stored under the entry's id
				}
				if e.Doc != want {
					t.Errorf("entry %d document %q, want %q", i, e.Doc, want)
				}
				i++
				return true
			})
		})
	}
}

// listDocs is query.Docs of two lists: each document's text and key.
type listDocs struct{ docs, keys []string }

func (l listDocs) Len() int         { return len(l.docs) }
func (l listDocs) Doc(i int) string { return l.docs[i] }
func (l listDocs) Key(i int) string { return l.keys[i] }
