package syncserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hilodb/hilodb/syncserver"
)

// hostGet fetches path from ts with the Host header set to host.
func hostGet(t *testing.T, ts *testServer, path, host string) (int, string) {
	t.Helper()
	return get(t, ts.hs.URL+path, http.Header{"Host": {host}})
}

// dialHost dials ts's websocket naming host in the Host and Origin headers,
// as a page on a rebound DNS name does.
func dialHost(t *testing.T, ts *testServer, host string) (*raw, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, res, err := websocket.Dial(ctx, ts.url(), &websocket.DialOptions{Host: host, HTTPHeader: http.Header{"Origin": {"http://" + host}}})
	if err != nil {
		return nil, res, err
	}
	t.Cleanup(func() { ws.CloseNow() })
	return &raw{t: t, ws: ws}, res, nil
}

func TestHostCheckAgainstDNSRebinding(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	port := ts.hs.URL[strings.LastIndex(ts.hs.URL, ":")+1:]
	// Seed a document, so there is something to steal.
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	r.call(`{"id":2,"op":"push","changes":[{"id":"orders/1-A","rev":"_mAAAAAAAB-T","doc":{"secret":1}}]}`)

	evil := "rebind.attacker.example:" + port
	if _, res, err := dialHost(t, ts, evil); err == nil || res == nil || res.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("websocket with Host %s: %v %v, want 421", evil, res, err)
	}
	for _, path := range []string{"/admin/backup", "/dashboard.json", "/dashboard", "/metrics", "/healthz"} {
		code, body := hostGet(t, ts, path, evil)
		if code != http.StatusMisdirectedRequest || !strings.Contains(body, `"forbidden_host"`) || strings.Contains(body, "secret") {
			t.Errorf("GET %s with Host %s: %d %.200s, want 421 forbidden_host", path, evil, code, body)
		}
	}
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port, "LOCALHOST.:" + port} {
		if code, _ := hostGet(t, ts, "/dashboard.json", host); code != http.StatusOK {
			t.Errorf("Host %s: %d, want 200", host, code)
		}
		c, _, err := dialHost(t, ts, host)
		if err != nil {
			t.Fatalf("websocket with Host %s: %v", host, err)
		}
		if got := c.call(`{"id":1,"op":"hello","db":"shop","node":""}`); got["ok"] != true {
			t.Errorf("hello with Host %s: %v", host, got)
		}
	}
	if m := metric(t, mustGet(t, ts.hs.URL+"/metrics"), `hilodb_errors_total{code="forbidden_host"}`); m != 6 {
		t.Errorf("forbidden_host counted %v times, want 6", m)
	}

	// A name the operator lists is answered; others still are not.
	listed := startServer(t, syncserver.Config{AllowedHosts: []string{"*.lan.example"}})
	if code, _ := hostGet(t, listed, "/healthz", "box.lan.example:8080"); code != 200 {
		t.Errorf("listed host: %d, want 200", code)
	}
	if code, _ := hostGet(t, listed, "/healthz", "lan.example.evil:8080"); code != http.StatusMisdirectedRequest {
		t.Errorf("unlisted host: %d, want 421", code)
	}
	// With tokens, every client proves itself; the Host is not checked.
	tokens := startServer(t, syncserver.Config{Tokens: map[string]string{"shop": "s3cret"}})
	if code, _ := hostGet(t, tokens, "/healthz", "sync.example.com"); code != 200 {
		t.Errorf("server with tokens, other host: %d, want 200", code)
	}
}

