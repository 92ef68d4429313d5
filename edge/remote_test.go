//go:build !(js && wasm)

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/internal/servertest"
	"github.com/hilodb/hilodb/syncserver"
)

// syncServer starts a sync server on loopback and returns its websocket URL
// and a function that reads one of its /metrics counters.
func syncServer(t *testing.T) (string, func(name string) int64) {
	t.Helper()
	addr, _ := servertest.Serve(t, syncserver.Config{DataDir: t.TempDir(), ServerTag: "A"}, "127.0.0.1:0")
	metric := func(name string) int64 {
		t.Helper()
		res, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^` + name + ` (\d+)$`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("no %s in /metrics", name)
		}
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		return n
	}
	return "ws://" + addr + "/v1/sync", metric
}

func TestRemoteLeasesConsecutiveRangesAndKeepsTheNode(t *testing.T) {
	url, _ := syncServer(t)
	r := newRemote(url, client.Options{Database: "shop"})
	var nodes []string
	r.setOnNode(func(n string) { nodes = append(nodes, n) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	r1, err := r.NextRange(ctx, "orders", idgen.Range{})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := r.NextRange(ctx, "orders", r1)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Low != 1 || r1.ServerTag != "A" || r1.Prefix != "orders/" {
		t.Errorf("first range: got %+v, want orders/ from 1, server tag A", r1)
	}
	if r2.Low != r1.High+1 {
		t.Errorf("second range: got %d…%d, want it to start at %d", r2.Low, r2.High, r1.High+1)
	}
	if len(nodes) != 1 || nodes[0] == "" || r.Node() != nodes[0] {
		t.Errorf("node tags: got onNode calls %q and Node %q, want one call with the tag Node returns", nodes, r.Node())
	}
}

func TestRemoteThroughGenerator(t *testing.T) {
	url, _ := syncServer(t)
	g := idgen.NewGenerator(newRemote(url, client.Options{Database: "shop"}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, want := range []string{"orders/1-A", "orders/2-A", "orders/3-A"} {
		got, err := g.NextID(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("id %d: got %s, want %s", i, got, want)
		}
	}
}

func TestRemoteServerDown(t *testing.T) {
	r := newRemote("ws://127.0.0.1:1/v1/sync", client.Options{Database: "shop"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	calls := []struct {
		name string
		call func() error
	}{
		{"lease", func() error { _, err := r.NextRange(ctx, "orders", idgen.Range{}); return err }},
		{"push", func() error {
			_, err := r.Push(ctx, []client.PushItem{{ID: "orders/1", Rev: "r", Doc: []byte(`{}`)}})
			return err
		}},
		{"get", func() error { _, err := r.Get(ctx, []string{"orders/1"}); return err }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			if !errors.Is(err, client.ErrDisconnected) {
				t.Fatalf("got %v, want client.ErrDisconnected", err)
			}
			if f := classify(err); f.status != 503 || f.num != 1900 {
				t.Errorf("classify: got %+v, want 503 needs_server 1900", f)
			}
		})
	}
}

func TestRemoteRequestGone(t *testing.T) {
	r := newRemote("ws://127.0.0.1:1/v1/sync", client.Options{Database: "shop", Node: "N"})
	r.enterTurn = func(context.Context) bool { return false }
	_, err := r.NextRange(context.Background(), "orders", idgen.Range{})
	if !errors.Is(err, errRequestGone) {
		t.Fatalf("got %v, want errRequestGone", err)
	}
}

// newTestApp opens an app for the sync server at url, as one isolate.
func newTestApp(t *testing.T, url string) http.Handler {
	t.Helper()
	a, err := openApp(config{URL: url, Database: "shop"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a.handler()
}

func TestWriteThroughToTheSyncServer(t *testing.T) {
	url, metric := syncServer(t)
	one := newTestApp(t, url)

	var posted []answer
	for i := range 3 {
		a := do(t, one, "POST", "/docs/orders", fmt.Sprintf(`{"n":%d}`, i))
		if a.status != http.StatusCreated {
			t.Fatalf("POST %d: got %d %v, want 201", i, a.status, a.body)
		}
		posted = append(posted, a)
	}
	if got := metric("hilodb_docs_pushed_total"); got != 3 {
		t.Errorf("documents pushed: got %d, want 3", got)
	}
	// The first POST leased and pushed on one connection; the others only
	// pushed. So one connection a request, and one range.
	if got := metric("hilodb_connections_total"); got != 3 {
		t.Errorf("connections: got %d, want 3 (one per POST)", got)
	}
	if got := metric("hilodb_ranges_leased_total"); got != 1 {
		t.Errorf("ranges leased: got %d, want 1", got)
	}

	// Another isolate reads them through, then has them cached.
	two := newTestApp(t, url)
	for _, p := range posted {
		id := p.body["_id"].(string)
		for _, want := range []string{"miss", "hit"} {
			g := do(t, two, "GET", "/docs/"+id, "")
			if g.status != 200 || fmt.Sprint(g.body) != fmt.Sprint(p.body) {
				t.Errorf("GET %s (%s): got %d %v, want 200 %v", id, want, g.status, g.body, p.body)
			}
			wantCache(t, g, want)
		}
	}

	// A document read through can be written over from there.
	id := posted[0].body["_id"].(string)
	key := posted[0].body["_key"].(string)
	w := do(t, two, "POST", "/docs/orders", fmt.Sprintf(`{"_key":%q,"n":"new"}`, key))
	if w.status != http.StatusCreated {
		t.Fatalf("overwrite: got %d %v, want 201", w.status, w.body)
	}
	// The first isolate still has the old version cached: a write over it
	// conflicts rather than losing the other write.
	c := do(t, one, "POST", "/docs/orders", fmt.Sprintf(`{"_key":%q,"n":"lost?"}`, key))
	wantError(t, c, 409, "conflict", 1200)
	if g := do(t, one, "GET", "/docs/"+id, ""); g.status != 200 || g.body["n"] != "new" {
		t.Errorf("GET after the conflict: got %d %v, want the server's version (n new)", g.status, g.body)
	}
}

func TestBurstOfFirstRequestsUsesOneNodeTag(t *testing.T) {
	url, metric := syncServer(t)
	h := newTestApp(t, url)
	var wg sync.WaitGroup
	answers := make([]answer, 20)
	for i := range answers {
		wg.Go(func() {
			answers[i] = do(t, h, "POST", "/docs/orders", fmt.Sprintf(`{"_key":"k%d"}`, i))
		})
	}
	wg.Wait()
	for i, a := range answers {
		if a.status != http.StatusCreated {
			t.Errorf("POST %d: got %d %v, want 201", i, a.status, a.body)
		}
	}
	if got := metric("hilodb_nodes_assigned_total"); got != 1 {
		t.Errorf("node tags assigned: got %d, want 1", got)
	}
	if got := metric("hilodb_docs_pushed_total"); got != 20 {
		t.Errorf("documents pushed: got %d, want 20", got)
	}
}

func TestServerStopped(t *testing.T) {
	addr, stop := servertest.Serve(t, syncserver.Config{DataDir: t.TempDir(), ServerTag: "A"}, "127.0.0.1:0")
	url := "ws://" + addr + "/v1/sync"
	h := newTestApp(t, url)
	first := do(t, h, "POST", "/docs/orders", `{"online":true}`)
	if first.status != http.StatusCreated {
		t.Fatalf("POST: got %d %v, want 201", first.status, first.body)
	}
	stop()

	// The range is resident, but a write cannot be made durable.
	for _, body := range []string{`{"offline":true}`, `{"_key":"named"}`} {
		wantError(t, do(t, h, "POST", "/docs/orders", body), 503, "needs_server", 1900)
	}
	// Cached documents are still served; misses cannot be.
	g := do(t, h, "GET", "/docs/"+first.body["_id"].(string), "")
	if g.status != 200 {
		t.Errorf("GET cached: got %d %v, want 200", g.status, g.body)
	}
	wantCache(t, g, "hit")
	for _, id := range []string{"orders/2-A", "orders/named"} {
		a := do(t, h, "GET", "/docs/"+id, "")
		wantError(t, a, 503, "needs_server", 1900)
		wantCache(t, a, "miss")
	}
}
