package core_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core"
)

// A write under WithReceipt stores its receipt in its own transaction (the
// journal sees both in one commit); a write that fails stores none; a later
// write under the same key replaces it; receipts are dropped by key.
func TestReceipts(t *testing.T) {
	st := newTestStore(t, func(o *core.Options) { o.ChangeFeed = true })
	rec := &recorder{}
	st.SetJournal(rec)
	ctx := context.Background()

	if _, ok, err := st.ReceiptOf("tab1/0"); ok || err != nil {
		t.Fatalf("receipt before any write: %v, %v", ok, err)
	}
	doc, err := st.Put(core.WithReceipt(ctx, "tab1/0", 7), "orders", []byte(`{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	id := decode(t, doc)["_id"].(string)
	r, ok, err := st.ReceiptOf("tab1/0")
	if err != nil || !ok || r.Seq != 7 || len(r.Items) != 1 || r.Items[0].ID != id {
		t.Fatalf("receipt after a put of %s: %+v %v %v", id, r, ok, err)
	}
	last := rec.txs[len(rec.txs)-1]
	var withDoc, withReceipt bool
	for _, c := range last {
		withDoc = withDoc || c.Key == "doc/"+id
		withReceipt = withReceipt || strings.HasPrefix(c.Key, "rcpt/tab1/0")
	}
	if !withDoc || !withReceipt {
		t.Errorf("the put's transaction holds the document: %v, the receipt: %v; want both in one commit", withDoc, withReceipt)
	}

	// A failed write leaves the receipt as it was.
	if _, err := st.Insert(ctx, "orders", []byte(`{"_key":"dup"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Insert(core.WithReceipt(ctx, "tab1/0", 8), "orders", []byte(`{"_key":"dup"}`), nil); err == nil {
		t.Fatal("a second insert of the same key was stored")
	}
	if r, _, _ := st.ReceiptOf("tab1/0"); r.Seq != 7 {
		t.Errorf("after a failed write the receipt holds seq %d, want 7", r.Seq)
	}

	// A batch records each document's outcome; the key is replaced.
	rs, err := st.InsertMany(core.WithReceipt(ctx, "tab1/0", 9), "orders", [][]byte{[]byte(`{"_key":"a"}`), []byte(`{"_key":"a"}`)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, _, _ = st.ReceiptOf("tab1/0")
	if r.Seq != 9 || len(r.Items) != 2 || r.Items[0].ID != rs[0].ID || r.Items[1].Num != rs[1].Err.Num || r.Items[1].Message == "" {
		t.Errorf("batch receipt %+v for results %+v", r, rs)
	}

	// Receipts are not documents: not in the change feed, not pending.
	entries, _, err := st.Changes(0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.ID, "tab1") {
			t.Errorf("receipt in the change feed: %+v", e)
		}
	}
	pending, err := st.PendingWrites(100)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pending {
		if strings.Contains(p.ID, "tab1") {
			t.Errorf("receipt pending for the server: %+v", p)
		}
	}

	// A session's batch (SaveBatch) stores one too.
	brs, err := st.SaveBatch(core.WithReceipt(ctx, "tab1/1", 10), []core.BatchItem{{Collection: "orders", ID: "orders/s1", Body: []byte(`{"n":3}`)}, {Delete: true, ID: "orders/a"}})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok, _ := st.ReceiptOf("tab1/1"); !ok || r.Seq != 10 || len(r.Items) != 2 || r.Items[0].ID != brs[0].ID {
		t.Errorf("batch receipt %+v (%v) for %+v", r, ok, brs)
	}

	// A delete stores one; a delete that fails stores none.
	if err := st.DeleteContext(core.WithReceipt(ctx, "tab1/2", 11), "orders/s1"); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteContext(core.WithReceipt(ctx, "tab1/2", 12), "orders/none"); err == nil {
		t.Fatal("deleting a missing document succeeded")
	}
	if r, ok, _ := st.ReceiptOf("tab1/2"); !ok || r.Seq != 11 || r.Items[0].ID != "orders/s1" {
		t.Errorf("delete receipt %+v (%v), want seq 11 for orders/s1", r, ok)
	}

	if _, err := st.Put(core.WithReceipt(ctx, "tab2/0", 1), "orders", []byte(`{"n":2}`)); err != nil {
		t.Fatal(err)
	}
	n, err := st.DropReceipts(func(key string) bool { return strings.HasPrefix(key, "tab1/") })
	if err != nil || n != 3 {
		t.Fatalf("DropReceipts(tab1/) = %d, %v; want 3", n, err)
	}
	if _, ok, _ := st.ReceiptOf("tab1/0"); ok {
		t.Error("tab1's receipt is still there")
	}
	if _, ok, _ := st.ReceiptOf("tab2/0"); !ok {
		t.Error("tab2's receipt was dropped with tab1's")
	}
}
