package syncserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/internal/servertest"
	"github.com/hilodb/hilodb/syncserver"
)

// testServer is a real server on 127.0.0.1 (started by internal/servertest)
// over a data directory that survives restart.
type testServer struct {
	t    testing.TB
	dir  string
	cfg  syncserver.Config
	srv  *syncserver.Server
	hs   *httpBase
	halt func()
}

// httpBase is where a test server answers HTTP: URL is "http://host:port".
type httpBase struct{ URL string }

func startServer(t testing.TB, cfg syncserver.Config) *testServer {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if endpoints := os.Getenv("HILODB_TEST_ETCD"); endpoints != "" && len(cfg.Etcd) == 0 {
		// The same test on the etcd store (cluster/ runs the suite so):
		// each test server gets a prefix of its own, kept across restarts.
		cfg.Etcd = strings.Split(endpoints, ",")
		cfg.EtcdPrefix = fmt.Sprintf("test/%s/%d/", t.Name(), time.Now().UnixNano())
	}
	ts := &testServer{t: t, dir: cfg.DataDir, cfg: cfg}
	ts.start()
	return ts
}

func (ts *testServer) start() {
	ts.t.Helper()
	srv, addr, halt := servertest.Start(ts.t, ts.cfg, "127.0.0.1:0")
	ts.srv, ts.hs, ts.halt = srv, &httpBase{URL: "http://" + addr}, halt
}

func (ts *testServer) stop() {
	if ts.srv == nil {
		return
	}
	ts.halt()
	ts.srv = nil
}

func (ts *testServer) restart() {
	ts.stop()
	ts.start()
}

func (ts *testServer) url() string { return "ws" + strings.TrimPrefix(ts.hs.URL, "http") + "/v1/sync" }

// raw is a bare websocket connection for exact protocol tests.
type raw struct {
	t  testing.TB
	ws *websocket.Conn
}

