package syncserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hilodb/hilodb/syncserver"
)

// dialHeader dials with extra request headers; the error is the dial's.
func dialHeader(t *testing.T, ts *testServer, h http.Header) (*raw, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, ts.url(), &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { ws.CloseNow() })
	return &raw{t: t, ws: ws}, nil
}

// read returns the next message, or the read error.
func (r *raw) read() (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, data, err := r.ws.Read(ctx)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		r.t.Fatalf("reply is not JSON: %s", data)
	}
	return m, nil
}

// expectClosed checks that the server closes the connection with code.
func (r *raw) expectClosed(code websocket.StatusCode) {
	r.t.Helper()
	_, err := r.read()
	if got := websocket.CloseStatus(err); got != code {
		r.t.Errorf("got %v (status %d), want the connection closed with %d", err, got, code)
	}
}

func TestOriginAllowList(t *testing.T) {
	ts := startServer(t, syncserver.Config{AllowedOrigins: []string{"app.example.com", "*.trusted.dev"}})
	own := "http://" + strings.TrimPrefix(ts.hs.URL, "http://")
	for _, origin := range []string{"", "http://app.example.com", "https://x.trusted.dev", own} {
		h := http.Header{}
		if origin != "" {
			h.Set("Origin", origin)
		}
		r, err := dialHeader(t, ts, h)
		if err != nil {
			t.Fatalf("origin %q: %v", origin, err)
		}
		if got := r.call(`{"id":1,"op":"hello","db":"shop","node":""}`); got["ok"] != true {
			t.Errorf("origin %q: hello %v, want ok", origin, got)
		}
	}
	for _, origin := range []string{"http://evil.example", "https://trusted.dev.evil.example", "null"} {
		r, err := dialHeader(t, ts, http.Header{"Origin": {origin}})
		if err != nil {
			t.Fatalf("origin %q: %v", origin, err)
		}
		got, err := r.read()
		if err != nil || errCode(got) != "forbidden_origin" || got["id"] != 0.0 {
			t.Errorf("origin %q: got %v, %v; want forbidden_origin", origin, got, err)
			continue
		}
		r.expectClosed(websocket.StatusPolicyViolation)
	}
}

