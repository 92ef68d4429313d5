package replica_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strconv"
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
	"github.com/hilodb/hilodb/syncserver"
)

// server is a real sync server on 127.0.0.1 that can be restarted on the
// same port and data directory.
type server struct {
	t    *testing.T
	dir  string
	addr string
	halt func()
}

func startServer(t *testing.T) *server {
	t.Helper()
	s := &server{t: t, dir: t.TempDir(), addr: "127.0.0.1:0"}
	s.start()
	return s
}

func (s *server) start() {
	s.t.Helper()
	s.addr, s.halt = servertest.Serve(s.t, syncserver.Config{DataDir: s.dir}, s.addr)
}

func (s *server) stop() {
	if s.halt != nil {
		s.halt()
		s.halt = nil
	}
}

func (s *server) url() string { return "ws://" + s.addr + "/v1/sync" }

// proxy forwards loopback TCP to the server and can cut every connection.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	mute   atomic.Bool // drop what the server sends
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.cut() })
	return p
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		go func() { io.Copy(u, c); u.Close() }()
		go func() { p.copyReplies(c, u); c.Close() }()
	}
}

// copyReplies copies what the server sends to the client, dropping it
// while the proxy is muted.
func (p *proxy) copyReplies(c, u net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := u.Read(buf)
		if n > 0 && !p.mute.Load() {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) url() string { return "ws://" + p.ln.Addr().String() + "/v1/sync" }

// node is one replica: a local store, a sync client, a replicator.
type node struct {
	store     *core.Store
	cli       *client.Client
	rep       *replica.Replicator
	mu        sync.Mutex
	conflicts []core.Conflict
	acked     map[string]bool // id + "@" + rev
}

func newNode(t *testing.T, url string, resolve core.Resolver) *node {
	t.Helper()
	n := &node{}
	n.cli = client.New(url, client.Options{Database: "shop"})
	st, err := core.Open(":memory:", core.Options{IDs: idgen.NewGenerator(n.cli)})
	if err != nil {
		t.Fatal(err)
	}
	n.store = st
	n.acked = map[string]bool{}
	n.rep = replica.New(st, n.cli, replica.Options{Resolve: resolve, OnConflict: func(c core.Conflict) {
		n.mu.Lock()
		n.conflicts = append(n.conflicts, c)
		n.mu.Unlock()
	}, OnAck: func(acks []core.Ack) {
		n.mu.Lock()
		for _, a := range acks {
			n.acked[a.ID+"@"+a.Rev] = true
		}
		n.mu.Unlock()
	}})
	t.Cleanup(func() { n.cli.Close(); st.Close() })
	return n
}

func (n *node) put(t *testing.T, doc string) string {
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

func (n *node) get(t *testing.T, id string) map[string]any {
	t.Helper()
	b, err := n.store.Get(id)
	if errors.Is(err, core.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

func (n *node) sync(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.rep.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}

// snapshot returns every document of a store as id → canonical JSON.
func snapshot(t *testing.T, s *core.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := s.ForEach(func(id string, doc []byte) error {
		out[id] = string(doc)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestConcurrentEditsConverge(t *testing.T) {
	for _, order := range []string{"a first", "b first"} {
		t.Run(order, func(t *testing.T) {
			srv := startServer(t)
			a := newNode(t, srv.url(), nil)
			b := newNode(t, srv.url(), nil)
			id := a.put(t, `{"_key":"n1","text":"v0"}`)
			a.sync(t)
			b.sync(t)
			if got := b.get(t, id); got["text"] != "v0" {
				t.Fatalf("b after pull: %v", got)
			}
			// Both edit offline.
			a.put(t, `{"_key":"n1","text":"from a"}`)
			b.put(t, `{"_key":"n1","text":"from b"}`)
			first, second := a, b
			if order == "b first" {
				first, second = b, a
			}
			first.sync(t)
			second.sync(t)
			first.sync(t)
			want := first.get(t, id)["text"]
			for _, n := range []*node{a, b} {
				if got := n.get(t, id)["text"]; got != want {
					t.Errorf("replica has %v, want %v (the first to reach the server)", got, want)
				}
			}
			// The loser's edit is kept as a conflict, with an event.
			cs, _ := second.store.Conflicts(id)
			if len(cs) != 1 || !strings.Contains(string(cs[0].Doc), "from") || strings.Contains(string(cs[0].Doc), fmt.Sprint(want)) {
				t.Errorf("conflicts: %v", cs)
			}
			if len(second.conflicts) != 1 || second.conflicts[0].Kept != "remote" {
				t.Errorf("conflict events: %+v", second.conflicts)
			}
			if n, _ := second.store.PendingCount(); n != 0 {
				t.Errorf("pending after sync: %d", n)
			}
		})
	}
}

func TestEditAgainstDelete(t *testing.T) {
	srv := startServer(t)
	a := newNode(t, srv.url(), nil)
	b := newNode(t, srv.url(), nil)
	id := a.put(t, `{"_key":"n1","text":"v0"}`)
	a.sync(t)
	b.sync(t)
	if err := a.store.Delete(id); err != nil {
		t.Fatal(err)
	}
	b.put(t, `{"_key":"n1","text":"edited"}`)
	a.sync(t) // the delete wins the race
	b.sync(t)
	a.sync(t)
	for name, n := range map[string]*node{"a": a, "b": b} {
		if got := n.get(t, id); got != nil {
			t.Errorf("%s still has %v, want deleted", name, got)
		}
	}
	if cs, _ := b.store.Conflicts(id); len(cs) != 1 || !strings.Contains(string(cs[0].Doc), "edited") {
		t.Errorf("b's edit not kept as a conflict: %v", cs)
	}
	// The other way round: the edit reaches the server first.
	id2 := a.put(t, `{"_key":"n2","text":"v0"}`)
	a.sync(t)
	b.sync(t)
	b.put(t, `{"_key":"n2","text":"edited"}`)
	if err := a.store.Delete(id2); err != nil {
		t.Fatal(err)
	}
	b.sync(t)
	a.sync(t)
	b.sync(t)
	for name, n := range map[string]*node{"a": a, "b": b} {
		if got := n.get(t, id2); got["text"] != "edited" {
			t.Errorf("%s has %v, want the edit", name, got)
		}
	}
}

func TestLocalWinsAndMerge(t *testing.T) {
	srv := startServer(t)
	merge := func(local, remote core.Version) (core.Version, error) {
		var l, r map[string]any
		json.Unmarshal(local.Doc, &l)
		json.Unmarshal(remote.Doc, &r)
		tags := []string{fmt.Sprint(l["tag"]), fmt.Sprint(r["tag"])}
		sort.Strings(tags)
		l["tag"] = strings.Join(tags, "+")
		b, _ := json.Marshal(l)
		return core.Version{ID: local.ID, Doc: b}, nil
	}
	a := newNode(t, srv.url(), core.LocalWins)
	b := newNode(t, srv.url(), merge)
	c := newNode(t, srv.url(), nil)
	id := a.put(t, `{"_key":"n1","tag":"x"}`)
	a.sync(t)
	b.sync(t)
	c.sync(t)
	c.put(t, `{"_key":"n1","tag":"c"}`)
	c.sync(t)
	a.put(t, `{"_key":"n1","tag":"a"}`)
	a.sync(t) // local wins: a's version goes on top of c's
	for _, n := range []*node{a, b, c} {
		n.sync(t)
	}
	for _, n := range []*node{a, b, c} {
		if got := n.get(t, id)["tag"]; got != "a" {
			t.Fatalf("after local-wins: %v, want a", got)
		}
	}
	b.put(t, `{"_key":"n1","tag":"b"}`)
	c.put(t, `{"_key":"n1","tag":"c2"}`)
	c.sync(t)
	b.sync(t) // merges its edit with c's and pushes the result
	for _, n := range []*node{a, b, c} {
		n.sync(t)
	}
	for _, n := range []*node{a, b, c} {
		if got := n.get(t, id)["tag"]; got != "b+c2" {
			t.Errorf("after merge: %v, want b+c2", got)
		}
	}
}

// TestRandomWritesWithDisconnects: three replicas write at random while
// their connections are cut at random; afterwards every replica and the
// server hold the same documents, and every write a replica made is on the
// server or kept as a conflict.
func TestRandomWritesWithDisconnects(t *testing.T) {
	srv := startServer(t)
	const replicas, writes = 3, 1000
	nodes := make([]*node, replicas)
	proxies := make([]*proxy, replicas)
	for i := range nodes {
		proxies[i] = newProxy(t, srv.addr)
		nodes[i] = newNode(t, proxies[i].url(), nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	runCtx, stopRun := context.WithCancel(ctx)
	var runs sync.WaitGroup
	for _, n := range nodes {
		runs.Add(1)
		go func() { defer runs.Done(); n.rep.Run(runCtx) }()
	}
	var wg sync.WaitGroup
	written := make([]map[string]string, replicas) // id → rev of the last put, "" after a delete
	for i, n := range nodes {
		written[i] = map[string]string{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for w := range writes {
				key := fmt.Sprintf("k%d", rng.IntN(40))
				id := "notes/" + key
				switch rng.IntN(10) {
				case 0:
					err := n.store.Delete(id)
					if err != nil && !errors.Is(err, core.ErrNotFound) {
						t.Error(err)
						return
					}
					written[i][id] = ""
				default:
					text := fmt.Sprintf("r%d-w%d", i, w)
					out, err := n.store.Put(ctx, "notes", []byte(`{"_key":"`+key+`","text":"`+text+`"}`))
					if err != nil {
						t.Error(err)
						return
					}
					var d struct {
						Rev string `json:"_rev"`
					}
					json.Unmarshal(out, &d)
					written[i][id] = d.Rev
				}
				if rng.IntN(100) == 0 {
					proxies[i].cut()
				}
				if rng.IntN(4) == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	stopRun()
	runs.Wait()
	// Final rounds without cuts: push everything, then pull everything.
	for round := 0; round < 2; round++ {
		for _, n := range nodes {
			n.sync(t)
		}
	}
	obs := newNode(t, srv.url(), nil) // a fresh replica sees the server's state
	obs.sync(t)
	want := snapshot(t, obs.store)
	if len(want) == 0 {
		t.Fatal("server holds no documents")
	}
	for i, n := range nodes {
		got := snapshot(t, n.store)
		if len(got) != len(want) {
			t.Errorf("replica %d has %d documents, server %d", i, len(got), len(want))
		}
		for id, doc := range want {
			if got[id] != doc {
				t.Errorf("replica %d, %s:\n got %s\nwant %s", i, id, got[id], doc)
			}
		}
		if p, _ := n.store.PendingCount(); p != 0 {
			t.Errorf("replica %d has %d pending writes", i, p)
		}
	}
	// No write is lost silently: each replica's last write to a document was
	// accepted by the server or is kept as a conflict on that replica.
	for i, n := range nodes {
		for id, rev := range written[i] {
			if rev == "" {
				continue
			}
			if n.acked[id+"@"+rev] {
				continue
			}
			cs, _ := n.store.Conflicts(id)
			found := false
			for _, c := range cs {
				found = found || c.Rev == rev
			}
			if !found {
				t.Errorf("replica %d: write %s of %s was neither accepted nor kept as a conflict", i, rev, id)
			}
		}
	}
}

func TestServerRestartDuringPush(t *testing.T) {
	srv := startServer(t)
	a := newNode(t, srv.url(), nil)
	for i := range 3000 {
		a.put(t, fmt.Sprintf(`{"_key":"d%d","n":%d}`, i, i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { _, err := a.rep.Push(ctx); errc <- err }()
	time.Sleep(5 * time.Millisecond)
	srv.stop()
	<-errc // cut mid-push or done; either way retry must converge
	srv.start()
	a.sync(t)
	b := newNode(t, srv.url(), nil)
	b.sync(t)
	got := snapshot(t, b.store)
	if len(got) != 3000 {
		t.Fatalf("server has %d documents, want 3000", len(got))
	}
	if !equalMaps(snapshot(t, a.store), got) {
		t.Error("replicas differ after the restart")
	}
}

func TestConnectionCutDuringPull(t *testing.T) {
	srv := startServer(t)
	a := newNode(t, srv.url(), nil)
	for i := range 5000 {
		a.put(t, fmt.Sprintf(`{"_key":"d%d","pad":"%s"}`, i, strings.Repeat("x", 200)))
	}
	a.sync(t)
	p := newProxy(t, srv.addr)
	b := newNode(t, p.url(), nil)
	b.rep = replica.New(b.store, b.cli, replica.Options{PullLimit: 500})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { _, err := b.rep.Pull(ctx); errc <- err }()
	time.Sleep(10 * time.Millisecond)
	p.cut()
	<-errc
	b.sync(t) // resumes from the checkpoint
	if got := snapshot(t, b.store); !equalMaps(got, snapshot(t, a.store)) {
		t.Errorf("after a cut pull: %d documents, want %d", len(got), 5000)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestResyncAfterCompaction: a replica offline past the tombstone lifetime
// learns of deletions by a full resync.
func TestResyncAfterCompaction(t *testing.T) {
	dir := t.TempDir()
	srv, addr, _ := servertest.Start(t, syncserver.Config{DataDir: dir, TombstoneTTL: time.Millisecond, CompactEvery: -1}, "127.0.0.1:0")
	url := "ws://" + addr + "/v1/sync"
	a := newNode(t, url, nil)
	b := newNode(t, url, nil)
	a.put(t, `{"_key":"keep"}`)
	gone := a.put(t, `{"_key":"gone"}`)
	a.sync(t)
	b.sync(t)
	if b.get(t, gone) == nil {
		t.Fatal("b did not get the document")
	}
	if err := a.store.Delete(gone); err != nil {
		t.Fatal(err)
	}
	a.put(t, `{"_key":"new"}`)
	a.sync(t)
	time.Sleep(5 * time.Millisecond)
	if n, err := srv.CompactTombstones(context.Background()); err != nil || n != 1 {
		t.Fatalf("compact: %d %v", n, err)
	}
	b.put(t, `{"_key":"mine"}`) // a pending local write survives the resync
	b.sync(t)
	if b.get(t, gone) != nil {
		t.Error("b still has the document deleted on the server")
	}
	for _, id := range []string{"notes/keep", "notes/new", "notes/mine"} {
		if b.get(t, id) == nil {
			t.Errorf("b lost %s in the resync", id)
		}
	}
	if !equalMaps(snapshot(t, a.store), snapshot(t, b.store)) {
		a.sync(t)
		if !equalMaps(snapshot(t, a.store), snapshot(t, b.store)) {
			t.Error("replicas differ after the resync")
		}
	}
}

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
	resp, err := http.Get("http://" + s.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "hilodb_requests_total "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no hilodb_requests_total in %s", body)
	return 0
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
	a := newNode(t, srv.url(), nil)
	b := newNode(t, srv.url(), nil)
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