func dialRaw(t testing.TB, ts *testServer) *raw {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, ts.url(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	ws.SetReadLimit(64 << 20)
	return &raw{t: t, ws: ws}
}

// call sends msg and returns the decoded reply.
func (r *raw) call(msg string) map[string]any {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		r.t.Fatalf("write: %v", err)
	}
	_, data, err := r.ws.Read(ctx)
	if err != nil {
		r.t.Fatalf("read reply to %s: %v", msg, err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		r.t.Fatalf("reply is not JSON: %s", data)
	}
	return m
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func TestProtocolExample(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	hello := r.call(`{"id":1,"op":"hello","db":"shop","token":"","node":""}`)
	if hello["id"] != 1.0 || hello["ok"] != true || hello["serverTag"] != "A" || hello["node"] == "" || hello["node"] == "A" {
		t.Fatalf("hello: %v", hello)
	}
	next := r.call(`{"id":2,"op":"hilo.next","tag":"orders","lastSize":0,"lastMax":0,"lastRangeAt":""}`)
	if next["ok"] != true || next["prefix"] != "orders/" || next["low"] != 1.0 || next["high"] != 32.0 || next["lastSize"] != 32.0 || next["serverTag"] != "A" {
		t.Fatalf("hilo.next: %v", next)
	}
	if _, err := time.Parse(time.RFC3339, next["lastRangeAt"].(string)); err != nil {
		t.Errorf("lastRangeAt: %v", err)
	}
	// Returned soon after, the next lease grows (used within 30 s).
	next2 := r.call(`{"id":3,"op":"hilo.next","tag":"orders","lastSize":32,"lastMax":32,"lastRangeAt":"` + next["lastRangeAt"].(string) + `"}`)
	if next2["low"] != 33.0 || next2["high"] != 96.0 || next2["lastSize"] != 64.0 {
		t.Fatalf("second hilo.next: %v", next2)
	}
	if ret := r.call(`{"id":4,"op":"hilo.return","tag":"orders","end":96,"last":40}`); ret["ok"] != true {
		t.Fatalf("hilo.return: %v", ret)
	}
	next3 := r.call(`{"id":5,"op":"hilo.next","tag":"orders","lastSize":0,"lastMax":0,"lastRangeAt":""}`)
	if next3["low"] != 41.0 {
		t.Fatalf("after return: %v, want low 41", next3)
	}
	if v := r.call(`{"id":6,"op":"identity.next","name":"companies"}`); v["value"] != 1.0 {
		t.Errorf("identity.next: %v", v)
	}
	if v := r.call(`{"id":7,"op":"identity.seed","name":"companies","value":1994,"force":false}`); v["value"] != 1994.0 {
		t.Errorf("identity.seed: %v", v)
	}
	if v := r.call(`{"id":8,"op":"identity.seed","name":"companies","value":10,"force":false}`); v["value"] != 1994.0 {
		t.Errorf("identity.seed lower without force: %v, want 1994", v)
	}
	if v := r.call(`{"id":9,"op":"identity.next","name":"companies"}`); v["value"] != 1995.0 {
		t.Errorf("identity.next after seed: %v", v)
	}
	// Forcing an identity lower would hand out values again: refused
	// unless the operator allows it.
	if v := r.call(`{"id":10,"op":"identity.seed","name":"companies","value":10,"force":true}`); errCode(v) != "forbidden" {
		t.Errorf("identity.seed force lower: %v, want forbidden", v)
	}
	if v := r.call(`{"id":11,"op":"identity.seed","name":"companies","value":3000,"force":true}`); v["value"] != 3000.0 {
		t.Errorf("identity.seed force higher: %v, want 3000", v)
	}
	lowering := startServer(t, syncserver.Config{AllowIdentityLowering: true})
	r = dialRaw(t, lowering)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	r.call(`{"id":2,"op":"identity.seed","name":"companies","value":1994,"force":false}`)
	if v := r.call(`{"id":3,"op":"identity.seed","name":"companies","value":10,"force":true}`); v["value"] != 10.0 {
		t.Errorf("identity.seed force with AllowIdentityLowering: %v, want 10", v)
	}
}

func TestCapacity(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	recent := time.Now().UTC().Add(-5 * time.Second).Format(time.RFC3339Nano)
	middle := time.Now().UTC().Add(-45 * time.Second).Format(time.RFC3339Nano)
	old := time.Now().UTC().Add(-5 * time.Minute).Format(time.RFC3339Nano)
	tests := []struct {
		lastSize int
		at       string
		want     float64
	}{
		{0, "", 32},
		{100, "", 100},
		{100, recent, 200},
		{1 << 20, recent, 1 << 20},
		{100, middle, 100},
		{100, old, 50},
		{40, old, 32},
	}
	for i, tt := range tests {
		msg, _ := json.Marshal(map[string]any{"id": i + 2, "op": "hilo.next", "tag": "sizes", "lastSize": tt.lastSize, "lastMax": 0, "lastRangeAt": tt.at})
		got := r.call(string(msg))
		if got["lastSize"] != tt.want || got["high"].(float64)-got["low"].(float64)+1 != tt.want {
			t.Errorf("lastSize %d at %q: got %v, want size %v", tt.lastSize, tt.at, got, tt.want)
		}
	}
}

func TestReturnRules(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	r.call(`{"id":2,"op":"hilo.next","tag":"t","lastSize":0,"lastMax":0,"lastRangeAt":""}`) // 1..32
	r.call(`{"id":3,"op":"hilo.next","tag":"t","lastSize":0,"lastMax":0,"lastRangeAt":""}`) // 33..64
	// Not the latest range: ignored.
	r.call(`{"id":4,"op":"hilo.return","tag":"t","end":32,"last":3}`)
	// Below the latest range's start: ignored, numbers 1..64 stay taken.
	r.call(`{"id":5,"op":"hilo.return","tag":"t","end":64,"last":10}`)
	if got := r.call(`{"id":6,"op":"hilo.next","tag":"t","lastSize":0,"lastMax":0,"lastRangeAt":""}`); got["low"] != 65.0 {
		t.Fatalf("got %v, want low 65", got)
	}
	// A valid return, then a second one trying to go lower: ignored.
	r.call(`{"id":7,"op":"hilo.return","tag":"t","end":96,"last":70}`)
	r.call(`{"id":8,"op":"hilo.return","tag":"t","end":70,"last":64}`)
	if got := r.call(`{"id":9,"op":"hilo.next","tag":"t","lastSize":0,"lastMax":0,"lastRangeAt":""}`); got["low"] != 71.0 {
		t.Fatalf("got %v, want low 71", got)
	}
	// lastMax from the client raises the start, up to the highest number
	// ever handed out (102, the end of the range leased by id 9)...
	r.call(`{"id":10,"op":"hilo.return","tag":"t","end":102,"last":80}`)
	if got := r.call(`{"id":11,"op":"hilo.next","tag":"t","lastSize":0,"lastMax":102,"lastRangeAt":""}`); got["low"] != 103.0 {
		t.Fatalf("got %v, want low 103", got)
	}
	// ...and no higher: a client reports only numbers it was given.
	if got := r.call(`{"id":12,"op":"hilo.next","tag":"t","lastSize":0,"lastMax":500,"lastRangeAt":""}`); errCode(got) != "bad_request" {
		t.Fatalf("got %v, want bad_request", got)
	}
}

func TestBadInput(t *testing.T) {
	ts := startServer(t, syncserver.Config{MaxMessageBytes: 1 << 16})
	r := dialRaw(t, ts)
	tests := []struct {
		msg, code string
		id        float64
	}{
		{`{"id":1,"op":"hilo.next","tag":"x"}`, "hello_required", 1},
		{`{not json`, "bad_json", 0},
		{`{"id":30,"op":"push","changes":[{"id":"a","rev":"_mAAAAAAA-AT","doc":{"x":}}]}`, "bad_json", 30},
		{"{\"id\":31,\"op\":\"hello\",\"db\":\"\xff\"}", "bad_json", 31}, // not UTF-8
		{`{"op":"hello","id":`, "bad_json", 0},
		{`[1,2]`, "bad_request", 0},
		{`{"id":"x","op":"hello"}`, "bad_request", 0},
		{`{"id":2,"op":"hello","db":"../etc","node":""}`, "illegal_name", 2},
		{`{"id":3,"op":"hello","db":"shop","node":"lower"}`, "bad_request", 3},
		{`{"id":4,"op":"hello","db":"shop","node":"A"}`, "bad_request", 4},
		{`{"id":5,"op":"hello","db":"shop","node":""}`, "", 5},
		{`{"id":6,"op":"hello","db":"shop","node":""}`, "bad_request", 6},
		{`{"id":7,"op":"nope"}`, "unknown_op", 7},
		{`{"id":8,"op":"hilo.next","tag":"","lastSize":0}`, "bad_request", 8},
		{`{"id":9,"op":"hilo.next","tag":"a/b","lastSize":0}`, "bad_request", 9},
		{`{"id":10,"op":"hilo.next","tag":"x","lastSize":-1}`, "bad_request", 10},
		{`{"id":11,"op":"hilo.next","tag":"x","lastMax":1e300}`, "bad_request", 11},
		{`{"id":12,"op":"hilo.next","tag":"x","lastMax":9007199254740991}`, "bad_request", 12},
		{`{"id":13,"op":"hilo.next","tag":"x","lastSize":"big"}`, "bad_request", 13},
		{`{"id":14,"op":"hilo.next","tag":"x","lastRangeAt":"yesterday"}`, "bad_request", 14},
		{`{"id":15,"op":"hilo.return","tag":"x","end":5,"last":9}`, "bad_request", 15},
		{`{"id":16,"op":"identity.seed","name":"c","value":-4}`, "bad_request", 16},
		{`{"id":17,"op":"identity.next","name":"c|d"}`, "bad_request", 17},
	}
	for _, tt := range tests {
		got := r.call(tt.msg)
		if got["id"] != tt.id || errCode(got) != tt.code || (tt.code == "") != (got["ok"] == true) {
			t.Errorf("%s: got %v, want id %v code %q", tt.msg, got, tt.id, tt.code)
		}
	}
	// The server still works normally.
	if got := r.call(`{"id":20,"op":"hilo.next","tag":"x","lastSize":0,"lastMax":0,"lastRangeAt":""}`); got["low"] != 1.0 {
		t.Errorf("after bad input: %v", got)
	}
	// An oversized frame closes that connection, not the server.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	big := `{"id":21,"op":"hello","db":"` + strings.Repeat("x", 1<<17) + `"}`
	_ = r.ws.Write(ctx, websocket.MessageText, []byte(big))
	if _, _, err := r.ws.Read(ctx); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("oversized frame: got %v, want close 1009", err)
	}
	r2 := dialRaw(t, ts)
	r2.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	if got := r2.call(`{"id":2,"op":"hilo.next","tag":"x","lastSize":0,"lastMax":0,"lastRangeAt":""}`); got["low"] != 33.0 {
		t.Errorf("after oversized frame: %v, want low 33", got)
	}
}

func TestTokens(t *testing.T) {
	ts := startServer(t, syncserver.Config{Tokens: map[string]string{"shop": "secret"}})
	r := dialRaw(t, ts)
	if got := r.call(`{"id":1,"op":"hello","db":"shop","token":"wrong","node":""}`); errCode(got) != "unauthorized" {
		t.Errorf("wrong token: %v", got)
	}
	r = dialRaw(t, ts)
	if got := r.call(`{"id":1,"op":"hello","db":"other","token":"secret","node":""}`); errCode(got) != "unauthorized" {
		t.Errorf("db without token: %v", got)
	}
	r = dialRaw(t, ts)
	if got := r.call(`{"id":1,"op":"hello","db":"shop","token":"secret","node":""}`); got["ok"] != true {
		t.Errorf("right token: %v", got)
	}
}

func TestNodeTagsUniqueAcrossRestart(t *testing.T) {
	ts := startServer(t, syncserver.Config{ServerTag: "B"})
	seen := map[string]bool{}
	hello := func() string {
		r := dialRaw(t, ts)
		got := r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
		n, _ := got["node"].(string)
		if n == "" || n == "B" || seen[n] {
			t.Fatalf("node %q: empty, the server's or repeated (%v)", n, got)
		}
		seen[n] = true
		return n
	}
	first := hello()
	for range 30 {
		hello()
	}
	ts.restart()
	for range 30 {
		hello()
	}
	// A client bringing its tag back keeps it.
	r := dialRaw(t, ts)
	if got := r.call(`{"id":1,"op":"hello","db":"shop","node":"` + first + `"}`); got["node"] != first {
		t.Errorf("returning client: %v, want %s", got, first)
	}
}

func TestStatePersistsAcrossRestart(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	r.call(`{"id":2,"op":"hilo.next","tag":"orders","lastSize":0,"lastMax":0,"lastRangeAt":""}`)
	r.call(`{"id":3,"op":"identity.seed","name":"c","value":7,"force":false}`)
	ts.restart()
	r = dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	if got := r.call(`{"id":2,"op":"hilo.next","tag":"orders","lastSize":0,"lastMax":0,"lastRangeAt":""}`); got["low"] != 33.0 {
		t.Errorf("after restart: %v, want low 33", got)
	}
	if got := r.call(`{"id":3,"op":"identity.next","name":"c"}`); got["value"] != 8.0 {
		t.Errorf("identity after restart: %v, want 8", got)
	}
	// Databases are separate.
	r2 := dialRaw(t, ts)
	r2.call(`{"id":1,"op":"hello","db":"other","node":""}`)
	if got := r2.call(`{"id":2,"op":"hilo.next","tag":"orders","lastSize":0,"lastMax":0,"lastRangeAt":""}`); got["low"] != 1.0 {
		t.Errorf("other database: %v, want low 1", got)
	}
}

// TestClientsNoDuplicates runs four clients with four goroutines each taking
// ids through real leases, and finds no id twice.
func TestClientsNoDuplicates(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	const clients, workers, each = 4, 4, 5000
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range clients {
		c := client.New(ts.url(), client.Options{Database: "shop"})
		t.Cleanup(func() { c.Close() })
		gen := idgen.NewGenerator(c)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				local := make([]string, 0, each)
				for range each {
					id, err := gen.NextID(context.Background(), "orders")
					if err != nil {
						t.Error(err)
						return
					}
					local = append(local, id)
				}
				mu.Lock()
				defer mu.Unlock()
				for _, id := range local {
					if seen[id] {
						t.Errorf("duplicate id %s", id)
					}
					seen[id] = true
				}
			}()
		}
	}
	wg.Wait()
	if len(seen) != clients*workers*each {
		t.Errorf("got %d distinct ids, want %d", len(seen), clients*workers*each)
	}
}

