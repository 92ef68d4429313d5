package core_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/query"
)

// TestWatchQueryEqualsFreshRun watches random queries while goroutines
// write concurrently, local writes and replicated ones alike: once the
// writes stop, each live result equals a fresh run of its query.
func TestWatchQueryEqualsFreshRun(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	for _, d := range testIndexes {
		if _, _, err := s.CreateIndex(ctx, "items", d); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewSource(7))
	for i := 0; i < 100; i++ {
		if _, err := s.Insert(ctx, "items", mustJSON(randomDoc(r)), nil); err != nil {
			t.Fatal(err)
		}
	}
	type watch struct {
		q    *query.Query
		mu   sync.Mutex
		last [][]byte
		n    int
	}
	var watches []*watch
	for i := 0; i < 12; i++ {
		qj := map[string]any{"selector": randomSelector(r, 1)}
		if srt := randomSort(r); len(srt) > 0 {
			qj["sort"] = srt
		}
		if i%2 == 0 {
			qj["limit"] = float64(1 + r.Intn(8))
		}
		if i%4 == 0 {
			qj["skip"] = float64(r.Intn(3))
		}
		q, err := core.ParseQuery(mustJSON(qj))
		if err != nil {
			t.Fatal(err)
		}
		w := &watch{q: q}
		stop, err := s.WatchQuery("items", q, func(res core.LiveResult) {
			w.mu.Lock()
			defer w.mu.Unlock()
			// The changes turn the last result into this one.
			if w.n > 0 {
				applied := applyChanges(w.last, res.Changes)
				if docsText(applied) != docsText(res.Docs) {
					t.Errorf("changes %+v do not turn\n%s into\n%s", res.Changes, docsText(w.last), docsText(res.Docs))
				}
			}
			w.last, w.n = res.Docs, w.n+1
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		watches = append(watches, w)
	}
	var wg sync.WaitGroup
	var remoteSeq atomic.Int64
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(100 + g)))
			for i := 0; i < 150; i++ {
				page, _ := s.List("items", "", 200)
				switch k := r.Intn(4); {
				case k == 0 && len(page.Docs) > 0:
					var m map[string]any
					_ = json.Unmarshal(page.Docs[r.Intn(len(page.Docs))], &m)
					_, _ = s.Remove(ctx, "items", strings.TrimPrefix(m["_id"].(string), "items/"), nil)
				case k == 1 && len(page.Docs) > 0:
					var m map[string]any
					_ = json.Unmarshal(page.Docs[r.Intn(len(page.Docs))], &m)
					_, _ = s.Replace(ctx, "items", strings.TrimPrefix(m["_id"].(string), "items/"), mustJSON(randomDoc(r)), nil)
				case k == 2:
					// A write as replication applies it: another node's.
					d := randomDoc(r)
					d["_id"] = fmt.Sprintf("items/remote-%d-%d", g, i)
					rev := fmt.Sprintf("_remote%d%04dZ", g, i)
					d["_rev"] = rev
					seq := remoteSeq.Add(1)
					if _, err := s.ApplyRemote([]core.RemoteChange{remote(d["_id"].(string), rev, seq, string(mustJSON(d)))}, seq, nil); err != nil {
						t.Error(err)
					}
				default:
					_, _ = s.Insert(ctx, "items", mustJSON(randomDoc(r)), nil)
				}
			}
		}(g)
	}
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for _, w := range watches {
		want, err := s.Find("items", w.q)
		if err != nil {
			t.Fatal(err)
		}
		for {
			w.mu.Lock()
			got := docsText(w.last)
			w.mu.Unlock()
			if got == docsText(want.Docs) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("live result of %v:\n%s\nfresh run:\n%s", w.q.Selector.Fields(), got, docsText(want.Docs))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// applyChanges applies a live result's changes to the last result's docs.
func applyChanges(last [][]byte, changes []core.LiveChange) [][]byte {
	ids := func(d []byte) string {
		var m map[string]any
		_ = json.Unmarshal(d, &m)
		s, _ := m["_id"].(string)
		return s
	}
	type item struct {
		id  string
		doc []byte
	}
	var cur []item
	for _, d := range last {
		cur = append(cur, item{ids(d), d})
	}
	gone := map[string]bool{}
	for _, c := range changes {
		if c.Kind != "added" {
			gone[c.ID] = true
		}
	}
	var kept []item
	for _, it := range cur {
		if !gone[it.id] {
			kept = append(kept, it)
		}
	}
	// Place the added, changed and moved documents at their new index, in
	// index order.
	var put []core.LiveChange
	for _, c := range changes {
		if c.Kind != "removed" {
			put = append(put, c)
		}
	}
	sort.Slice(put, func(i, j int) bool { return put[i].Index < put[j].Index })
	for _, c := range put {
		at := c.Index
		if at > len(kept) {
			at = len(kept)
		}
		kept = append(kept, item{})
		copy(kept[at+1:], kept[at:])
		kept[at] = item{c.ID, c.Doc}
	}
	out := make([][]byte, len(kept))
	for i, it := range kept {
		out[i] = it.doc
	}
	return out
}
