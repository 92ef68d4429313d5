package core_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core"
)

// pendingState is a store's pending writes, documents included, as text
// to compare.
func pendingState(t *testing.T, s *core.Store) []string {
	t.Helper()
	p, err := s.PendingWrites(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(p))
	for i, w := range p {
		out[i] = fmt.Sprintf("%s base=%q rev=%q deleted=%v doc=%s", w.ID, w.BaseRev, w.Rev, w.Deleted, w.Doc)
	}
	return out
}

// pendingMix leaves s with pending writes of every kind: new documents, one
// written again after its acknowledgement, a deletion of a synced document,
// and an acknowledged one in sync.
func pendingMix(t *testing.T, s *testStore) {
	t.Helper()
	ctx := context.Background()
	revs := map[string]string{}
	for _, k := range []string{"a", "b", "c", "d"} {
		out, err := s.Put(ctx, "notes", []byte(`{"_key":"`+k+`","v":1}`))
		if err != nil {
			t.Fatal(err)
		}
		revs[k] = decode(t, out)["_rev"].(string)
	}
	acks := []core.Ack{{ID: "notes/b", Rev: revs["b"]}, {ID: "notes/c", Rev: revs["c"]}, {ID: "notes/d", Rev: revs["d"]}}
	if err := s.Acknowledge(acks...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "notes", []byte(`{"_key":"b","v":2}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("notes/c"); err != nil {
		t.Fatal(err)
	}
	if got := len(pendingState(t, s.Store)); got != 3 {
		t.Fatalf("pending writes: %d, want 3 (a, b, c)", got)
	}
}

// itemsOf returns what s.Items walks, as changes to load.
func itemsOf(t *testing.T, s *core.Store) []core.Change {
	t.Helper()
	var items []core.Change
	err := s.Items(nil, func(k, v string) error {
		// Valid only during the call: kept as copies.
		items = append(items, core.Change{Key: strings.Clone(k), Value: strings.Clone(v)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return items
}

func TestPendingWritesSurviveSaveAndLoad(t *testing.T) {
	s := newTestStore(t)
	pendingMix(t, s)
	want := pendingState(t, s.Store)
	var buf bytes.Buffer
	if err := s.Save(&buf); err != nil {
		t.Fatal(err)
	}
	s2 := newTestStore(t)
	if err := s2.Load(&buf); err != nil {
		t.Fatal(err)
	}
	if got := pendingState(t, s2.Store); !slices.Equal(got, want) {
		t.Fatalf("after Load:\n%q\nwant\n%q", got, want)
	}
	if n, _ := s2.PendingCount(); n != len(want) {
		t.Fatalf("PendingCount after Load: %d, want %d", n, len(want))
	}
}

func TestItemsAndLoadChangesKeepPendingWrites(t *testing.T) {
	s := newTestStore(t)
	pendingMix(t, s)
	want := pendingState(t, s.Store)
	items := itemsOf(t, s.Store)
	// In key order, the pending marks (in no order among themselves) where
	// their keys would be.
	byGroup := func(a, b core.Change) int {
		if strings.HasPrefix(a.Key, "dirty/") && strings.HasPrefix(b.Key, "dirty/") {
			return 0
		}
		return strings.Compare(a.Key, b.Key)
	}
	if !slices.IsSortedFunc(items, byGroup) {
		t.Fatalf("Items not in key order: %v", items)
	}
	dirty := 0
	for _, c := range items {
		if strings.HasPrefix(c.Key, "dirty/") {
			dirty++
		}
	}
	if dirty != len(want) {
		t.Fatalf("Items gave %d pending marks, want %d", dirty, len(want))
	}
	s2 := newTestStore(t)
	err := s2.LoadChanges(func(apply func(core.Change) error) error {
		for _, c := range items {
			if err := apply(c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := pendingState(t, s2.Store); !slices.Equal(got, want) {
		t.Fatalf("after LoadChanges:\n%q\nwant\n%q", got, want)
	}
}

// journalFunc is a Journal that calls a function.
type journalFunc func([]core.Change)

func (f journalFunc) Commit(c []core.Change) func() error { f(c); return func() error { return nil } }

func TestJournalReplaysPendingWrites(t *testing.T) {
	s := newTestStore(t)
	var log [][]core.Change
	s.SetJournal(journalFunc(func(c []core.Change) { log = append(log, slices.Clone(c)) }))
	pendingMix(t, s)
	want := pendingState(t, s.Store)
	s2 := newTestStore(t)
	for _, c := range log {
		if err := s2.Replay(c); err != nil {
			t.Fatal(err)
		}
	}
	if got := pendingState(t, s2.Store); !slices.Equal(got, want) {
		t.Fatalf("after Replay:\n%q\nwant\n%q", got, want)
	}
	// Acknowledging everything journals the marks' removal.
	p, _ := s.PendingWrites(100)
	acks := make([]core.Ack, len(p))
	for i, w := range p {
		acks[i] = core.Ack{ID: w.ID, Rev: w.Rev}
	}
	log = nil
	if err := s.Acknowledge(acks...); err != nil {
		t.Fatal(err)
	}
	for _, c := range log {
		if err := s2.Replay(c); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := s2.PendingCount(); n != 0 {
		t.Fatalf("replayed acknowledgements left %d pending", n)
	}
}

// A bulk write journals its documents' marks cut from shared chunks: they
// replay into the same pending writes, whatever the ids' lengths.
func TestJournalReplaysABulkWritesMarks(t *testing.T) {
	s := newTestStore(t)
	var log [][]core.Change
	s.SetJournal(journalFunc(func(c []core.Change) { log = append(log, slices.Clone(c)) }))
	docs := make([][]byte, 3000)
	for i := range docs {
		// Keys of 1 to 200 bytes: marks of many sizes, some across the
		// end of a chunk.
		docs[i] = []byte(fmt.Sprintf(`{"_key":"k%d-%s","v":%d}`, i, strings.Repeat("x", i%200), i))
	}
	rs, err := s.InsertMany(context.Background(), "notes", docs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if r.Err != nil {
			t.Fatalf("document %d: %v", i, r.Err)
		}
	}
	want := pendingState(t, s.Store)
	if len(want) != len(docs) {
		t.Fatalf("pending writes: %d, want %d", len(want), len(docs))
	}
	s2 := newTestStore(t)
	for _, c := range log {
		if err := s2.Replay(c); err != nil {
			t.Fatal(err)
		}
	}
	if got := pendingState(t, s2.Store); !slices.Equal(got, want) {
		t.Fatalf("after Replay: %d pending writes, want %d (first differing: %q)", len(got), len(want), firstDiff(got, want))
	}
}

// firstDiff returns the first entry where got and want differ.
func firstDiff(got, want []string) [2]string {
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return [2]string{g, w}
		}
	}
	return [2]string{}
}

func TestFailedTransactionPutsPendingMarksBack(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	pendingMix(t, s)
	want := pendingState(t, s.Store)
	// One transaction writes a new document, writes pending b again and
	// deletes c's tombstone's base, then fails on a precondition: nothing
	// of it may stay, pending marks included.
	_, err := s.SaveBatch(ctx, []core.BatchItem{
		{ID: "notes/e", Collection: "notes", Body: []byte(`{"v":1}`)},
		{ID: "notes/b", Collection: "notes", Body: []byte(`{"v":3}`)},
		{ID: "notes/a", Delete: true},
		{ID: "notes/d", Delete: true, IfRev: "_not_its_rev"},
	})
	if !errors.Is(err, core.ErrConflict) {
		t.Fatalf("batch: %v, want a conflict", err)
	}
	if got := pendingState(t, s.Store); !slices.Equal(got, want) {
		t.Fatalf("after the failed batch:\n%q\nwant\n%q", got, want)
	}
	if _, err := s.Get("notes/e"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("notes/e after the failed batch: %v", err)
	}
	// A push reads them as before, and a later write goes on normally.
	if _, err := s.Put(ctx, "notes", []byte(`{"_key":"e"}`)); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.PendingCount(); n != len(want)+1 {
		t.Fatalf("pending: %d, want %d", n, len(want)+1)
	}
}

func TestPendingWritesAfterWalksInIDOrder(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	// Written out of id order, some acknowledged, some written again.
	var keys []string
	for i := range 300 {
		k := fmt.Sprintf("k%d", (i*7919)%300)
		keys = append(keys, "notes/"+k)
		if _, err := s.Put(ctx, "notes", []byte(`{"_key":"`+k+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	p, _ := s.PendingWrites(1000)
	var acks []core.Ack
	for i, w := range p {
		if i%3 == 0 {
			acks = append(acks, core.Ack{ID: w.ID, Rev: w.Rev})
		}
	}
	if err := s.Acknowledge(acks...); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	for _, a := range acks {
		delete(want, a.ID)
	}
	// Pages of 17, the cursor the last id of each.
	var got []string
	after := ""
	for {
		page, err := s.PendingWritesAfter(after, 17)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, w := range page {
			got = append(got, w.ID)
		}
		after = page[len(page)-1].ID
		if len(got) > 1000 {
			t.Fatal("the walk does not end")
		}
	}
	if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Fatalf("not ascending and unique: %q", got)
	}
	if len(got) != len(want) {
		t.Fatalf("walked %d, want %d", len(got), len(want))
	}
	for _, id := range got {
		if !want[id] {
			t.Fatalf("walked %q, which is not pending", id)
		}
	}
}

func TestOpenTakesOnlyMemory(t *testing.T) {
	_, err := core.Open(t.TempDir()+"/store.db", core.Options{})
	if !errors.Is(err, core.ErrBadParameter) {
		t.Fatalf("Open of a file: %v, want ErrBadParameter", err)
	}
}

func TestFailedLoadLeavesNoPendingMarks(t *testing.T) {
	s := newTestStore(t)
	pendingMix(t, s)
	want := pendingState(t, s.Store)
	items := itemsOf(t, s.Store)
	fill := func(upTo int, fail error) func(func(core.Change) error) error {
		return func(apply func(core.Change) error) error {
			for _, c := range items[:upTo] {
				if err := apply(c); err != nil {
					return err
				}
			}
			return fail
		}
	}
	broken := errors.New("snapshot cut short")
	for _, into := range []string{"an empty store", "a store with a pending write"} {
		s2 := newTestStore(t)
		var before []string
		if into != "an empty store" {
			if _, err := s2.Put(context.Background(), "other", []byte(`{"_key":"z"}`)); err != nil {
				t.Fatal(err)
			}
			before = pendingState(t, s2.Store)
		}
		// Every mark applied, then the load fails: none of them may stay.
		if err := s2.LoadChanges(fill(len(items), broken)); !errors.Is(err, broken) {
			t.Fatalf("%s: failed load: %v", into, err)
		}
		if got := pendingState(t, s2.Store); !slices.Equal(got, before) {
			t.Fatalf("%s: after a failed load:\n%q\nwant\n%q", into, got, before)
		}
		if into != "an empty store" {
			continue
		}
		// And a load after it gives the whole store.
		if err := s2.LoadChanges(fill(len(items), nil)); err != nil {
			t.Fatal(err)
		}
		if got := pendingState(t, s2.Store); !slices.Equal(got, want) {
			t.Fatalf("after a load:\n%q\nwant\n%q", got, want)
		}
	}
}