func TestClientReconnects(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	var nodes []string
	c := client.New(ts.url(), client.Options{Database: "shop", OnNode: func(n string) { nodes = append(nodes, n) }})
	defer c.Close()
	ctx := context.Background()
	if _, err := c.NextIdentity(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	ts.restart() // drops the connection; the restarted server has a new port
	c2 := client.New(ts.url(), client.Options{Database: "shop", Node: nodes[0], OnNode: func(n string) { nodes = append(nodes, n) }})
	defer c2.Close()
	v, err := c2.NextIdentity(ctx, "x")
	if err != nil || v != 2 {
		t.Fatalf("after restart: %d, %v", v, err)
	}
	if len(nodes) != 2 || nodes[0] != nodes[1] {
		t.Errorf("node tags %v: want the same tag kept", nodes)
	}
}

func TestHealthAndMetrics(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	r.call(`{"id":2,"op":"hilo.next","tag":"o","lastSize":0,"lastMax":0,"lastRangeAt":""}`)
	r.call(`{bad`)
	res, err := http.Get(ts.hs.URL + "/healthz")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", res, err)
	}
	res.Body.Close()
	res, err = http.Get(ts.hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{"hilodb_ranges_leased_total 1", "hilodb_connections 1", `hilodb_errors_total{code="bad_json"} 1`, "hilodb_fsync_total "} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}
