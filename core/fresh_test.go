package core_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hilodb/hilodb/core"
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
