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
