package core_test

import (
	"context"
	"reflect"
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
	// Put answers with the stored document (ReturnNew), but its receipt
	// does not keep it: the answer is read from the store again.
	if it := r.Items[0]; len(it.New) != 0 || len(it.Old) != 0 || it.Rev == "" {
		t.Errorf("a put's receipt item %+v: want its revision and no document", it)
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

// receiptItemOf is the ReceiptItem a write's result should leave.
func receiptItemOf(r core.Result) core.ReceiptItem {
	if r.Err != nil {
		return core.ReceiptItem{Code: r.Err.Code, Num: r.Err.Num, Message: r.Err.Message, Key: r.Err.Key, Rev: r.Err.Rev}
	}
	return core.ReceiptItem{ID: r.ID, Key: r.Key, Rev: r.Rev, OldRev: r.OldRev, New: r.New, Old: r.Old}
}

// Every collection write stores its receipt in its own transaction, with
// what its answer is rebuilt from (each result's header, the documents it
// was asked to return, each item's error); a write that fails leaves the
// receipt stored before it as it was.
func TestCollectionWriteReceipts(t *testing.T) {
	st := newTestStore(t)
	rec := &recorder{}
	st.SetJournal(rec)
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		if _, err := st.Insert(ctx, "orders", []byte(`{"_key":"`+k+`","n":0}`), nil); err != nil {
			t.Fatal(err)
		}
	}
	both := &core.WriteOptions{ReturnNew: true, ReturnOld: true}
	one := func(r core.Result, err error) ([]core.Result, error) { return []core.Result{r}, err }
	docs := func(ds ...string) [][]byte {
		out := make([][]byte, len(ds))
		for i, d := range ds {
			out[i] = []byte(d)
		}
		return out
	}
	tests := []struct {
		name  string
		write func(ctx context.Context) ([]core.Result, error)
		doc   string // a document the write changes: in the receipt's commit
		fail  bool
	}{
		{"insert", func(ctx context.Context) ([]core.Result, error) {
			return one(st.Insert(ctx, "orders", []byte(`{"_key":"i1"}`), &core.WriteOptions{ReturnNew: true}))
		}, "doc/orders/i1", false},
		{"insert silent", func(ctx context.Context) ([]core.Result, error) {
			return one(st.Insert(ctx, "orders", []byte(`{"_key":"i2"}`), &core.WriteOptions{Silent: true}))
		}, "doc/orders/i2", false},
		{"insert overwriting", func(ctx context.Context) ([]core.Result, error) {
			return one(st.Insert(ctx, "orders", []byte(`{"_key":"i1","n":2}`), &core.WriteOptions{OverwriteMode: core.OverwriteReplace, ReturnOld: true}))
		}, "doc/orders/i1", false},
		{"insert existing", func(ctx context.Context) ([]core.Result, error) {
			return one(st.Insert(ctx, "orders", []byte(`{"_key":"a"}`), nil))
		}, "", true},
		{"insertMany", func(ctx context.Context) ([]core.Result, error) {
			return st.InsertMany(ctx, "orders", docs(`{"_key":"m1"}`, `{"_key":"a"}`), both)
		}, "doc/orders/m1", false},
		{"replace", func(ctx context.Context) ([]core.Result, error) {
			return one(st.Replace(ctx, "orders", "a", []byte(`{"n":1}`), both))
		}, "doc/orders/a", false},
		{"replace stale", func(ctx context.Context) ([]core.Result, error) {
			return one(st.Replace(ctx, "orders", "a", []byte(`{"n":1}`), &core.WriteOptions{IfMatch: "_stale"}))
		}, "", true},
		{"replaceMany", func(ctx context.Context) ([]core.Result, error) {
			return st.ReplaceMany(ctx, "orders", docs(`{"_key":"b","n":2}`, `{"_key":"none"}`), &core.WriteOptions{ReturnOld: true})
		}, "doc/orders/b", false},
		{"update", func(ctx context.Context) ([]core.Result, error) {
			return one(st.Update(ctx, "orders", "c", []byte(`{"m":3}`), both))
		}, "doc/orders/c", false},
		{"update missing", func(ctx context.Context) ([]core.Result, error) {
			return one(st.Update(ctx, "orders", "none", []byte(`{"m":3}`), nil))
		}, "", true},
		{"updateMany", func(ctx context.Context) ([]core.Result, error) {
			return st.UpdateMany(ctx, "orders", docs(`{"_key":"d","m":4}`, `{"_key":"c","m":5}`), &core.WriteOptions{ReturnNew: true})
		}, "doc/orders/d", false},
		{"remove", func(ctx context.Context) ([]core.Result, error) {
			return one(st.Remove(ctx, "orders", "e", &core.WriteOptions{ReturnOld: true}))
		}, "doc/orders/e", false},
		{"remove missing", func(ctx context.Context) ([]core.Result, error) {
			return one(st.Remove(ctx, "orders", "e", nil))
		}, "", true},
		{"removeMany", func(ctx context.Context) ([]core.Result, error) {
			return st.RemoveMany(ctx, "orders", docs(`"f"`, `"none"`), nil)
		}, "doc/orders/f", false},
		{"create collection", func(ctx context.Context) ([]core.Result, error) {
			return []core.Result{{ID: "invoices"}}, st.CreateCollectionContext(ctx, "invoices", core.CollectionOptions{})
		}, "col/invoices", false},
		{"create existing collection", func(ctx context.Context) ([]core.Result, error) {
			return nil, st.CreateCollectionContext(ctx, "invoices", core.CollectionOptions{})
		}, "", true},
	}
	var seq int64
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seq++
			before, had, err := st.ReceiptOf("tab/l/1")
			if err != nil {
				t.Fatal(err)
			}
			commits := len(rec.txs)
			rs, err := tc.write(core.WithAnswerReceipt(ctx, "tab/l/1", seq))
			after, ok, rerr := st.ReceiptOf("tab/l/1")
			if rerr != nil {
				t.Fatal(rerr)
			}
			if tc.fail {
				if err == nil {
					t.Fatalf("the write succeeded: %+v", rs)
				}
				if ok != had || !reflect.DeepEqual(after, before) {
					t.Errorf("after a failed write the receipt is %+v (%v), want %+v (%v) as before", after, ok, before, had)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := core.Receipt{Seq: seq}
			for _, r := range rs {
				want.Items = append(want.Items, receiptItemOf(r))
			}
			if !ok || !reflect.DeepEqual(after, want) {
				t.Errorf("receipt %+v (%v), want %+v", after, ok, want)
			}
			if len(rec.txs) != commits+1 {
				t.Fatalf("the write made %d commits, want 1", len(rec.txs)-commits)
			}
			var withDoc, withReceipt bool
			for _, c := range rec.txs[commits] {
				withDoc = withDoc || c.Key == tc.doc
				withReceipt = withReceipt || c.Key == "rcpt/tab/l/1"
			}
			if !withDoc || !withReceipt {
				t.Errorf("the write's commit holds %s: %v, its receipt: %v; want both", tc.doc, withDoc, withReceipt)
			}
		})
	}
}
