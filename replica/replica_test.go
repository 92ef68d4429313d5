package replica_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sort"
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
	// ackedText holds id + "@" + the text of each acknowledged write read
	// back at its acknowledgement: a write whose rev the server refused as
	// stale goes out again under a new rev (Store.Rerev), its text the same.
	ackedText map[string]bool
}

func newNode(t *testing.T, url string, resolve core.Resolver) *node {
	t.Helper()
	return newNodeWith(t, url, resolve, client.Options{Database: "shop"})
}

// quietNode is a node whose client sends no heartbeat pings, for tests
// that count the requests a sync makes.
func quietNode(t *testing.T, url string) *node {
	t.Helper()
	return newNodeWith(t, url, nil, client.Options{Database: "shop", Heartbeat: -1})
}

func newNodeWith(t *testing.T, url string, resolve core.Resolver, opts client.Options) *node {
	t.Helper()
	n := &node{}
	n.cli = client.New(url, opts)
	st, err := core.Open(":memory:", core.Options{IDs: idgen.NewGenerator(n.cli)})
	if err != nil {
		t.Fatal(err)
	}
	n.store = st
	n.acked = map[string]bool{}
	n.ackedText = map[string]bool{}
	n.rep = replica.New(st, n.cli, replica.Options{Resolve: resolve, OnConflict: func(c core.Conflict) {
		n.mu.Lock()
		n.conflicts = append(n.conflicts, c)
		n.mu.Unlock()
	}, OnAck: func(acks []core.Ack) {
		n.mu.Lock()
		defer n.mu.Unlock()
		for _, a := range acks {
			n.acked[a.ID+"@"+a.Rev] = true
			if doc, err := st.Get(a.ID); err == nil {
				var d struct {
					Rev  string `json:"_rev"`
					Text string `json:"text"`
				}
				if json.Unmarshal(doc, &d) == nil && d.Rev == a.Rev && d.Text != "" {
					n.ackedText[a.ID+"@"+d.Text] = true
				}
			}
		}
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
	texts := make([]map[string]string, replicas)   // id → text of the last put
	for i, n := range nodes {
		written[i] = map[string]string{}
		texts[i] = map[string]string{}
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
					written[i][id], texts[i][id] = d.Rev, text
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
			if n.acked[id+"@"+rev] || n.ackedText[id+"@"+texts[i][id]] {
				continue
			}
			cs, _ := n.store.Conflicts(id)
			found := false
			for _, c := range cs {
				found = found || c.Rev == rev || strings.Contains(string(c.Doc), `"text":"`+texts[i][id]+`"`)
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
