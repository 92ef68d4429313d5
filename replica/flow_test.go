// The flow of a push and a pull: batches bounded by size, the checkpoint
// moved past a replica's own writes, pushes pipelined and pull pages asked
// for ahead, a sync's pull asked for early, and what a cut connection or a
// lost reply leaves. The helpers (server, proxy, node) are in
// replica_test.go.

package replica_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/internal/servertest"
	"github.com/hilodb/hilodb/replica"
)

// TestPushLargeDocuments: documents that together exceed the server's
// message limit go in several pushes instead of one refused frame.
func TestPushLargeDocuments(t *testing.T) {
	srv := startServer(t)
	a := newNode(t, srv.url(), nil)
	big := strings.Repeat("x", 300<<10) // 300 KiB each, 12 MiB in all
	for i := range 40 {
		a.put(t, fmt.Sprintf(`{"_key":"big%d","pad":"%s"}`, i, big))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := a.rep.Push(ctx)
	if err != nil || n != 40 {
		t.Fatalf("push: %d, %v", n, err)
	}
	b := newNode(t, srv.url(), nil)
	b.sync(t)
	if got := snapshot(t, b.store); len(got) != 40 {
		t.Fatalf("pulled %d documents, want 40", len(got))
	}
}

// TestPushAdvancesCheckpoint: a push into a database nobody else wrote
// moves the checkpoint past its own writes (no pulling them back); when
// another replica wrote meanwhile, it does not.
func TestPushAdvancesCheckpoint(t *testing.T) {
	srv := startServer(t)
	a := newNode(t, srv.url(), nil)
	b := newNode(t, srv.url(), nil)
	for i := range 5 {
		a.put(t, fmt.Sprintf(`{"_key":"a%d"}`, i))
	}
	ctx := context.Background()
	if _, err := a.rep.Push(ctx); err != nil {
		t.Fatal(err)
	}
	if ck, _ := a.store.Checkpoint(); ck != 5 {
		t.Fatalf("checkpoint after a lone push: %d, want 5", ck)
	}
	b.put(t, `{"_key":"b0"}`)
	if _, err := b.rep.Push(ctx); err != nil {
		t.Fatal(err)
	}
	if ck, _ := b.store.Checkpoint(); ck != 0 {
		t.Fatalf("b skipped a's writes: checkpoint %d, want 0", ck)
	}
	b.sync(t)
	if b.get(t, "notes/a3") == nil {
		t.Fatal("b did not pull a's writes")
	}
	if ck, _ := b.store.Checkpoint(); ck != 6 {
		t.Fatalf("b's checkpoint after sync: %d, want 6", ck)
	}
}

// TestPushDelayBatches checks that writes made within PushDelay of each
// other share one push while Run follows the server.
func TestPushDelayBatches(t *testing.T) {
	srv := startServer(t)
	cli := client.New(srv.url(), client.Options{Database: "shop"})
	st, err := core.Open(":memory:", core.Options{IDs: idgen.NewGenerator(cli)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close(); st.Close() })
	var (
		mu      sync.Mutex
		batches []int
	)
	connected := make(chan struct{}, 1)
	rep := replica.New(st, cli, replica.Options{PushDelay: 200 * time.Millisecond,
		OnConnect: func() {
			select {
			case connected <- struct{}{}:
			default:
			}
		},
		OnAck: func(acks []core.Ack) {
			mu.Lock()
			batches = append(batches, len(acks))
			mu.Unlock()
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rep.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-connected:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not connect")
	}
	for i := range 5 {
		if _, err := st.Put(context.Background(), "notes", []byte(fmt.Sprintf(`{"i":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if n, _ := st.PendingCount(); n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("writes still pending")
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(batches) != 1 || batches[0] != 5 {
		t.Errorf("acknowledged in batches %v, want one of 5", batches)
	}
}

// TestPipelinedPush: against a server that takes pushes pipelined, a push
// of many small batches sends the next before the last is answered. Every
// write arrives once, the checkpoint still chains past all of them, a
// write made to a document already sent during the push goes out in a
// second pass, and a conflict in one batch is settled while another is in
// flight.
func TestPipelinedPush(t *testing.T) {
	srv := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A lone push: 50 writes in batches of 7, the checkpoint chained to 50.
	a := newNode(t, srv.url(), nil)
	for i := range 50 {
		a.put(t, fmt.Sprintf(`{"_key":"k%02d","v":1}`, i))
	}
	var rounds []string
	rep := replica.New(a.store, a.cli, replica.Options{PushBatch: 7, BeforePush: func(context.Context) error {
		rounds = append(rounds, "")
		return nil
	}})
	n, err := rep.Push(ctx)
	if err != nil || n != 50 {
		t.Fatalf("push: %d, %v", n, err)
	}
	if !a.cli.PipelinesPushes() {
		t.Fatal("the single server does not say it takes pushes pipelined")
	}
	if len(rounds) != 8 {
		t.Errorf("%d batches sent, want 8", len(rounds))
	}
	if ck, _ := a.store.Checkpoint(); ck != 50 {
		t.Fatalf("checkpoint after a pipelined lone push: %d, want 50", ck)
	}
	if p, _ := a.store.PendingCount(); p != 0 {
		t.Fatalf("%d writes still pending", p)
	}

	// Another replica: its k20 conflicts with b's, and k03 is written
	// again while its first version is in flight.
	b := newNode(t, srv.url(), nil)
	c := newNode(t, srv.url(), nil)
	for i := range 30 {
		c.put(t, fmt.Sprintf(`{"_key":"c%02d","v":1}`, i))
	}
	b.put(t, `{"_key":"c20","from":"b"}`)
	if _, err := b.rep.Push(ctx); err != nil {
		t.Fatal(err)
	}
	sends := 0
	rep = replica.New(c.store, c.cli, replica.Options{PushBatch: 4, BeforePush: func(context.Context) error {
		if sends++; sends == 3 {
			if _, err := c.store.Put(ctx, "notes", []byte(`{"_key":"c03","v":2}`)); err != nil {
				return err
			}
		}
		return nil
	}})
	n, err = rep.Push(ctx)
	if err != nil || n != 30 { // 29 first versions and c03's second; c20 lost to b's
		t.Fatalf("push with a conflict and a rewrite: %d, %v", n, err)
	}
	if p, _ := c.store.PendingCount(); p != 0 {
		t.Fatalf("%d writes still pending", p)
	}
	if d := c.get(t, "notes/c20"); d["from"] != "b" {
		t.Fatalf("c20 after the conflict: %v", d)
	}
	d := newNode(t, srv.url(), nil)
	d.sync(t)
	got := snapshot(t, d.store)
	if len(got) != 50+30 {
		t.Fatalf("the server holds %d documents, want 80", len(got))
	}
	if v := d.get(t, "notes/c03"); v["v"] != 2.0 {
		t.Fatalf("c03 on the server: %v, want its second version", v)
	}
	if v := d.get(t, "notes/c20"); v["from"] != "b" {
		t.Fatalf("c20 on the server: %v", v)
	}
}

// TestPullPagesAhead: a pull of many pages asks for the next page before
// it applies the last; every document arrives once, in order, and a write
// made on the server between pages arrives too.
func TestPullPagesAhead(t *testing.T) {
	srv := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := newNode(t, srv.url(), nil)
	for i := range 60 {
		a.put(t, fmt.Sprintf(`{"_key":"p%02d","v":1}`, i))
	}
	if _, err := a.rep.Push(ctx); err != nil {
		t.Fatal(err)
	}
	b := newNode(t, srv.url(), nil)
	pages := 0
	rep := replica.New(b.store, b.cli, replica.Options{PullLimit: 7, OnApply: func(res core.ApplyResult) {
		if pages++; pages == 2 {
			// Between pages: a's new write lands after what b asked for.
			a.put(t, `{"_key":"late"}`)
			if _, err := a.rep.Push(ctx); err != nil {
				t.Error(err)
			}
		}
	}})
	n, err := rep.Pull(ctx)
	if err != nil || n != 61 {
		t.Fatalf("pull: %d, %v", n, err)
	}
	if got := snapshot(t, b.store); len(got) != 61 {
		t.Fatalf("b holds %d documents, want 61", len(got))
	}
	if ck, _ := b.store.Checkpoint(); ck != 61 {
		t.Fatalf("checkpoint %d, want 61", ck)
	}
	if pages < 9 {
		t.Fatalf("%d pages applied, want at least 9", pages)
	}
}

// TestPipelinedPushCut: the connection is cut while two pushes are in
// flight, their replies lost. The push fails; the next one sends what was
// not acknowledged again (the server answers a write it has as a retry),
// and every document is on the server once, at its latest version.
func TestPipelinedPushCut(t *testing.T) {
	srv := startServer(t)
	px := newProxy(t, srv.addr)
	a := newNode(t, px.url(), nil)
	for i := range 60 {
		a.put(t, fmt.Sprintf(`{"_key":"c%02d","v":1}`, i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sends := 0
	rep := replica.New(a.store, a.cli, replica.Options{PushBatch: 5, BeforePush: func(context.Context) error {
		if sends++; sends == 3 {
			// Batch 2 is in flight and batch 3 about to go: what the server
			// answers from now is lost, and the connection is cut once it
			// has applied them.
			px.mute.Store(true)
			time.AfterFunc(200*time.Millisecond, func() { px.cut(); px.mute.Store(false) })
		}
		return nil
	}})
	if _, err := rep.Push(ctx); err == nil {
		t.Fatal("a push whose connection was cut reported no error")
	}
	a.put(t, `{"_key":"c07","v":2}`) // written again before the next push
	n, err := rep.Push(ctx)
	if err != nil {
		t.Fatalf("push after the cut: %v", err)
	}
	if n == 0 {
		t.Fatal("the push after the cut sent nothing")
	}
	if p, _ := a.store.PendingCount(); p != 0 {
		t.Fatalf("%d writes still pending", p)
	}
	b := newNode(t, srv.url(), nil)
	b.sync(t)
	got := snapshot(t, b.store)
	if len(got) != 60 {
		t.Fatalf("the server holds %d documents, want 60", len(got))
	}
	if v := b.get(t, "notes/c07"); v["v"] != 2.0 {
		t.Fatalf("c07 on the server: %v, want its second version", v)
	}
	if !equalMaps(snapshot(t, a.store), got) {
		t.Error("the replicas differ")
	}
}

// TestSyncAfterLostReply: a push whose reply is lost with its connection
// (the server applied it) fails no sync: Sync dials again and pushes again,
// the server takes the repeat as applied, and nothing is pending after.
func TestSyncAfterLostReply(t *testing.T) {
	srv := startServer(t)
	p := newProxy(t, srv.addr)
	n := newNode(t, p.url(), nil)
	n.put(t, `{"_key":"a","v":1}`)
	n.sync(t) // connected, in sync
	n.put(t, `{"_key":"b","v":2}`)
	var lost atomic.Bool
	n.rep = replica.New(n.store, n.cli, replica.Options{BeforePush: func(context.Context) error {
		if lost.CompareAndSwap(false, true) {
			// The reply to this push never arrives; the connection ends once
			// the server has applied it.
			p.mute.Store(true)
			time.AfterFunc(300*time.Millisecond, func() { p.cut(); p.mute.Store(false) })
		}
		return nil
	}})
	n.sync(t)
	if !lost.Load() {
		t.Fatal("no push was sent")
	}
	if c, _ := n.store.PendingCount(); c != 0 {
		t.Errorf("%d writes pending after the sync", c)
	}
	obs := newNode(t, srv.url(), nil)
	obs.sync(t)
	if _, err := obs.store.Get("notes/b"); err != nil {
		t.Errorf("the server lacks the write: %v", err)
	}
}

// requests reads the server's count of requests received.
func (s *server) requests(t *testing.T) int {
	t.Helper()
	return int(servertest.Metric(t, s.addr, "hilodb_requests_total"))
}

// TestSyncPullsEarly: a sync asks for its pull's first page once its push's
// last reply is in, before recording it. The page is used when it was
// asked from where the checkpoint ends (one push and one pull on the
// wire), and it brings what others wrote before the push; a push with a
// conflict asks for no early page, and the sync still ends in step.
func TestSyncPullsEarly(t *testing.T) {
	srv := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a := quietNode(t, srv.url())
	b := quietNode(t, srv.url())
	a.sync(t)
	b.sync(t)

	// Nothing written by others: the checkpoint moves past a's own
	// writes, and the early page, asked from there, is empty. The pull
	// reaches the server while the push's acknowledgements are recorded:
	// OnAck, called once they are, waits for it.
	for i := range 3 {
		a.put(t, fmt.Sprintf(`{"_key":"a%d"}`, i))
	}
	before := srv.requests(t)
	pullDuringAck := false
	rep := replica.New(a.store, a.cli, replica.Options{OnAck: func([]core.Ack) {
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if srv.requests(t)-before >= 2 {
				pullDuringAck = true
				return
			}
		}
	}})
	pushed, pulled, err := rep.SyncOnce(ctx)
	if !pullDuringAck {
		t.Error("the pull was not asked for before the push's acknowledgements were recorded")
	}
	if err != nil || pushed != 3 || pulled != 0 {
		t.Fatalf("sync: pushed %d, pulled %d, %v", pushed, pulled, err)
	}
	if n := srv.requests(t) - before; n != 2 {
		t.Fatalf("the sync sent %d requests, want 2 (a push, then one pull)", n)
	}
	if ck, _ := a.store.Checkpoint(); ck != 3 {
		t.Fatalf("checkpoint %d, want 3", ck)
	}

	// b wrote before a's push: the page comes from a's checkpoint and
	// brings b's write, then a's own come back as echoes, not changes.
	b.put(t, `{"_key":"b0"}`)
	b.sync(t)
	a.put(t, `{"_key":"a3"}`)
	before = srv.requests(t)
	pushed, pulled, err = a.rep.SyncOnce(ctx)
	if err != nil || pushed != 1 || pulled != 1 {
		t.Fatalf("sync after b's write: pushed %d, pulled %d, %v", pushed, pulled, err)
	}
	if n := srv.requests(t) - before; n != 2 {
		t.Fatalf("the sync sent %d requests, want 2", n)
	}
	if a.get(t, "notes/b0") == nil {
		t.Fatal("a did not pull b's write")
	}
	if ck, _ := a.store.Checkpoint(); ck != 5 {
		t.Fatalf("checkpoint %d, want 5", ck)
	}

	// A conflict: b changed a0 after a last saw it. The server's version
	// wins; no early page was asked for, and both end in step.
	b.sync(t)
	doc := b.get(t, "notes/a0")
	doc["v"] = "b"
	text, _ := json.Marshal(doc)
	b.put(t, string(text))
	b.sync(t)
	mine := a.get(t, "notes/a0")
	mine["v"] = "a"
	text, _ = json.Marshal(mine)
	a.put(t, string(text))
	if _, _, err := a.rep.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	a.sync(t)
	b.sync(t)
	if got := a.get(t, "notes/a0")["v"]; got != "b" {
		t.Fatalf("a0 on a: v %v, want b's", got)
	}
	if sa, sb := snapshot(t, a.store), snapshot(t, b.store); !equalMaps(sa, sb) {
		t.Fatalf("a and b differ:\n%v\n%v", sa, sb)
	}
	if n, _ := a.store.PendingCount(); n != 0 {
		t.Fatalf("%d writes still pending on a", n)
	}
}
