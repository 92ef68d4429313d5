package database_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/database"
)

// TestSavedIndexesAtReopen: a compaction keeps the built indexes' entries
// in the snapshot (format 8); a reopen starts with them built, each with
// its document, the writes logged after the snapshot kept in them, and
// every answer through them equals a scan's. An index defined after the snapshot is built by the
// first query that needs it.
func TestSavedIndexesAtReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, j, d := open(t, dir, database.JournalOptions{})
	for _, f := range [][]string{{"status", "total"}, {"total"}} {
		if _, _, err := st.CreateIndex(ctx, "orders", core.IndexDef{Fields: f}); err != nil {
			t.Fatal(err)
		}
	}
	putOrder := func(st *core.Store, i int) {
		t.Helper()
		doc := fmt.Sprintf(`{"_id":"orders/%d","status":%q,"total":%d}`, i, []string{"open", "closed", "void"}[i%3], (i*37)%100)
		if _, err := st.Put(ctx, "orders", []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 600 {
		putOrder(st, i)
	}
	if err := j.Compact(); err != nil {
		t.Fatal(err)
	}
	snap, err := os.ReadFile(filepath.Join(dir, "snapshot"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(snap), "hilodb-snapshot 8 ") {
		t.Fatalf("snapshot header %q, want format 8 with two built indexes", snap[:20])
	}
	// Logged after the snapshot: new documents, replaced ones (their
	// entries move), removed ones, and an index of its own.
	for i := 500; i < 700; i++ {
		putOrder(st, i)
	}
	for i := 100; i < 300; i += 3 {
		doc := fmt.Sprintf(`{"_id":"orders/%d","status":"open","total":%d}`, i, 100+i)
		if _, err := st.Put(ctx, "orders", []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	// Rewritten with the same indexed values: the entries stay, their
	// documents change.
	for i := 301; i < 400; i += 7 {
		doc := fmt.Sprintf(`{"_id":"orders/%d","status":%q,"total":%d,"note":"rewritten"}`, i, []string{"open", "closed", "void"}[i%3], (i*37)%100)
		if _, err := st.Put(ctx, "orders", []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 {
		if _, err := st.Remove(ctx, "orders", fmt.Sprint(i*5), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := st.CreateIndex(ctx, "orders", core.IndexDef{Name: "late", Fields: []string{"status"}}); err != nil {
		t.Fatal(err)
	}
	if err := j.Sync(); err != nil {
		t.Fatal(err)
	}
	st.Close()
	d.Close()

	st2, _, _ := open(t, dir, database.JournalOptions{})
	for _, c := range []struct {
		q     string
		index string
		built bool
	}{
		{`{"selector":{"status":"open"},"sort":[{"total":"desc"}]}`, "idx-status-total", false},
		{`{"selector":{"total":{"$gte":10,"$lt":60}}}`, "idx-total", false},
		{`{"selector":{"status":"void","total":{"$gt":90}}}`, "idx-status-total", false},
		{`{"selector":{"status":"closed"},"use_index":"late"}`, "late", true},
	} {
		res, err := st2.FindJSON("orders", []byte(c.q))
		if err != nil {
			t.Fatal(err)
		}
		if res.Plan.Index != c.index || res.Plan.Built != c.built {
			t.Fatalf("%s: plan %+v, want index %s built by the query %v", c.q, res.Plan, c.index, c.built)
		}
		// Every entry came back with its document: none is looked up.
		if res.Plan.Fetched != 0 {
			t.Fatalf("%s: %d documents looked up, want the index's own", c.q, res.Plan.Fetched)
		}
		if got, want := docTexts(res.Docs), scanMatches(t, st2, "orders", c.q); got != want {
			t.Fatalf("%s: through %s\n%s\na scan finds\n%s", c.q, res.Plan.Index, got, want)
		}
	}
}

// TestSnapshotWithoutIndexesStaysFormat3: a store with no built index
// writes format 3, which builds that know no format 4 read.
func TestSnapshotWithoutIndexesStaysFormat3(t *testing.T) {
	dir := t.TempDir()
	st, j, _ := open(t, dir, database.JournalOptions{})
	put(t, st, "a", 1)
	if err := j.Compact(); err != nil {
		t.Fatal(err)
	}
	snap, err := os.ReadFile(filepath.Join(dir, "snapshot"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(snap), "hilodb-snapshot 3 ") {
		t.Fatalf("snapshot header %q, want format 3", snap[:20])
	}
}

// scanMatches lists, sorted, collection's documents q's selector matches,
// read page by page without any index.
func scanMatches(t *testing.T, st *core.Store, collection, q string) string {
	t.Helper()
	pq, err := core.ParseQuery([]byte(q))
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	for after := ""; ; {
		p, err := st.List(collection, after, core.MaxListLimit)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range p.Docs {
			if pq.Selector.Match(d) {
				want = append(want, d)
			}
		}
		if after = p.Next; after == "" {
			break
		}
	}
	return docTexts(want)
}

// docTexts is docs as sorted lines.
func docTexts(docs [][]byte) string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = string(d)
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// TestReopenLeavesSnapshotBytes: a reopen whose snapshot holds pending
// marks (so its items and the loaded ones are numbered apart, and each
// entry's item is mapped) reads the entries' table without writing into
// the snapshot's bytes, which the store reads in place, and its index
// answers as a scan does.
func TestReopenLeavesSnapshotBytes(t *testing.T) {
	ctx := context.Background()
	st, err := core.Open(":memory:", core.Options{Node: "A"})
	if err != nil {
		t.Fatal(err)
	}
	held := &database.MemStorage{}
	j, err := database.OpenJournal(held, st, database.JournalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.CreateIndex(ctx, "orders", core.IndexDef{Fields: []string{"total"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if _, err := st.Put(ctx, "orders", fmt.Appendf(nil, `{"_id":"orders/%d","total":%d}`, i, i%7)); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Compact(); err != nil {
		t.Fatal(err)
	}
	st.Close()
	snap := held.Snap
	before := bytes.Clone(snap)

	st2, err := core.Open(":memory:", core.Options{Node: "A"})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if _, err := database.OpenJournal(&database.MemStorage{Snap: snap}, st2, database.JournalOptions{}); err != nil {
		t.Fatal(err)
	}
	if n, err := st2.PendingCount(); err != nil || n != 200 {
		t.Fatalf("%d pending after the reopen (%v), want 200", n, err)
	}
	res, err := st2.FindJSON("orders", []byte(`{"selector":{"total":3}}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Plan.Index != "idx-total" || res.Plan.Built || res.Plan.Fetched != 0 || len(res.Docs) != 29 {
		t.Fatalf("plan %+v, %d documents: want idx-total restored, its 29 documents held", res.Plan, len(res.Docs))
	}
	if !bytes.Equal(snap, before) {
		t.Fatal("the reopen wrote into the snapshot's bytes")
	}
}