func TestRefusalsClose(t *testing.T) {
	t.Run("wrong token", func(t *testing.T) {
		ts := startServer(t, syncserver.Config{Tokens: map[string]string{"shop": "secret"}})
		r := dialRaw(t, ts)
		if got := r.call(`{"id":1,"op":"hello","db":"shop","token":"secreT","node":""}`); errCode(got) != "unauthorized" || got["id"] != 1.0 {
			t.Fatalf("got %v, want unauthorized", got)
		}
		r.expectClosed(websocket.StatusPolicyViolation)
	})
	t.Run("wildcard token", func(t *testing.T) {
		ts := startServer(t, syncserver.Config{Tokens: map[string]string{"shop": "secret", "*": "any"}})
		r := dialRaw(t, ts)
		if got := r.call(`{"id":1,"op":"hello","db":"other","token":"any","node":""}`); got["ok"] != true {
			t.Fatalf("got %v, want ok", got)
		}
		r = dialRaw(t, ts)
		if got := r.call(`{"id":1,"op":"hello","db":"shop","token":"any","node":""}`); errCode(got) != "unauthorized" {
			t.Fatalf("shop with the wildcard's token: got %v, want unauthorized", got)
		}
	})
	t.Run("proxied client on a server without tokens", func(t *testing.T) {
		ts := startServer(t, syncserver.Config{})
		r, err := dialHeader(t, ts, http.Header{"X-Forwarded-For": {"203.0.113.9"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.call(`{"id":1,"op":"hello","db":"shop","node":""}`); errCode(got) != "unauthorized" {
			t.Fatalf("got %v, want unauthorized", got)
		}
		r.expectClosed(websocket.StatusPolicyViolation)
	})
	t.Run("database not configured", func(t *testing.T) {
		ts := startServer(t, syncserver.Config{Databases: []string{"shop", "crm"}})
		r := dialRaw(t, ts)
		if got := r.call(`{"id":1,"op":"hello","db":"other","node":""}`); errCode(got) != "database_not_found" || got["error"].(map[string]any)["num"] != 1228.0 {
			t.Fatalf("got %v, want database_not_found 1228", got)
		}
		r.expectClosed(websocket.StatusPolicyViolation)
		r = dialRaw(t, ts)
		if got := r.call(`{"id":1,"op":"hello","db":"crm","node":""}`); got["ok"] != true {
			t.Fatalf("configured database: got %v", got)
		}
	})
}

func TestConfigRejected(t *testing.T) {
	for name, cfg := range map[string]syncserver.Config{
		"bad database":   {Databases: []string{"../x"}},
		"bad token name": {Tokens: map[string]string{"a/b": "t"}},
		"empty token":    {Tokens: map[string]string{"shop": ""}},
		"bad server tag": {ServerTag: "a"},
		"bad origin":     {AllowedOrigins: []string{"[x"}},
	} {
		cfg.DataDir = t.TempDir()
		if s, err := syncserver.New(cfg); err == nil {
			s.Close(context.Background())
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
}

func TestRateLimit(t *testing.T) {
	ts := startServer(t, syncserver.Config{RateLimit: 20, RateBurst: 5})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	const n = 30
	for i := range n {
		if err := r.ws.Write(ctx, websocket.MessageText, fmt.Appendf(nil, `{"id":%d,"op":"ping"}`, 100+i)); err != nil {
			t.Fatal(err)
		}
	}
	limited := 0
	for i := range n {
		got, err := r.read()
		if err != nil {
			t.Fatal(err)
		}
		if got["id"] != float64(100+i) {
			t.Fatalf("reply %d: got %v, want id %d", i, got, 100+i)
		}
		if got["ok"] != true {
			if errCode(got) != "rate_limited" || got["error"].(map[string]any)["num"] != 429.0 {
				t.Fatalf("got %v, want rate_limited 429", got)
			}
			limited++
		}
	}
	if limited < n/2 {
		t.Errorf("%d of %d requests limited, want most beyond the burst of 5", limited, n)
	}
	time.Sleep(300 * time.Millisecond)
	if got := r.call(`{"id":200,"op":"ping"}`); got["ok"] != true {
		t.Errorf("after a pause: %v, want ok (the connection stays open)", got)
	}
}

func TestIdleTimeout(t *testing.T) {
	ts := startServer(t, syncserver.Config{IdleTimeout: 300 * time.Millisecond})
	quiet := dialRaw(t, ts)
	quiet.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	busy := dialRaw(t, ts)
	busy.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	for i := range 8 {
		time.Sleep(100 * time.Millisecond)
		if got := busy.call(fmt.Sprintf(`{"id":%d,"op":"ping"}`, i+2)); got["ok"] != true {
			t.Fatalf("ping %d: %v", i, got)
		}
	}
	got, err := quiet.read()
	if err != nil || errCode(got) != "idle_timeout" || got["error"].(map[string]any)["num"] != 408.0 {
		t.Fatalf("idle connection: got %v, %v; want idle_timeout", got, err)
	}
	quiet.expectClosed(websocket.StatusGoingAway)
}

// snapshot is every stored value the dashboard reports: HiLo Max and
// identities of every database, and how many node tags exist (plus extra,
// for node tags legitimately handed out since).
func snapshot(t *testing.T, ts *testServer, extra int) string {
	t.Helper()
	res, err := http.Get(ts.hs.URL + "/dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var ov syncserver.Overview
	if err := json.NewDecoder(res.Body).Decode(&ov); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal([]any{ov.Databases, ov.Nodes + extra})
	return string(b)
}

// hostileMessages returns n messages, each malformed or hostile in some way
// and none allowed to change anything.
func hostileMessages(n int) []string {
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	deepObj := `{"id":3,"op":"hilo.next","tag":"orders","x":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000) + `}`
	base := []string{
		``, ` `, `{`, `}`, `{"id":1,"op":"hilo.next"`, `nul`, `"just a string"`, `42`, `null`, `[]`, `[{"id":1}]`,
		`{"id":1,"op":"hilo.next","tag":"orders",}`, "{\"id\":1,\"op\":\"hilo.next\",\"tag\":\"or\xffders\"}",
		"\x00\x01\x02", `{"id":-1,"op":"ping"}`, `{"id":1.5,"op":"ping"}`, `{"id":1e400,"op":"ping"}`, `{"id":"1","op":"ping"}`,
		`{"id":99999999999999999999999,"op":"ping"}`, `{"id":1,"op":"nope"}`, `{"id":1,"op":""}`, `{"id":1}`, `{"id":1,"op":7}`,
		`{"id":1,"op":"HILO.NEXT","tag":"orders"}`, `{"id":1,"op":"hello","db":"shop","node":""}`,
		`{"id":2,"op":"hilo.next","tag":"orders","lastSize":-5}`, `{"id":2,"op":"hilo.next","tag":"orders","lastMax":-1}`,
		`{"id":2,"op":"hilo.next","tag":"orders","lastSize":1e300}`, `{"id":2,"op":"hilo.next","tag":"orders","lastMax":9007199254740992}`,
		`{"id":2,"op":"hilo.next","tag":"orders","lastSize":"32"}`, `{"id":2,"op":"hilo.next","tag":["orders"]}`,
		`{"id":2,"op":"hilo.next","tag":"orders","lastRangeAt":12}`, `{"id":2,"op":"hilo.next","tag":"orders","lastRangeAt":"soon"}`,
		`{"id":2,"op":"hilo.next","tag":"../../etc/passwd"}`, `{"id":2,"op":"hilo.next","tag":"a|b"}`, `{"id":2,"op":"hilo.next","tag":"\u0000"}`,
		`{"id":2,"op":"hilo.next","tag":"` + strings.Repeat("t", 600) + `"}`, `{"id":2,"op":"hilo.next","tag":null}`,
		`{"id":3,"op":"hilo.return","tag":"orders","end":-1,"last":0}`, `{"id":3,"op":"hilo.return","tag":"orders","end":10,"last":11}`,
		`{"id":3,"op":"hilo.return","tag":"orders","end":"x","last":1}`, `{"id":3,"op":"hilo.return","tag":"orders","end":1e99,"last":1}`,
		`{"id":4,"op":"identity.next","name":""}`, `{"id":4,"op":"identity.next","name":7}`, `{"id":4,"op":"identity.next","name":"a/b"}`,
		`{"id":5,"op":"identity.seed","name":"companies","value":-1,"force":true}`, `{"id":5,"op":"identity.seed","name":"companies","value":1e300}`,
		`{"id":5,"op":"identity.seed","name":"companies","value":9007199254740993,"force":true}`, `{"id":5,"op":"identity.seed","name":"companies","value":"5"}`,
		`{"id":5,"op":"identity.seed","name":"companies","value":5,"force":"yes"}`,
		`{"id":6,"op":"identity.nextBatch","names":["companies",null]}`, `{"id":6,"op":"identity.nextBatch","names":{"a":1}}`,
		`{"id":6,"op":"identity.nextBatch","names":["companies","x|y"]}`, `{"id":6,"op":"identity.nextBatch","names":[` + strings.Repeat(`"c",`, 10000) + `"c"]}`,
		deep, deepObj,
	}
	out := make([]string, 0, n)
	for i := 0; len(out) < n; i++ {
		out = append(out, base[i%len(base)])
	}
	return out
}

// TestHostileMessages sends 1,000 malformed or hostile messages, oversized
// frames and binary frames, and checks that each gets an error (or, when
// oversized, a close), that nothing stored changed, and that the server then
// answers normally.
func TestHostileMessages(t *testing.T) {
	ts := startServer(t, syncserver.Config{MaxMessageBytes: 512 << 10, RateLimit: -1})
	setup := dialRaw(t, ts)
	setup.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	first := setup.call(`{"id":2,"op":"hilo.next","tag":"orders","lastSize":0,"lastMax":0,"lastRangeAt":""}`)
	setup.call(`{"id":3,"op":"identity.seed","name":"companies","value":41,"force":false}`)
	setup.call(`{"id":4,"op":"identity.next","name":"companies"}`)
	before := snapshot(t, ts, 4) // four more hellos below succeed

	// A connection before hello: all refused with an error.
	pre := dialRaw(t, ts)
	for _, m := range []string{`{"id":1,"op":"hilo.next","tag":"orders"}`, `{"id":1,"op":"hello","db":"","node":""}`, `{"id":1,"op":"hello","db":"shop","node":"A"}`, `{"id":1,"op":"hello","db":"shop","node":"TOOLONGTAG"}`, `{"id":1,"op":"hello","db":5}`} {
		if got := pre.call(m); got["ok"] != false || errCode(got) == "" {
			t.Errorf("before hello %s: got %v, want an error", m, got)
		}
	}
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	msgs := hostileMessages(1000)
	for i, m := range msgs {
		got := r.call(m)
		if got["ok"] != false || errCode(got) == "" {
			t.Fatalf("hostile message %d %.80q: got %v, want an error reply", i, m, got)
		}
	}
	// Binary frames and oversized frames.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.ws.Write(ctx, websocket.MessageBinary, []byte(`{"id":1,"op":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	if got, err := r.read(); err != nil || errCode(got) != "bad_request" {
		t.Errorf("binary frame: %v %v", got, err)
	}
	for range 3 {
		big := dialRaw(t, ts)
		big.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
		_ = big.ws.Write(ctx, websocket.MessageText, []byte(`{"id":2,"op":"identity.next","name":"`+strings.Repeat("x", 1<<20)+`"}`))
		big.expectClosed(websocket.StatusMessageTooBig)
	}

	if after := snapshot(t, ts, 0); after != before {
		t.Errorf("stored values changed:\nbefore %s\nafter  %s", before, after)
	}
	// The server answers normally and hands out the next numbers.
	if got := r.call(`{"id":7,"op":"hilo.next","tag":"orders","lastSize":0,"lastMax":0,"lastRangeAt":""}`); got["low"] != first["high"].(float64)+1 {
		t.Errorf("hilo.next after the attack: %v, want low %v", got, first["high"].(float64)+1)
	}
	if got := r.call(`{"id":8,"op":"identity.next","name":"companies"}`); got["value"] != 43.0 {
		t.Errorf("identity.next after the attack: %v, want 43", got)
	}
	res, err := http.Get(ts.hs.URL + "/healthz")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", res, err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
}