func mustGet(t *testing.T, url string) string {
	t.Helper()
	code, body := get(t, url, nil)
	if code != 200 {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	return body
}

func TestReturnOnlyFromTheLessee(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	b := dialRaw(t, ts)
	hb := b.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	a := dialRaw(t, ts)
	a.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	next := `{"id":2,"op":"hilo.next","tag":"orders","lastSize":0,"lastMax":0,"lastRangeAt":""}`
	if got := b.call(next); got["low"] != 1.0 || got["high"] != 32.0 {
		t.Fatalf("B: %v, want 1-32", got)
	}
	if got := a.call(next); got["low"] != 33.0 || got["high"] != 64.0 {
		t.Fatalf("A: %v, want 33-64", got)
	}
	// B returns A's range: ignored.
	if got := b.call(`{"id":3,"op":"hilo.return","tag":"orders","end":64,"last":32}`); got["ok"] != true {
		t.Fatalf("return: %v", got)
	}
	// So is the same from a connection claiming A's... or B's node tag.
	thief := dialRaw(t, ts)
	thief.call(`{"id":1,"op":"hello","db":"shop","node":"` + hb["node"].(string) + `"}`)
	thief.call(`{"id":2,"op":"hilo.return","tag":"orders","end":64,"last":32}`)
	c := dialRaw(t, ts)
	c.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	if got := c.call(next); got["low"] != 65.0 {
		t.Fatalf("next lease after foreign returns: %v, want low 65 (33-64 is A's)", got)
	}
	// The lessee's own return of its latest range is taken.
	if got := c.call(`{"id":3,"op":"hilo.return","tag":"orders","end":96,"last":70}`); got["ok"] != true {
		t.Fatal(got)
	}
	if got := c.call(next); got["low"] != 71.0 {
		t.Fatalf("after the lessee's return: %v, want low 71", got)
	}
	body := mustGet(t, ts.hs.URL+"/metrics")
	if m := metric(t, body, `hilodb_errors_total{code="hilo_return_ignored"}`); m != 2 {
		t.Errorf("ignored returns counted %v, want 2", m)
	}
}

func TestLastMaxCannotExhaustATag(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	r.call(`{"id":2,"op":"hilo.next","tag":"orders","lastSize":0,"lastMax":0,"lastRangeAt":""}`)
	if got := r.call(`{"id":3,"op":"hilo.next","tag":"orders","lastSize":0,"lastMax":9007199254740958,"lastRangeAt":""}`); errCode(got) != "bad_request" {
		t.Fatalf("lastMax past anything handed out: %v, want bad_request", got)
	}
	if got := r.call(`{"id":4,"op":"hilo.next","tag":"fresh","lastSize":0,"lastMax":5,"lastRangeAt":""}`); errCode(got) != "bad_request" {
		t.Fatalf("lastMax on a tag never leased: %v, want bad_request", got)
	}
	if got := r.call(`{"id":5,"op":"hilo.next","tag":"orders","lastSize":0,"lastMax":32,"lastRangeAt":""}`); got["low"] != 33.0 {
		t.Fatalf("the tag still leases: %v, want low 33", got)
	}
}

func TestGetRepliesAreBounded(t *testing.T) {
	ts := startServer(t, syncserver.Config{MaxMessageBytes: 1 << 20, RateLimit: -1})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	big := strings.Repeat("x", 200<<10)
	for i := range 6 {
		if got := r.call(fmt.Sprintf(`{"id":2,"op":"push","changes":[{"id":"big/%d","rev":"_mAAAAAAAB-T","doc":{"blob":%q}}]}`, i, big)); results(t, got)[0]["ok"] != true {
			t.Fatal(got)
		}
	}
	// One 18 KB request naming one 200 KB document 2,000 times.
	ids := strings.TrimSuffix(strings.Repeat(`"big/0",`, 2000), ",")
	if got := r.call(`{"id":3,"op":"get","ids":[` + ids + `]}`); errCode(got) != "bad_request" {
		t.Fatalf("get of one id 2,000 times: %.200v, want bad_request", got)
	}
	// Six distinct 200 KB documents pass the 1 MiB reply bound.
	if got := r.call(`{"id":4,"op":"get","ids":["big/0","big/1","big/2","big/3","big/4","big/5"]}`); errCode(got) != "reply_too_big" {
		t.Fatalf("get past the reply bound: %.200v, want reply_too_big", got)
	}
	if got := r.call(`{"id":5,"op":"get","ids":["big/0","big/1","none"]}`); got["ok"] != true || len(got["docs"].([]any)) != 3 {
		t.Fatalf("get within the bound: %.200v", got)
	}
}

func TestPushConflictRepliesAreBounded(t *testing.T) {
	ts := startServer(t, syncserver.Config{MaxMessageBytes: 1 << 20, RateLimit: -1})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	big := strings.Repeat("y", 200<<10)
	r.call(fmt.Sprintf(`{"id":2,"op":"push","changes":[{"id":"big","rev":"_mAAAAAAAB-T","doc":{"blob":%q}},{"id":"big2","rev":"_mAAAAAAAB-T","doc":{"blob":%q}}]}`, big, big))
	items := make([]string, 0, 1000)
	for i := range 1000 {
		id := "big"
		if i%500 == 1 {
			id = "big2"
		}
		items = append(items, fmt.Sprintf(`{"id":%q,"baseRev":"_mAAAAAAAA-T","rev":"_mAAAAAA%03dT","doc":{}}`, id, i))
	}
	// A bound against a hang, not a speed check: on etcd under -race the
	// 1,000 conflicts take about 4 s.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := r.ws.Write(ctx, websocket.MessageText, []byte(`{"id":3,"op":"push","changes":[`+strings.Join(items, ",")+`]}`)); err != nil {
		t.Fatal(err)
	}
	_, data, err := r.ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 700<<10 { // two documents, 1,000 results of about 200 bytes; a third copy passes it
		t.Errorf("reply to 1,000 conflicts on two 200 KB documents is %d bytes, want each document once", len(data))
	}
	var reply struct {
		Results []struct {
			ID             string          `json:"id"`
			Current        json.RawMessage `json:"current"`
			CurrentOmitted bool            `json:"currentOmitted"`
			Error          struct{ Code string }
		}
	}
	if err := json.Unmarshal(data, &reply); err != nil {
		t.Fatal(err)
	}
	withCurrent := map[string]int{}
	for _, res := range reply.Results {
		if res.Error.Code != "conflict" {
			t.Fatalf("result %+v, want conflict", res.Error)
		}
		if len(res.Current) > 0 {
			withCurrent[res.ID]++
		} else if !res.CurrentOmitted {
			t.Fatalf("conflict without current and without currentOmitted")
		}
	}
	if withCurrent["big"] != 1 || withCurrent["big2"] != 1 {
		t.Errorf("current sent %v times per document, want once each", withCurrent)
	}
}

