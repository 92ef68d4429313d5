package replica_test

import (
	"context"
	"fmt"
	"regexp"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/keygen"
	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/internal/servertest"
	"github.com/hilodb/hilodb/replica"
)

// keyed is a replica whose store makes keys from leased HiLo numbers.
func keyed(t *testing.T, url string) (*core.Store, *replica.Replicator) {
	t.Helper()
	cli := client.New(url, client.Options{Database: "shop"})
	gen := idgen.NewGenerator(cli)
	st, err := core.Open(":memory:", core.Options{IDs: gen, Numbers: gen})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close(); st.Close() })
	return st, replica.New(st, cli, replica.Options{})
}

func TestCollectionDefinitionsReplicate(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	a, repA := keyed(t, srv.url())
	b, repB := keyed(t, srv.url())
	c, repC := keyed(t, srv.url())

	// a and b both define users before either synced: a's reaches the
	// server first and wins; b adopts it.
	trad := core.CollectionOptions{KeyOptions: keygen.Options{Type: keygen.Traditional}}
	padded := core.CollectionOptions{KeyOptions: keygen.Options{Type: keygen.Padded}}
	if err := a.CreateCollection("users", trad); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateCollection("users", padded); err != nil {
		t.Fatal(err)
	}
	if err := repA.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := repB.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := repC.Sync(ctx); err != nil { // c never defined it
		t.Fatal(err)
	}
	decimal := regexp.MustCompile(`^users/[0-9]+$`)
	seen := map[string]bool{}
	for name, st := range map[string]*core.Store{"a": a, "b": b, "c": c} {
		if o, ok := st.CollectionInfo("users"); !ok || o.KeyOptions.Type != keygen.Traditional {
			t.Errorf("%s: users = %+v, %v; want the first definition (traditional)", name, o, ok)
		}
		if p, _ := st.PendingCollections(); len(p) != 0 {
			t.Errorf("%s: pending after sync: %+v", name, p)
		}
		for range 3 {
			r, err := st.Insert(ctx, "users", []byte(`{}`), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !decimal.MatchString(r.ID) || seen[r.ID] {
				t.Errorf("%s: key %s (want decimal, never seen before)", name, r.ID)
			}
			seen[r.ID] = true
		}
	}
	// A definition made later reaches the others at their next sync.
	if err := c.CreateCollection("events", core.CollectionOptions{KeyOptions: keygen.Options{Type: keygen.Autoincrement, Offset: core.Ptr(1000.0)}}); err != nil {
		t.Fatal(err)
	}
	if err := repC.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := repA.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if o, ok := a.CollectionInfo("events"); !ok || o.KeyOptions.Type != keygen.Autoincrement || o.KeyOptions.Offset == nil || *o.KeyOptions.Offset != 1000 {
		t.Errorf("a: events = %+v, %v", o, ok)
	}
}

// A server that answers a pull without the collection definitions it was
// asked for (one older than wire.Pull.Collections) is asked for them with
// collection.list after the last page, as before, and they are adopted.
// The server here speaks only the requests a pull makes, as such a server
// answers them.
func TestCollectionsFromAServerThatDoesNotSendThem(t *testing.T) {
	var lists atomic.Int32
	url, _ := servertest.Scripted(t, func(op string, id int64) (websocket.MessageType, []byte) {
		reply := `{"id":%d,"ok":false,"error":{"code":"unknown_op","num":404,"message":"unknown op"}}`
		switch op {
		case "hello":
			reply = `{"id":%d,"ok":true,"serverTag":"S","node":"N1"}`
		case "pull":
			reply = `{"id":%d,"ok":true,"changes":[],"last":0,"more":false}`
		case "collection.list":
			lists.Add(1)
			reply = `{"id":%d,"ok":true,"collections":[{"name":"users","keyOptions":{"type":"padded"}}]}`
		}
		return websocket.MessageText, fmt.Appendf(nil, reply, id)
	})
	st, rep := keyed(t, url)
	if _, err := rep.Pull(context.Background()); err != nil {
		t.Fatal(err)
	}
	if o, ok := st.CollectionInfo("users"); !ok || o.KeyOptions.Type != keygen.Padded {
		t.Errorf("users = %+v, %v; want the server's definition (padded)", o, ok)
	}
	if n := lists.Load(); n != 1 {
		t.Errorf("collection.list asked %d times, want once", n)
	}
}
