package replica_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core/revision"
)

// TestStaleRevIsMadeAgain: a store whose clock ran behind (it never saw a
// tombstone made with a clock an hour ahead) makes a document of that id
// anew; the server refuses the write's rev as not newer (stale_rev), and
// the store gives the same write a rev past the tombstone's in the same
// sync, which the server accepts. Nothing stays pending.
func TestStaleRevIsMadeAgain(t *testing.T) {
	srv := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	other := client.New(srv.url(), client.Options{Database: "shop"})
	defer other.Close()
	ahead := uint64(time.Now().Add(time.Hour).UnixMilli()) << 20
	made, gone := revision.Encode(ahead, "Z"), revision.Encode(ahead+1, "Z")
	for _, it := range []client.PushItem{
		{ID: "notes/x", Rev: made, Doc: json.RawMessage(`{"by":"other"}`)},
		{ID: "notes/x", BaseRev: made, Rev: gone, Deleted: true},
	} {
		out, err := other.Push(ctx, []client.PushItem{it})
		if err != nil || !out.Results[0].OK {
			t.Fatalf("push %+v: %+v %v", it, out, err)
		}
	}

	n := newNode(t, srv.url(), nil)
	n.put(t, `{"_key":"x","by":"me"}`)
	n.sync(t)
	if p, _ := n.store.PendingCount(); p != 0 {
		t.Fatalf("%d writes pending after the sync, want 0", p)
	}
	got, err := other.Get(ctx, []string{"notes/x"})
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := revision.Decode(got[0].Rev)
	if err != nil || v <= ahead+1 || got[0].Deleted || !json.Valid(got[0].Doc) {
		t.Fatalf("server holds %+v, want the store's write with a rev past the tombstone's", got[0])
	}
	var doc struct{ By string }
	json.Unmarshal(got[0].Doc, &doc)
	local, _ := n.store.Get("notes/x")
	if doc.By != "me" || !json.Valid(local) || gjsonRev(local) != got[0].Rev {
		t.Errorf("server %s, local %s: want the store's write, one rev on both", got[0].Doc, local)
	}
}

func gjsonRev(doc []byte) string {
	var d struct {
		Rev string `json:"_rev"`
	}
	json.Unmarshal(doc, &d)
	return d.Rev
}
