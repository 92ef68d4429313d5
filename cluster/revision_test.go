package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/internal/servertest"
	"github.com/hilodb/hilodb/syncserver"
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