func TestSameRevDifferentContentConflicts(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	r.call(`{"id":2,"op":"push","changes":[{"id":"o/1","rev":"_mAAAAAAAB-T","doc":{"a":1,"b":[1,2]}}]}`)
	// A retry of the same write (other spacing and member order): ok.
	if res := results(t, r.call(`{"id":3,"op":"push","changes":[{"id":"o/1","rev":"_mAAAAAAAB-T","doc":{ "b" : [1,2], "a" : 1 }}]}`)); res[0]["ok"] != true {
		t.Errorf("retry: %v, want ok", res[0])
	}
	// The same _rev with other content is not a retry.
	res := results(t, r.call(`{"id":4,"op":"push","changes":[{"id":"o/1","rev":"_mAAAAAAAB-T","doc":{"a":2}}]}`))
	if res[0]["ok"] == true || res[0]["error"].(map[string]any)["code"] != "conflict" {
		t.Errorf("same rev, other content: %v, want conflict", res[0])
	}
	if res := results(t, r.call(`{"id":5,"op":"push","changes":[{"id":"o/1","rev":"_mAAAAAAAB-T","deleted":true}]}`)); res[0]["ok"] == true {
		t.Errorf("same rev as a deletion: %v, want conflict", res[0])
	}
	got := r.call(`{"id":6,"op":"get","ids":["o/1"]}`)
	if doc := got["docs"].([]any)[0].(map[string]any)["doc"].(map[string]any); doc["a"] != 1.0 {
		t.Errorf("stored document changed: %v", doc)
	}
}

func TestRepeatedMembersRefused(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	for _, doc := range []string{`{"_id":"o/1","_rev":"_mAAAAAAAB-T","_id":"o/2"}`, `{"_rev":"_mAAAAAAAB-T","_rev":"_mAAAAAAAJ-T"}`, `{"a":1,"a":2}`, `{"_\u0069d":"x","_id":"y"}`} {
		res := results(t, r.call(`{"id":2,"op":"push","changes":[{"id":"o/1","rev":"_mAAAAAAAB-T","doc":`+doc+`}]}`))
		if res[0]["ok"] == true || res[0]["error"].(map[string]any)["code"] != "bad_document" {
			t.Errorf("doc %s: %v, want bad_document", doc, res[0])
		}
	}
	if got := r.call(`{"id":3,"op":"get","ids":["o/1"]}`); got["docs"].([]any)[0].(map[string]any)["rev"] != "" {
		t.Errorf("a refused document was stored: %v", got)
	}
}

func TestUnpairedSurrogatesRefused(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	for _, msg := range []string{
		`{"id":2,"op":"push","changes":[{"id":"o/\ud800","rev":"_mAAAAAAAB-T","doc":{}}]}`,
		`{"id":2,"op":"push","changes":[{"id":"o/\udc00x","rev":"_mAAAAAAAB-T","doc":{}}]}`,
		`{"id":2,"op":"push","changes":[{"id":"o/1","rev":"1-\ud800","doc":{}}]}`,
		`{"id":2,"op":"hilo.next","tag":"t\ud800","lastSize":0,"lastMax":0,"lastRangeAt":""}`,
		`{"id":2,"op":"identity.next","name":"\udfff"}`,
		`{"id":2,"op":"identity.nextBatch","names":["a","\ud800\ud800"]}`,
		`{"id":2,"op":"get","ids":["\ud800"]}`,
		`{"id":2,"op":"get","ids":["\uDBFF"]}`,
	} {
		if got := r.call(msg); errCode(got) != "bad_request" || got["id"] != 2.0 {
			t.Errorf("%s: %v, want bad_request", msg, got)
		}
	}
	// A proper pair, an escaped backslash before "ud800" and lone
	// surrogates inside a document are fine.
	res := results(t, r.call(`{"id":3,"op":"push","changes":[{"id":"o/\ud83d\ude00","rev":"_mAAAAAAAB-T","doc":{"s":"\ud800"}},{"id":"o/\\ud800","rev":"_mAAAAAAAB-T","doc":{}}]}`))
	if res[0]["ok"] != true || res[1]["ok"] != true {
		t.Errorf("valid ids: %v", res)
	}
	if res[0]["id"] != "o/😀" {
		t.Errorf("id %q, want o/😀", res[0]["id"])
	}
}

