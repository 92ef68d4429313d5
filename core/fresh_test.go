package core_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/revision"
	"github.com/tidwall/gjson"
)

// A generated id is written without a lookup first. These tests give a
// generated id a document beforehand (stored under that id by hand) and
// check that the write then behaves as the general path does: the checks
// against the existing document hold, and a write that fails leaves the
// store, its pending writes and its change feed as they were.
func TestGeneratedIDThatExists(t *testing.T) {
	ctx := context.Background()
	t.Run("another collection: refused, nothing changed", func(t *testing.T) {
		s := newTestStore(t, func(o *core.Options) { o.ChangeFeed = true })
		// orders/1-A is the first HiLo id of orders; customers takes it first.
		taken, err := s.Put(ctx, "customers", []byte(`{"_id":"orders/1-A","name":"squatter"}`))
		if err != nil {
			t.Fatal(err)
		}
		_, head, err := s.Changes(0, 100)
		if err != nil {
			t.Fatal(err)
		}
		pending, _ := s.PendingCount()

		rs, err := s.InsertMany(ctx, "orders", [][]byte{[]byte(`{"n":1}`), []byte(`{"n":2}`)}, &core.WriteOptions{OverwriteMode: core.OverwriteReplace})
		if err != nil {
			t.Fatal(err)
		}
		var e *core.Error
		if rs[0].Err == nil || !errors.As(rs[0].Err, &e) || e.Num != core.NumUniqueConstraint {
			t.Fatalf("first insert: got %+v, want unique constraint (1210)", rs[0])
		}
		if rs[1].Err != nil || rs[1].ID != "orders/2-A" {
			t.Fatalf("second insert: got %+v, want orders/2-A stored", rs[1])
		}
		got, err := s.Get("orders/1-A")
		if err != nil || string(got) != string(taken) {
			t.Fatalf("orders/1-A after the refused write: %s, %v; want %s", got, err, taken)
		}
		es, head2, err := s.Changes(head, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != 1 || es[0].ID != "orders/2-A" || head2 != head+1 {
			t.Fatalf("feed after the batch: %+v (head %d -> %d); want orders/2-A only", es, head, head2)
		}
		if n, _ := s.PendingCount(); n != pending+1 {
			t.Fatalf("pending writes: %d, want %d", n, pending+1)
		}
	})
	t.Run("same collection: replaced on top of it", func(t *testing.T) {
		s := newTestStore(t)
		old, err := s.Put(ctx, "orders", []byte(`{"_id":"orders/1-A","n":0}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Acknowledge(core.Ack{ID: "orders/1-A", Rev: gjson.GetBytes(old, "_rev").String()}); err != nil {
			t.Fatal(err)
		}
		r, err := s.Insert(ctx, "orders", []byte(`{"n":1}`), &core.WriteOptions{OverwriteMode: core.OverwriteReplace, ReturnOld: true})
		if err != nil {
			t.Fatal(err)
		}
		oldRev := gjson.GetBytes(old, "_rev").String()
		if r.ID != "orders/1-A" || r.OldRev != oldRev || string(r.Old) != string(old) {
			t.Fatalf("got %+v; want orders/1-A replaced, old rev %s", r, oldRev)
		}
		p, err := s.PendingWrites(10)
		if err != nil || len(p) != 1 || p[0].BaseRev != oldRev || p[0].Rev != r.Rev {
			t.Fatalf("pending: %+v, %v; want one on top of %s", p, err, oldRev)
		}
	})
	t.Run("conflict mode: refused", func(t *testing.T) {
		s := newTestStore(t)
		if _, err := s.Put(ctx, "orders", []byte(`{"_id":"orders/1-A","n":0}`)); err != nil {
			t.Fatal(err)
		}
		_, err := s.Insert(ctx, "orders", []byte(`{"n":1}`), nil)
		var e *core.Error
		if !errors.As(err, &e) || e.Num != core.NumUniqueConstraint {
			t.Fatalf("got %v, want unique constraint (1210)", err)
		}
		got, _ := s.Get("orders/1-A")
		if gjson.GetBytes(got, "n").Int() != 0 {
			t.Fatalf("orders/1-A changed: %s", got)
		}
	})
}

// TestMadeIDsNewNeverOverwrite: with MadeIDsNew (the edge's ArangoDB door),
// an id the store makes (HiLo, node sequence, identity) that names a stored
// document fails with unique_constraint whatever the overwrite mode, and the
// stored document stays; a given id still follows the mode.
func TestMadeIDsNewNeverOverwrite(t *testing.T) {
	ctx := context.Background()
	taken := []string{"orders/1-A", core.FormatNodeSeqID("orders/", 1, "C"), "orders/1"}
	for _, mode := range []core.OverwriteMode{core.OverwriteReplace, core.OverwriteUpdate, core.OverwriteIgnore, core.OverwriteConflict} {
		t.Run(string(mode), func(t *testing.T) {
			s := newTestStore(t)
			for _, id := range append(taken, "orders/given") {
				if _, err := s.Put(ctx, "orders", []byte(`{"_id":"`+id+`","by":"another"}`)); err != nil {
					t.Fatal(err)
				}
			}
			docs := [][]byte{[]byte(`{"by":"made"}`), []byte(`{"_id":"orders/","by":"made"}`), []byte(`{"_id":"orders|","by":"made"}`)}
			rs, err := s.InsertMany(ctx, "orders", docs, &core.WriteOptions{OverwriteMode: mode, MadeIDsNew: true})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range rs {
				if r.Err == nil || r.Err.Num != core.NumUniqueConstraint {
					t.Errorf("made id %s over a stored document: %+v, want unique constraint (1210)", taken[i], r)
				}
			}
			for _, id := range taken {
				if got, err := s.Get(id); err != nil || gjson.GetBytes(got, "by").String() != "another" {
					t.Errorf("%s after the refused inserts: %s, %v", id, got, err)
				}
			}
			r, err := s.Insert(ctx, "orders", []byte(`{"_id":"orders/given","by":"given"}`), &core.WriteOptions{OverwriteMode: mode, MadeIDsNew: true})
			if wantErr := mode == core.OverwriteConflict; (err != nil) != wantErr {
				t.Errorf("a given id in mode %s: %+v, %v", mode, r, err)
			}
		})
	}
}

// A bulk write stores its documents in shared chunks, with each revision
// held in its document's bytes and its clock values reserved a block at a
// time. Every document must still read back as written, every revision
// be distinct and later than the one before, and a Result.New the caller
// owns (ReturnNew without ShareNew) be its own to write to.
func TestBulkWriteDocumentsAndRevisions(t *testing.T) {
	ctx := context.Background()
	for _, share := range []bool{false, true} {
		s := newTestStore(t)
		before, err := s.Put(ctx, "orders", []byte(`{"n":-1}`))
		if err != nil {
			t.Fatal(err)
		}
		lastRev := gjson.GetBytes(before, "_rev").String()
		// Sizes from tiny to past the chunks' share, some not compact
		// (encoded member by member), so that documents of every kind sit
		// side by side in a chunk.
		const n = 3000
		docs := make([][]byte, n)
		for i := range docs {
			pad := strings.Repeat("x", (i*37)%700)
			if i%5 == 0 {
				pad = strings.Repeat("y", 4500+i%100) // past an eighth of a chunk
			}
			if i%3 == 0 {
				docs[i] = []byte(fmt.Sprintf(`{ "n" : %d, "pad": %q, "_oldRev": "x" }`, i, pad))
			} else {
				docs[i] = []byte(fmt.Sprintf(`{"n":%d,"pad":%q}`, i, pad))
			}
		}
		rs, err := s.InsertMany(ctx, "orders", docs, &core.WriteOptions{ReturnNew: true, ShareNew: share})
		if err != nil {
			t.Fatal(err)
		}
		prev, _, err := revision.Decode(lastRev)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rs {
			if r.Err != nil {
				t.Fatalf("doc %d: %v", i, r.Err)
			}
			v, node, err := revision.Decode(r.Rev)
			if err != nil || node != "C" || v <= prev {
				t.Fatalf("doc %d: _rev %q (%v): not after the one before (%d)", i, r.Rev, err, prev)
			}
			prev = v
			got, err := s.Get(r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(r.New) {
				t.Fatalf("doc %d: stored %s, New %s", i, got, r.New)
			}
			wantPad := strings.Repeat("x", (i*37)%700)
			if i%5 == 0 {
				wantPad = strings.Repeat("y", 4500+i%100)
			}
			d := gjson.ParseBytes(got)
			if d.Get("n").Int() != int64(i) || d.Get("pad").String() != wantPad || d.Get("_rev").String() != r.Rev || d.Get("_oldRev").Exists() {
				t.Fatalf("doc %d stored as %s", i, got)
			}
		}
		if share {
			continue
		}
		// Without ShareNew the caller's copy is its own.
		for _, r := range rs {
			for j := range r.New {
				r.New[j] = '#'
			}
		}
		for i, r := range rs {
			got, err := s.Get(r.ID)
			if err != nil || bytes.ContainsRune(got, '#') || gjson.GetBytes(got, "n").Int() != int64(i) {
				t.Fatalf("doc %d after the caller wrote to New: %s, %v", i, got, err)
			}
		}
	}
}
