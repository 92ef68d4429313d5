package core_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hilodb/hilodb/core"
)

func TestChangeFeed(t *testing.T) {
	st, err := core.Open(":memory:", core.Options{Node: "T", ChangeFeed: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c"} {
		if _, err := st.Put(ctx, "orders", []byte(`{"_key":"`+k+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	es, last, err := st.Changes(0, 0)
	if err != nil || len(es) != 3 || last != 3 || es[0].ID != "orders/a" || es[2].Seq != 3 || es[0].Rev == "" || len(es[0].Doc) == 0 {
		t.Fatalf("Changes(0) = %+v, %d, %v", es, last, err)
	}
	// a written again moves to the end, once; b deleted shows as deleted.
	st.Put(ctx, "orders", []byte(`{"_key":"a","v":2}`))
	if err := st.Delete("orders/b"); err != nil {
		t.Fatal(err)
	}
	es, last, _ = st.Changes(3, 0)
	if len(es) != 2 || es[0].ID != "orders/a" || es[1].ID != "orders/b" || !es[1].Deleted || es[1].Doc != nil || last != 5 {
		t.Fatalf("Changes(3) = %+v, %d", es, last)
	}
	all, _, _ := st.Changes(0, 0)
	if len(all) != 3 || all[0].ID != "orders/c" {
		t.Errorf("each document once, at its latest write: %+v", all)
	}
	if es, l, _ := st.Changes(0, 1); len(es) != 1 || l != es[0].Seq {
		t.Errorf("limit 1: %+v %d", es, l)
	}
	var e *core.Error
	if _, _, err := st.Changes(0, -1); !errors.As(err, &e) {
		t.Errorf("bad limit: %v", err)
	}
	plain, _ := core.Open(":memory:", core.Options{})
	defer plain.Close()
	if _, _, err := plain.Changes(0, 0); !errors.As(err, &e) {
		t.Errorf("a store without a feed: %v", err)
	}
}

// recorder is a Journal that keeps what it is given.
type recorder struct{ txs [][]core.Change }

func (r *recorder) Commit(cs []core.Change) func() error {
	r.txs = append(r.txs, cs)
	return func() error { return nil }
}

func TestFeedHead(t *testing.T) {
	st, err := core.Open(":memory:", core.Options{Node: "T", ChangeFeed: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec := &recorder{}
	st.SetJournal(rec)
	if h, err := st.FeedHead(); err != nil || h != 0 {
		t.Fatalf("empty FeedHead() = %d, %v", h, err)
	}
	ctx := context.Background()
	for i, k := range []string{"a", "b", "a"} {
		if _, err := st.Put(ctx, "orders", []byte(`{"_key":"`+k+`"}`)); err != nil {
			t.Fatal(err)
		}
		want := int64(i + 1)
		if h, _ := st.FeedHead(); h != want {
			t.Errorf("after write %d: FeedHead() = %d, want %d", i+1, h, want)
		}
		got, moved := core.FeedHeadOf(rec.txs[len(rec.txs)-1])
		if !moved || got != want {
			t.Errorf("write %d: FeedHeadOf = %d, %v; want %d, true", i+1, got, moved, want)
		}
		var ids []string
		for _, c := range rec.txs[len(rec.txs)-1] {
			if id, ok := core.DocIDOf(c); ok {
				ids = append(ids, id)
			}
		}
		if len(ids) != 1 || ids[0] != "orders/"+k {
			t.Errorf("write %d: DocIDOf gave %v", i+1, ids)
		}
	}
	if _, moved := core.FeedHeadOf([]core.Change{{Key: "meta/x", Value: "1"}}); moved {
		t.Error("FeedHeadOf: a transaction without documents moved the head")
	}
	plain, _ := core.Open(":memory:", core.Options{})
	defer plain.Close()
	var e *core.Error
	if _, err := plain.FeedHead(); !errors.As(err, &e) {
		t.Errorf("a store without a feed: %v", err)
	}
}
