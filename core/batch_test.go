package core_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/tidwall/gjson"
)

func TestSaveBatch(t *testing.T) {
	st, err := core.Open(":memory:", core.Options{Node: "T"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	rs, err := st.SaveBatch(ctx, []core.BatchItem{
		{ID: "orders/a", Collection: "Orders", Body: []byte(`{"n":1}`), TypeName: "Order", MustBeNew: true},
		{ID: "", Collection: "@empty", Body: []byte(`{"x":1}`)},
		{ID: "companies/", Collection: "Companies", Body: []byte(`{"name":"c"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].ID != "orders/a" || len(rs[1].ID) != 36 || !strings.HasPrefix(rs[2].ID, "companies/0") {
		t.Errorf("ids %q %q %q", rs[0].ID, rs[1].ID, rs[2].ID)
	}
	doc, _ := st.Get("orders/a")
	if gjson.GetBytes(doc, `@metadata.Raven-Node-Type`).String() != "Order" || gjson.GetBytes(doc, `@metadata.@collection`).String() != "Orders" {
		t.Errorf("stored %s", doc)
	}
	// All or nothing: a stale _rev fails the batch and nothing is written.
	_, err = st.SaveBatch(ctx, []core.BatchItem{
		{ID: "orders/b", Collection: "Orders", Body: []byte(`{"n":2}`)},
		{ID: "orders/a", Collection: "Orders", Body: []byte(`{"n":3}`), IfRev: "_stale---"},
	})
	var e *core.Error
	if !errors.As(err, &e) || e.Num != 1200 {
		t.Fatalf("stale _rev in a batch: %v, want conflict 1200", err)
	}
	if _, err := st.Get("orders/b"); err == nil {
		t.Error("a failed batch wrote part of itself")
	}
	// A new entity whose id exists is a conflict with MustBeNew.
	if _, err := st.SaveBatch(ctx, []core.BatchItem{{ID: "orders/a", Collection: "Orders", Body: []byte(`{}`), MustBeNew: true}}); err == nil {
		t.Error("MustBeNew over an existing document succeeded")
	}
	// Deletes, of any collection; a missing one is fine without IfRev.
	if _, err := st.SaveBatch(ctx, []core.BatchItem{{Delete: true, ID: "orders/a"}, {Delete: true, ID: "nope/1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get("orders/a"); err == nil {
		t.Error("deleted document still there")
	}
	if _, err := st.SaveBatch(ctx, []core.BatchItem{{ID: "x", Collection: "bad name!", Body: []byte(`{}`)}}); err == nil {
		t.Error("illegal collection accepted")
	}
}
