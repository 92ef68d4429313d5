package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/internal/servertest"
	"github.com/hilodb/hilodb/replica"
	"github.com/hilodb/hilodb/syncserver"
	"github.com/hilodb/hilodb/syncserver/storage"
)

// revNode is a replica: a local store synced through one server.
type revNode struct {
	store *core.Store
	rep   *replica.Replicator
}

func newRevNode(t *testing.T, url string) *revNode {
	t.Helper()
	cli := dialDB(t, url, "notes")
	st, err := core.Open(":memory:", core.Options{IDs: idgen.NewGenerator(cli)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &revNode{store: st, rep: replica.New(st, cli, replica.Options{})}
}

func (n *revNode) put(t *testing.T, doc string) string {
	t.Helper()
	out, err := n.store.Put(context.Background(), "notes", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		ID string `json:"_id"`
	}
	json.Unmarshal(out, &d)
	return d.ID
}

func (n *revNode) has(t *testing.T, id string) bool {
	t.Helper()
	_, err := n.store.Get(id)
	if errors.Is(err, core.ErrNotFound) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

func (n *revNode) sync(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.rep.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}

// testInterleavedReplicas: two replicas writing and syncing at the same
// time through two servers each end up with every document of the other.
func testInterleavedReplicas(t *testing.T, etcd []string) {
	srvs := startRevServers(t, etcd, "rev/interleave/", "A", "B")
	r1, r2 := newRevNode(t, srvs[0].url()), newRevNode(t, srvs[1].url())
	var ids []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range []*revNode{r1, r2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				id := n.put(t, fmt.Sprintf(`{"i":%d}`, i))
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err := n.rep.Sync(ctx)
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	r1.sync(t)
	r2.sync(t)
	for _, id := range ids {
		for i, n := range []*revNode{r1, r2} {
			if !n.has(t, id) {
				t.Errorf("replica %d lacks %s", i+1, id)
			}
		}
	}
}

// testCompactionResync: once etcd's history is compacted past a tombstone
// the servers remove it and raise the purged mark; a replica whose
// checkpoint is below it resyncs and ends with the right documents, the
// deleted one not brought back.
func testCompactionResync(t *testing.T, etcd []string) {
	srvs := startRevServers(t, etcd, "rev/compact/", "A", "B")
	a, b := newRevNode(t, srvs[0].url()), newRevNode(t, srvs[1].url())
	keep := a.put(t, `{"k":"keep"}`)
	gone := a.put(t, `{"k":"gone"}`)
	a.sync(t)
	b.sync(t)
	if !b.has(t, gone) {
		t.Fatal("b did not get the document")
	}
	if err := a.store.Delete(gone); err != nil {
		t.Fatal(err)
	}
	added := a.put(t, `{"k":"new"}`)
	a.sync(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Before etcd compacts, no tombstone goes.
	if n, err := srvs[1].srv.CompactTombstones(ctx); err != nil || n != 0 {
		t.Fatalf("compact before etcd did: %d, %v", n, err)
	}
	cli := etcdClient(t, etcd)
	bump, err := cli.Put(ctx, "rev/compact/test-bump", "1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, bump.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	if n, err := srvs[1].srv.CompactTombstones(ctx); err != nil || n != 1 {
		t.Fatalf("compact after etcd did: %d, %v", n, err)
	}
	p, err := dialDB(t, srvs[0].url(), "notes").Pull(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if p.PurgedSeq == 0 || p.PurgedSeq > bump.Header.Revision {
		t.Errorf("purgedSeq %d after compaction at %d", p.PurgedSeq, bump.Header.Revision)
	}
	for _, ch := range p.Changes {
		if ch.ID == gone {
			t.Errorf("the tombstone of %s is still served", gone)
		}
	}
	ck, err := b.store.Checkpoint()
	if err != nil || ck >= p.PurgedSeq {
		t.Fatalf("b's checkpoint %d is not behind the purged mark %d (%v)", ck, p.PurgedSeq, err)
	}
	mine := b.put(t, `{"k":"mine"}`) // a pending write survives the resync
	b.sync(t)
	if b.has(t, gone) {
		t.Error("b still has the document deleted on the server (resurrected)")
	}
	for _, id := range []string{keep, added, mine} {
		if !b.has(t, id) {
			t.Errorf("b lost %s in the resync", id)
		}
	}
	a.sync(t)
	if a.has(t, gone) || !a.has(t, mine) {
		t.Error("a after b's resync: wrong documents")
	}
}

// testBackupRestore: an etcd backup, whose documents share revisions and
// carry no counter, restores into a single server whose feed numbers them
// 1, 2, … and holds each at its latest version.
func testBackupRestore(t *testing.T, etcd []string) {
	srvs := startRevServers(t, etcd, "rev/backup/", "A")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := dialDB(t, srvs[0].url(), "shop")
	push := func(items ...client.PushItem) {
		t.Helper()
		if out, err := a.Push(ctx, items); err != nil || !out.Results[0].OK {
			t.Fatalf("push: %v %+v", err, out)
		}
	}
	push(client.PushItem{ID: "p/1", Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)}, client.PushItem{ID: "p/2", Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)},
		client.PushItem{ID: "p/3", Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)})
	push(client.PushItem{ID: "p/1", BaseRev: "_mAAAAAAA-BT", Rev: "_mAAAAAAA-CT", Doc: []byte(`{"v":2}`)})
	push(client.PushItem{ID: "p/2", BaseRev: "_mAAAAAAA-BT", Rev: "_mAAAAAAA-CT", Deleted: true})
	resp, err := http.Get("http://" + srvs[0].addr + "/admin/backup")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("backup: %d %s", resp.StatusCode, body)
	}
	file := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := storage.Restore(file, dir, 0, false); err != nil {
		t.Fatal(err)
	}
	_, addr, _ := servertest.Start(t, syncserver.Config{DataDir: dir, CompactEvery: -1}, "127.0.0.1:0")
	one := dialDB(t, "ws://"+addr+"/v1/sync", "shop")
	p, err := one.Pull(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id, rev string
		deleted bool
	}{{"p/3", "_mAAAAAAA-BT", false}, {"p/1", "_mAAAAAAA-CT", false}, {"p/2", "_mAAAAAAA-CT", true}}
	if len(p.Changes) != len(want) {
		t.Fatalf("restored feed: %+v", p.Changes)
	}
	for i, w := range want {
		ch := p.Changes[i]
		if ch.ID != w.id || ch.Rev != w.rev || ch.Deleted != w.deleted || ch.Seq != int64(i+1) {
			t.Errorf("restored change %d: %+v, want %s %s deleted=%v seq %d", i, ch, w.id, w.rev, w.deleted, i+1)
		}
	}
}
