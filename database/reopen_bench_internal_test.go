package database

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hilodb/hilodb/core"
)

// withoutIndexes is format 8 snapshot snap as format 3: its items alone.
func withoutIndexes(tb testing.TB, snap []byte) []byte {
	sn, err := readSnapshot(snap)
	if err != nil || sn.format != 8 {
		tb.Fatalf("not a format 8 snapshot: %v", err)
	}
	end, err := readItems(sn.body, sn.count, func(core.Change) error { return nil })
	if err != nil {
		tb.Fatal(err)
	}
	out := append(make([]byte, snapHeaderLen), sn.body[:end]...)
	putSnapHeader(out, sn.seq, sn.count, false)
	return out
}

// BenchmarkReopenSavedIndexes reopens a store of 100,000 documents with
// two indexes and answers a first query through one of them, from a
// snapshot that keeps the indexes' entries (saved) and from one that does
// not, whose first query builds the index (built), every document in
// sync with the server, and from one whose documents are all still to be
// pushed (pending): side by side in one process, natively or under GOOS=js
// in Node.
func BenchmarkReopenSavedIndexes(b *testing.B) {
	ctx := context.Background()
	st, err := core.Open(":memory:", core.Options{Node: "B"})
	if err != nil {
		b.Fatal(err)
	}
	held := &MemStorage{}
	j, err := OpenJournal(held, st, JournalOptions{CompactAt: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range [][]string{{"owner", "createdAt"}, {"owner", "status", "createdAt"}} {
		if _, _, err := st.CreateIndex(ctx, "todos", core.IndexDef{Fields: f}); err != nil {
			b.Fatal(err)
		}
	}
	const n = 100000
	batch := make([][]byte, 0, 10000)
	for i := range n {
		batch = append(batch, fmt.Appendf(nil, `{"_id":"todos/%d","title":"todo number %d","status":%q,"priority":%d,"createdAt":%d,"owner":"user%d","tags":["a","b"]}`,
			i, i, []string{"open", "done", "archived"}[i%3], i%5, 1_700_000_000_000+i*1000, i%1000))
		if len(batch) == cap(batch) {
			if _, err := st.InsertMany(ctx, "todos", batch, nil); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := j.Compact(); err != nil {
		b.Fatal(err)
	}
	pending := append([]byte(nil), held.Snap...)
	// The server accepted every write: no document is pending any more.
	for {
		ws, err := st.PendingWrites(10000)
		if err != nil {
			b.Fatal(err)
		}
		if len(ws) == 0 {
			break
		}
		acks := make([]core.Ack, len(ws))
		for i, w := range ws {
			acks[i] = core.Ack{ID: w.ID, Rev: w.Rev}
		}
		if err := st.Acknowledge(acks...); err != nil {
			b.Fatal(err)
		}
	}
	if err := j.Compact(); err != nil {
		b.Fatal(err)
	}
	st.Close()
	saved := held.Snap
	built := withoutIndexes(b, saved)
	q := []byte(`{"selector":{"owner":"user7"},"sort":[{"createdAt":"desc"}],"limit":20}`)
	for _, c := range []struct {
		name  string
		snap  []byte
		build bool
	}{{"saved", saved, false}, {"built", built, true}, {"pending", pending, false}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.snap)))
			var opening, querying time.Duration
			for b.Loop() {
				st, err := core.Open(":memory:", core.Options{Node: "B"})
				if err != nil {
					b.Fatal(err)
				}
				snap := append([]byte(nil), c.snap...) // handed over to the store
				t0 := time.Now()
				if _, err := OpenJournal(&MemStorage{Snap: snap}, st, JournalOptions{}); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				res, err := st.FindJSON("todos", q)
				opening, querying = opening+t1.Sub(t0), querying+time.Since(t1)
				if err != nil || len(res.Docs) != 20 || res.Plan.Built != c.build {
					b.Fatalf("first query: %d documents, plan %+v, %v", len(res.Docs), res.Plan, err)
				}
				st.Close()
			}
			b.ReportMetric(float64(opening.Milliseconds())/float64(b.N), "open-ms/op")
			b.ReportMetric(float64(querying.Milliseconds())/float64(b.N), "query-ms/op")
		})
	}
}