func TestSinceAboveSequenceRefused(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	last := int64(r.call(`{"id":2,"op":"push","changes":[{"id":"o/1","rev":"_mAAAAAAAB-T","doc":{}},{"id":"o/2","rev":"_mAAAAAAAB-T","doc":{}}]}`)["last"].(float64))
	past := last + 1
	if ts.onEtcd() {
		// On etcd the bound is etcd's current revision, which other
		// writes raise meanwhile.
		past = last + 1_000_000
	}
	for _, msg := range []string{`{"id":3,"op":"pull","since":9223372036854775807}`, fmt.Sprintf(`{"id":3,"op":"pull","since":%d}`, past), fmt.Sprintf(`{"id":3,"op":"subscribe","since":%d}`, past)} {
		if got := r.call(msg); errCode(got) != "bad_request" {
			t.Errorf("%s: %v, want bad_request", msg, got)
		}
	}
	if got := r.call(fmt.Sprintf(`{"id":4,"op":"pull","since":%d}`, last)); got["ok"] != true || got["last"] != float64(last) {
		t.Errorf("pull at the last sequence: %v", got)
	}
}

func TestHelloDeadline(t *testing.T) {
	ts := startServer(t, syncserver.Config{HelloTimeout: 300 * time.Millisecond})
	r := dialRaw(t, ts)
	start := time.Now()
	// Frames without hello keep arriving, but do not keep it open.
	for range 20 {
		got := r.call(`{"id":1,"op":"ping"}`)
		if errCode(got) == "hello_timeout" {
			break
		}
		if errCode(got) != "hello_required" {
			t.Fatalf("got %v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.expectClosed(websocket.StatusPolicyViolation)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("closed after %v, want about 300ms", d)
	}
	// A connection that says hello in time stays.
	ok := dialRaw(t, ts)
	ok.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	time.Sleep(500 * time.Millisecond)
	if got := ok.call(`{"id":2,"op":"ping"}`); got["ok"] != true {
		t.Errorf("after hello: %v", got)
	}
	if m := metric(t, mustGet(t, ts.hs.URL+"/metrics"), `hilodb_errors_total{code="hello_timeout"}`); m != 1 {
		t.Errorf("hello_timeout counted %v, want 1", m)
	}
}

func TestMessagesBeforeHelloAreSmall(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.ws.Write(ctx, websocket.MessageText, []byte(`{"id":1,"op":"hello","db":"shop","x":"`+strings.Repeat("x", 100<<10)+`"}`))
	r.expectClosed(websocket.StatusMessageTooBig)
	// After hello, the server's -max-message applies.
	r = dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	if got := r.call(`{"id":2,"op":"ping","x":"` + strings.Repeat("x", 100<<10) + `"}`); got["ok"] != true {
		t.Errorf("100 KB after hello: %v", got)
	}
}

func TestConnectionLimits(t *testing.T) {
	ts := startServer(t, syncserver.Config{MaxConnsPerAddr: 3})
	var conns []*raw
	for range 3 {
		conns = append(conns, dialRaw(t, ts))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, res, err := websocket.Dial(ctx, ts.url(), nil)
	if err == nil || res == nil || res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("fourth connection from one address: %v %v, want 503", res, err)
	}
	conns[0].ws.Close(websocket.StatusNormalClosure, "")
	waitFor(t, func() bool {
		ws, _, err := websocket.Dial(ctx, ts.url(), nil)
		if err == nil {
			ws.CloseNow()
		}
		return err == nil
	})
	body := mustGet(t, ts.hs.URL+"/metrics")
	if m := metric(t, body, `hilodb_errors_total{code="too_many_connections"}`); m < 1 {
		t.Errorf("too_many_connections counted %v", m)
	}
	if m := metric(t, body, "hilodb_connections_per_addr_limit"); m != 3 {
		t.Errorf("limit shown as %v", m)
	}

	total := startServer(t, syncserver.Config{MaxConns: 2})
	dialRaw(t, total)
	dialRaw(t, total)
	if _, res, err := websocket.Dial(ctx, total.url(), nil); err == nil || res == nil || res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third connection over a total of 2: %v %v, want 503", res, err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBufferedBytesBound holds partial messages open on many connections,
// as a slow-loris client would, and checks that the server refuses to hold
// more than its bound and gives it all back.
func TestBufferedBytesBound(t *testing.T) {
	ts := startServer(t, syncserver.Config{MaxMessageBytes: 1 << 20, MaxBufferedBytes: 3 << 20})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var conns []*raw
	busy := 0
	for range 6 {
		r := dialRaw(t, ts)
		conns = append(conns, r)
		// With the bound reached, even a hello is refused.
		if got := r.call(`{"id":1,"op":"hello","db":"shop","node":""}`); errCode(got) == "server_busy" {
			busy++
			r.expectClosed(websocket.StatusTryAgainLater)
			continue
		}
		w, err := r.ws.Writer(ctx, websocket.MessageText)
		if err != nil {
			t.Fatal(err)
		}
		// 900 KB of a message that never ends.
		if _, err := w.Write([]byte(`{"id":2,"op":"ping","x":"` + strings.Repeat("x", 900<<10))); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool {
			return metric(t, mustGet(t, ts.hs.URL+"/metrics"), "hilodb_buffered_bytes") >= float64(len(conns)-busy)*(900<<10)
		})
	}
	if busy != 3 {
		t.Errorf("%d connections refused with server_busy, want 3 of 6 (1 MiB each against a 3 MiB bound)", busy)
	}
	used := metric(t, mustGet(t, ts.hs.URL+"/metrics"), "hilodb_buffered_bytes")
	if used > 3<<20 {
		t.Errorf("buffered bytes %v past the bound", used)
	}
	for _, r := range conns {
		r.ws.CloseNow()
	}
	waitFor(t, func() bool { return metric(t, mustGet(t, ts.hs.URL+"/metrics"), "hilodb_buffered_bytes") == 0 })
	if m := metric(t, mustGet(t, ts.hs.URL+"/metrics"), `hilodb_errors_total{code="server_busy"}`); m < 3 {
		t.Errorf("server_busy counted %v", m)
	}
}

func TestHiloNextWant(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	for _, tc := range []struct {
		name, req string
		low, high float64
		code      string
	}{
		{"no want: the growth rule alone", `{"id":2,"op":"hilo.next","tag":"a","lastSize":0,"lastMax":0,"lastRangeAt":""}`, 1, 32, ""},
		{"want below the rule changes nothing", `{"id":3,"op":"hilo.next","tag":"a","lastSize":0,"lastMax":32,"lastRangeAt":"","want":10}`, 33, 64, ""},
		{"want above the rule sizes the range", `{"id":4,"op":"hilo.next","tag":"a","lastSize":32,"lastMax":64,"lastRangeAt":"","want":10000}`, 65, 10064, ""},
		{"want past the largest range is capped", `{"id":5,"op":"hilo.next","tag":"b","lastSize":0,"lastMax":0,"lastRangeAt":"","want":9007199254740000}`, 1, 1 << 20, ""},
		{"negative want", `{"id":6,"op":"hilo.next","tag":"a","lastSize":0,"lastMax":0,"lastRangeAt":"","want":-1}`, 0, 0, "bad_request"},
		{"want past 2^53-1", `{"id":7,"op":"hilo.next","tag":"a","lastSize":0,"lastMax":0,"lastRangeAt":"","want":9007199254740992}`, 0, 0, "bad_request"},
		{"want not a number", `{"id":8,"op":"hilo.next","tag":"a","lastSize":0,"lastMax":0,"lastRangeAt":"","want":"many"}`, 0, 0, "bad_request"},
	} {
		got := r.call(tc.req)
		if tc.code != "" {
			if errCode(got) != tc.code {
				t.Errorf("%s: %v, want %s", tc.name, got, tc.code)
			}
			continue
		}
		if got["low"] != tc.low || got["high"] != tc.high {
			t.Errorf("%s: %v, want %v…%v", tc.name, got, tc.low, tc.high)
		}
	}
	// A refused request changed nothing: the next range of a starts after
	// the last one handed out.
	if got := r.call(`{"id":9,"op":"hilo.next","tag":"a","lastSize":0,"lastMax":0,"lastRangeAt":""}`); got["low"] != 10065.0 {
		t.Errorf("after the refused requests: %v, want low 10065", got)
	}
}
