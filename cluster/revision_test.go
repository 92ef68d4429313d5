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

// revServer is a sync server of the test's cluster, in this process (so
// that the test can call its methods), on a real etcd.
type revServer struct {
	srv  *syncserver.Server
	addr string
}

func (s revServer) url() string { return "ws://" + s.addr + "/v1/sync" }

// metric reads one counter from the server's /metrics.
func (s revServer) metric(t *testing.T, name string) int64 {
	t.Helper()
	return int64(servertest.Metric(t, s.addr, name))
}

// startRevServers starts servers with the given tags on etcd under prefix.
func startRevServers(t *testing.T, etcd []string, prefix string, tags ...string) []revServer {
	t.Helper()
	var out []revServer
	for _, tag := range tags {
		srv, addr, _ := servertest.Start(t, syncserver.Config{DataDir: t.TempDir(), ServerTag: tag, Etcd: etcd, EtcdPrefix: prefix,
			CompactEvery: -1, RateLimit: -1}, "127.0.0.1:0")
		out = append(out, revServer{srv: srv, addr: addr})
	}
	return out
}

func dialDB(t *testing.T, url, db string) *client.Client {
	t.Helper()
	c := client.New(url, client.Options{Database: db})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRevisions: on etcd a database's change sequence is etcd's revision.
func TestRevisions(t *testing.T) {
	ec := startEtcd(t)
	etcd := ec.Endpoints()
	t.Run("pushes through two servers do not conflict", func(t *testing.T) { testNoCounterConflicts(t, etcd) })
	t.Run("pulls are complete, ordered and whole revisions", func(t *testing.T) { testPullByRevision(t, etcd) })
	t.Run("resume on another server", func(t *testing.T) { testResumeElsewhere(t, etcd) })
	t.Run("live feed from a revision", func(t *testing.T) { testLiveFromRevision(t, etcd) })
	t.Run("prevSeq never skips another's change", func(t *testing.T) { testPrevSeqRule(t, etcd) })
	t.Run("interleaved replicas miss nothing", func(t *testing.T) { testInterleavedReplicas(t, etcd) })
	t.Run("a backup restores into a single server", func(t *testing.T) { testBackupRestore(t, etcd) })
	t.Run("compaction makes clients behind resync", func(t *testing.T) { testCompactionResync(t, etcd) })
	// Last: it kills and restarts an etcd member.
	t.Run("a live feed goes on when etcd's leader dies", func(t *testing.T) { testLiveFeedLeaderLoss(t, ec) })
}

// testNoCounterConflicts: concurrent pushes of different documents into one
// database through A and B are all accepted without one transaction run
// again (with a counter per database, each would compare it).
func testNoCounterConflicts(t *testing.T, etcd []string) {
	srvs := startRevServers(t, etcd, "rev/noconflict/", "A", "B")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const perServer, rounds, batch = 6, 15, 4
	var clients []*client.Client
	for i := range 2 * perServer {
		c := dialDB(t, srvs[i%2].url(), "shop")
		if _, err := c.Pull(ctx, 0, 1); err != nil { // connected before counting
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	before := srvs[0].metric(t, "hilodb_tx_retries_total") + srvs[1].metric(t, "hilodb_tx_retries_total")
	commits := srvs[0].metric(t, "hilodb_fsync_seconds_count") + srvs[1].metric(t, "hilodb_fsync_seconds_count")
	var wg sync.WaitGroup
	errs := make(chan error, len(clients))
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				items := make([]client.PushItem, batch)
				for k := range items {
					items[k] = client.PushItem{ID: fmt.Sprintf("d/%d-%d-%d", i, r, k), Rev: "_mAAAAAAA-BT", Doc: []byte(`{"n":1}`)}
				}
				out, err := c.Push(ctx, items)
				if err != nil {
					errs <- err
					return
				}
				for _, res := range out.Results {
					if !res.OK {
						errs <- fmt.Errorf("%s refused: %v", res.ID, res.Error)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	after := srvs[0].metric(t, "hilodb_tx_retries_total") + srvs[1].metric(t, "hilodb_tx_retries_total")
	if after != before {
		t.Errorf("%d transactions ran again: pushes of different documents conflicted", after-before)
	}
	// The commit round trips are recorded as buntdb's fsyncs are.
	if n := srvs[0].metric(t, "hilodb_fsync_seconds_count") + srvs[1].metric(t, "hilodb_fsync_seconds_count"); n <= commits {
		t.Errorf("commit histogram did not move: %d → %d", commits, n)
	}
	p, err := clients[0].Pull(ctx, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * perServer * rounds * batch; len(p.Changes) != want {
		t.Errorf("pulled %d documents, want %d", len(p.Changes), want)
	}
}

// pullAll pages through a database's feed from since with limit, checking
// that sequences never go down, that a page ends where its last change is
// and that no revision is split over two pages.
func pullAll(t *testing.T, ctx context.Context, c *client.Client, since int64, limit int) ([]client.Change, int64) {
	t.Helper()
	var all []client.Change
	pageOf := map[int64]int{} // sequence → page it came in
	for page := 0; ; page++ {
		p, err := c.Pull(ctx, since, limit)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range p.Changes {
			if ch.Seq <= since {
				t.Fatalf("change %s at %d, not after the checkpoint %d", ch.ID, ch.Seq, since)
			}
			if len(all) > 0 && ch.Seq < all[len(all)-1].Seq {
				t.Fatalf("sequence went down: %d after %d", ch.Seq, all[len(all)-1].Seq)
			}
			if pg, ok := pageOf[ch.Seq]; ok && pg != page {
				t.Fatalf("revision %d split over pages %d and %d", ch.Seq, pg, page)
			}
			pageOf[ch.Seq] = page
			all = append(all, ch)
		}
		if len(p.Changes) > 0 && p.Last != p.Changes[len(p.Changes)-1].Seq {
			t.Fatalf("page last %d, its last change %d", p.Last, p.Changes[len(p.Changes)-1].Seq)
		}
		since = p.Last
		if !p.More {
			return all, since
		}
	}
}

// testPullByRevision: writes through A and B (batches, updates, deletes)
// pulled through C a few at a time come in revision order, each document
// once at its latest version, and a batch bigger than the page whole.
func testPullByRevision(t *testing.T, etcd []string) {
	srvs := startRevServers(t, etcd, "rev/pull/", "A", "B", "C")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, b, c := dialDB(t, srvs[0].url(), "shop"), dialDB(t, srvs[1].url(), "shop"), dialDB(t, srvs[2].url(), "shop")
	want := map[string]string{} // id → latest rev ("-" for deleted)
	push := func(cl *client.Client, items ...client.PushItem) {
		t.Helper()
		out, err := cl.Push(ctx, items)
		if err != nil {
			t.Fatal(err)
		}
		for i, res := range out.Results {
			if !res.OK {
				t.Fatalf("%s: %v", res.ID, res.Error)
			}
			if items[i].Deleted {
				want[items[i].ID] = "-"
			} else {
				want[items[i].ID] = items[i].Rev
			}
		}
	}
	// A checkpoint after the servers started: pulls from it are served from
	// what the servers' watches saw, pulls from 0 by a range read.
	push(b, client.PushItem{ID: "first", Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)})
	_, recent := pullAll(t, ctx, c, 0, 100)
	var big []client.PushItem
	for i := range 10 {
		big = append(big, client.PushItem{ID: fmt.Sprintf("big/%d", i), Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)})
	}
	push(a, big...) // ten documents, one revision
	for i := range 8 {
		push(b, client.PushItem{ID: fmt.Sprintf("one/%d", i), Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)})
		push(a, client.PushItem{ID: fmt.Sprintf("two/%d", i), Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)})
	}
	push(b, client.PushItem{ID: "big/3", BaseRev: "_mAAAAAAA-BT", Rev: "_mAAAAAAA-CT", Doc: []byte(`{"v":2}`)},
		client.PushItem{ID: "one/1", BaseRev: "_mAAAAAAA-BT", Rev: "_mAAAAAAA-CT", Deleted: true})
	push(a, client.PushItem{ID: "two/0", BaseRev: "_mAAAAAAA-BT", Rev: "_mAAAAAAA-CT", Doc: []byte(`{"v":2}`)})
	all, last := pullAll(t, ctx, c, 0, 3)
	got := map[string]string{}
	for _, ch := range all {
		if _, dup := got[ch.ID]; dup {
			t.Errorf("%s pulled twice from 0", ch.ID)
		}
		got[ch.ID] = ch.Rev
		if ch.Deleted {
			got[ch.ID] = "-"
		}
	}
	if len(got) != len(want) {
		t.Errorf("pulled %d documents, want %d", len(got), len(want))
	}
	for id, rev := range want {
		if got[id] != rev {
			t.Errorf("%s: pulled %q, want %q", id, got[id], rev)
		}
	}
	// From the recent checkpoint, a few at a time: the same changes, but
	// "first".
	byLog, byRange := srvs[2].metric(t, "hilodb_pulls_from_log_total"), srvs[2].metric(t, "hilodb_pulls_by_range_total")
	fromRecent, lastRecent := pullAll(t, ctx, c, recent, 3)
	if n, r := srvs[2].metric(t, "hilodb_pulls_from_log_total")-byLog, srvs[2].metric(t, "hilodb_pulls_by_range_total")-byRange; n < 5 || r != 0 {
		t.Errorf("pulls from the recent checkpoint: %d from the change log, %d by range; want all from the log", n, r)
	}
	if len(fromRecent) != len(all)-1 || lastRecent != last {
		t.Errorf("from the recent checkpoint: %d changes, last %d; want %d, %d", len(fromRecent), lastRecent, len(all)-1, last)
	}
	for i, ch := range fromRecent {
		if w := all[i+1]; ch.ID != w.ID || ch.Seq != w.Seq || ch.Rev != w.Rev || ch.Deleted != w.Deleted {
			t.Errorf("from the recent checkpoint, change %d: %+v, want %+v", i, ch, w)
		}
	}
	// The whole feed once more in one page agrees on every sequence.
	p, err := c.Pull(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != len(all) || p.Last != last {
		t.Errorf("one page: %d changes, last %d; paged: %d, last %d", len(p.Changes), p.Last, len(all), last)
	}
	// A pull at the checkpoint has nothing; past etcd's revision is refused.
	if p, err := c.Pull(ctx, last, 10); err != nil || len(p.Changes) != 0 || p.More {
		t.Errorf("pull at the end: %+v, %v", p, err)
	}
	var ce *client.Error
	if _, err := c.Pull(ctx, last+1_000_000, 10); !errors.As(err, &ce) || ce.Code != "bad_request" {
		t.Errorf("pull past the revision: %v, want bad_request", err)
	}
}

// testResumeElsewhere: a checkpoint from A's replies is good on C: the pull
// from it brings exactly what was written after it, through any server.
func testResumeElsewhere(t *testing.T, etcd []string) {
	srvs := startRevServers(t, etcd, "rev/resume/", "A", "B", "C")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, b := dialDB(t, srvs[0].url(), "shop"), dialDB(t, srvs[1].url(), "shop")
	for i := range 5 {
		if _, err := a.Push(ctx, []client.PushItem{{ID: fmt.Sprintf("old/%d", i), Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	_, checkpoint := pullAll(t, ctx, a, 0, 2)
	// Other databases' writes raise etcd's revision too; they are not this
	// database's changes.
	other := dialDB(t, srvs[1].url(), "other")
	newIDs := map[string]bool{}
	for i := range 4 {
		id := fmt.Sprintf("new/%d", i)
		newIDs[id] = true
		cl := []*client.Client{a, b}[i%2]
		if _, err := cl.Push(ctx, []client.PushItem{{ID: id, Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := other.Push(ctx, []client.PushItem{{ID: id, Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	c := dialDB(t, srvs[2].url(), "shop")
	got, _ := pullAll(t, ctx, c, checkpoint, 1)
	if len(got) != len(newIDs) {
		t.Errorf("resumed on C: %d changes, want %d: %+v", len(got), len(newIDs), got)
	}
	for _, ch := range got {
		if !newIDs[ch.ID] {
			t.Errorf("resumed on C: %s came again", ch.ID)
		}
	}
}

// testPrevSeqRule: a push answers prevSeq equal to the client's checkpoint
// only when nothing but that push changed the database after it.
func testPrevSeqRule(t *testing.T, etcd []string) {
	srvs := startRevServers(t, etcd, "rev/prevseq/", "A", "B")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	x, y := dialDB(t, srvs[0].url(), "shop"), dialDB(t, srvs[1].url(), "shop")
	if _, err := x.Push(ctx, []client.PushItem{{ID: "seed", Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	_, ck := pullAll(t, ctx, x, 0, 100)
	// Quiet: X's own push after its checkpoint may move it.
	out, err := x.PushSince(ctx, ck, []client.PushItem{{ID: "x/1", Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if out.PrevSeq != ck || out.Last != out.Results[0].Seq || out.Last <= ck {
		t.Errorf("quiet push: prevSeq %d last %d (seq %d), want prevSeq %d", out.PrevSeq, out.Last, out.Results[0].Seq, ck)
	}
	ck = out.Last
	// Y writes through B; X's next push must not claim nothing else came.
	if _, err := y.Push(ctx, []client.PushItem{{ID: "y/1", Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	out, err = x.PushSince(ctx, ck, []client.PushItem{{ID: "x/2", Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if out.PrevSeq == ck {
		t.Fatalf("push after another server's write answered prevSeq %d = the checkpoint: y/1 would be skipped", ck)
	}
	got, _ := pullAll(t, ctx, x, ck, 100)
	ids := map[string]bool{}
	for _, ch := range got {
		ids[ch.ID] = true
	}
	if !ids["y/1"] || !ids["x/2"] {
		t.Errorf("pull from the checkpoint: %v, want y/1 and x/2", ids)
	}
	// A retry of an applied write counts as the client's own.
	_, ck = pullAll(t, ctx, x, 0, 100)
	out, err = x.PushSince(ctx, ck, []client.PushItem{{ID: "x/2", Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)}, {ID: "x/3", Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if out.PrevSeq != ck {
		t.Errorf("quiet push with a retry: prevSeq %d, want %d", out.PrevSeq, ck)
	}
	// A push without a checkpoint moves none.
	out, err = x.Push(ctx, []client.PushItem{{ID: "x/4", Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if out.PrevSeq != out.Last {
		t.Errorf("push without since: prevSeq %d, last %d; want them equal", out.PrevSeq, out.Last)
	}
}

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

// testLiveFromRevision: a subscriber on C from a revision checkpoint gets
// every write made after it through A and B, in order, and none before.
func testLiveFromRevision(t *testing.T, etcd []string) {
	srvs := startRevServers(t, etcd, "rev/live/", "A", "B", "C")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, b := dialDB(t, srvs[0].url(), "shop"), dialDB(t, srvs[1].url(), "shop")
	if _, err := a.Push(ctx, []client.PushItem{{ID: "before", Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	_, ck := pullAll(t, ctx, a, 0, 10)
	c := dialDB(t, srvs[2].url(), "shop")
	var mu sync.Mutex
	var got []client.Change
	if err := c.Subscribe(ctx, ck, func(ch []client.Change, _ int64) {
		mu.Lock()
		got = append(got, ch...)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := range n {
		cl := []*client.Client{a, b}[i%2]
		if _, err := cl.Push(ctx, []client.PushItem{{ID: fmt.Sprintf("live/%d", i), Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		k := len(got)
		mu.Unlock()
		if k >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	seen := map[string]bool{}
	for i, ch := range got {
		if ch.Seq <= ck || i > 0 && ch.Seq < got[i-1].Seq {
			t.Errorf("live change %s at %d (checkpoint %d, previous %d)", ch.ID, ch.Seq, ck, got[max(i-1, 0)].Seq)
		}
		seen[ch.ID] = true
	}
	for i := range n {
		if id := fmt.Sprintf("live/%d", i); !seen[id] {
			t.Errorf("the feed on C missed %s", id)
		}
	}
	if seen["before"] {
		t.Error("the feed brought a change from before its checkpoint")
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
