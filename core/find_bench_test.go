package core_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/hilodb/hilodb/core"
)

func todoDoc(i int) []byte {
	return []byte(fmt.Sprintf(`{"_id":"todos/%d","title":"todo number %d","status":%q,"priority":%d,"createdAt":%d,"owner":"user%d","tags":["a","b"]}`,
		i, i, []string{"open", "done", "archived"}[i%3], i%5, 1_700_000_000_000+i*1000, i%50))
}

// filledStore is a store of n todos with the indexes named by fields.
func filledStore(b *testing.B, n int, indexes ...[]string) *testStore {
	s := newTestStore(b)
	ctx := context.Background()
	for _, f := range indexes {
		if _, _, err := s.CreateIndex(ctx, "todos", core.IndexDef{Fields: f}); err != nil {
			b.Fatal(err)
		}
	}
	docs := make([][]byte, 0, 1000)
	for i := 0; i < n; i++ {
		docs = append(docs, todoDoc(i))
		if len(docs) == cap(docs) || i == n-1 {
			if _, err := s.InsertMany(ctx, "todos", docs, nil); err != nil {
				b.Fatal(err)
			}
			docs = docs[:0]
		}
	}
	return s
}

var threeIndexes = [][]string{{"status", "createdAt"}, {"priority"}, {"owner"}, {"createdAt"}}

// BenchmarkPutIndexes is a put into a collection of 10,000 documents with
// 0 and with 3 indexes.
func BenchmarkPutIndexes(b *testing.B) {
	for _, n := range []int{0, 3} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := filledStore(b, 10000, threeIndexes[:n]...)
			ctx := context.Background()
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Put(ctx, "todos", todoDoc(i%20000)); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkFind100k runs the bench-query scenarios over 100,000 documents.
func BenchmarkFind100k(b *testing.B) {
	s := filledStore(b, 100000, threeIndexes...)
	for _, c := range []struct{ name, q string }{
		{"equality-sort-limit20", `{"selector":{"status":"open"},"sort":[{"createdAt":"desc"}],"limit":20}`},
		{"range-limit100", `{"selector":{"priority":{"$gte":2,"$lt":4}},"limit":100}`},
		{"compound", `{"selector":{"status":"done","createdAt":{"$gt":1700050000000}},"limit":20}`},
		{"range-sorted-limit100", `{"selector":{"createdAt":{"$gte":1700010000000,"$lt":1700090000000}},"sort":[{"createdAt":"asc"}],"limit":100}`},
		{"scan", `{"selector":{"title":"todo number 99999"}}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			q, err := core.ParseQuery([]byte(c.q))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Find("todos", q); err != nil {
					b.Fatal(err)
				}
			}
		})
		// The page as JSON text, as the browser's find asks for it.
		b.Run(c.name+"-text", func(b *testing.B) {
			q, err := core.ParseQuery([]byte(c.q))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := s.AppendFind(nil, "todos", q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoad100kIndexes loads 100,000 documents as a reopen does, with
// 0 and with 2 indexes, and answers a first query.
func BenchmarkLoad100kIndexes(b *testing.B) {
	for _, n := range []int{0, 2} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			// A snapshot's items: the documents, then the definitions.
			var changes []core.Change
			for i := 0; i < 100000; i++ {
				changes = append(changes, core.Change{Key: fmt.Sprintf("doc/todos/%d", i), Value: string(todoDoc(i))})
			}
			sort.Slice(changes, func(i, j int) bool { return changes[i].Key < changes[j].Key })
			for _, f := range threeIndexes[:n] {
				def := core.IndexDef{Fields: f}
				_ = core.CheckIndexDef(&def)
				js, _ := json.Marshal(def)
				changes = append(changes, core.Change{Key: "ixdef/todos/" + def.Name, Value: string(js)})
			}
			var loading, querying time.Duration
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				dst, _ := core.Open(":memory:", core.Options{Node: "T"})
				err := dst.LoadChanges(func(apply func(core.Change) error) error {
					for _, c := range changes {
						if err := apply(c); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				// The first query, as a page shows one after a reload.
				if _, err := dst.FindJSON("todos", []byte(`{"selector":{"status":"open"},"sort":[{"createdAt":"desc"}],"limit":20}`)); err != nil {
					b.Fatal(err)
				}
				loading, querying = loading+t1.Sub(t0), querying+time.Since(t1)
				dst.Close()
			}
			// The load and the first query (with its index's build) apart.
			b.ReportMetric(float64(loading.Milliseconds())/float64(b.N), "load-ms/op")
			b.ReportMetric(float64(querying.Microseconds())/1000/float64(b.N), "query-ms/op")
		})
	}
}
