package syncserver_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hilodb/hilodb/syncserver"
)

// do sends one HTTP request and returns the status and decoded JSON body.
func do(t *testing.T, method, url, body string, h map[string]string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for k, v := range h {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return res.StatusCode, m
}

// ravenClient is the header RavenDB's clients send with every request,
// which hilo/next needs.
var ravenClient = map[string]string{"Raven-Client-Version": "7.2"}

func TestHTTPDoorsAreGuarded(t *testing.T) {
	ts := startServer(t, syncserver.Config{Tokens: map[string]string{"shop": "s3cret"}, MaxMessageBytes: 4096, MaxBufferedBytes: 1 << 20})
	base := ts.hs.URL
	bearer := map[string]string{"Authorization": "Bearer s3cret"}
	mustCollection(t, base+"/_db/shop", "c", bearer)
	mustCollection(t, base+"/_db/shop", "w", bearer)
	cases := []struct {
		name, method, path, body string
		h                        map[string]string
		status                   int
		num                      float64 // errorNum (arango) or Num (ravendb); 0: success
	}{
		{"arango without a token", "GET", "/_db/shop/_api/version", "", nil, 401, 401},
		{"arango with a wrong token", "GET", "/_db/shop/_api/version", "", map[string]string{"Authorization": "Bearer nope"}, 401, 401},
		{"arango with the token", "GET", "/_db/shop/_api/version", "", bearer, 200, 0},
		{"arango with Basic auth", "GET", "/_db/shop/_api/version", "", map[string]string{"Authorization": "Basic cm9vdDpzM2NyZXQ="}, 200, 0},
		{"arango for a database without a token", "GET", "/_db/other/_api/version", "", bearer, 401, 401},
		{"ravendb without a token", "GET", "/databases/shop/hilo/next?tag=orders", "", nil, 401, 401},
		{"ravendb with the token", "GET", "/databases/shop/hilo/next?tag=orders", "", map[string]string{"Authorization": "Bearer s3cret", "Raven-Client-Version": "7.2"}, 200, 0},
		{"an illegal database name", "GET", "/_db/9lives/_api/version", "", bearer, 400, 1208},
		{"a body over the message limit", "POST", "/_db/shop/_api/document/c", `{"a":"` + strings.Repeat("x", 5000) + `"}`, bearer, 413, 413},
		{"malformed JSON", "POST", "/databases/shop/bulk_docs", `{"Commands":[`, bearer, 400, 400},
		{"an unknown batch command", "POST", "/databases/shop/bulk_docs", `{"Commands":[{"Id":"a","Type":"PATCH"}]}`, bearer, 400, 400},
		{"an unknown RavenDB path", "GET", "/databases/shop/indexes", "", bearer, 501, 1911},
		{"an unserved RavenDB parameter", "GET", "/databases/shop/docs?id=a&startsWith=a", "", bearer, 400, 400},
		{"a cluster-wide transaction", "POST", "/databases/shop/bulk_docs", `{"Commands":[],"TransactionMode":"ClusterWide"}`, bearer, 400, 400},
		{"an unserved ArangoDB parameter", "POST", "/_db/shop/_api/document/c?versionAttribute=v", `{}`, bearer, 400, 400},
		{"an unserved collection property", "POST", "/_db/shop/_api/collection", `{"name":"c","schema":{}}`, bearer, 400, 400},
		{"waitForSync is accepted: writes are synced anyway", "POST", "/_db/shop/_api/document/w?waitForSync=true", `{}`, bearer, 201, 0},
		{"an illegal key", "POST", "/_db/shop/_api/document/c", `{"_key":"a b"}`, bearer, 400, 1221},
		{"a document that is not an object", "POST", "/_db/shop/_api/document/c", `[1]`, bearer, 202, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := do(t, tc.method, base+tc.path, tc.body, tc.h)
			if status != tc.status {
				t.Fatalf("status %d, want %d (%v)", status, tc.status, body)
			}
			num, ok := body["errorNum"].(float64)
			if !ok {
				num, _ = body["Num"].(float64)
			}
			if tc.num != 0 && num != tc.num {
				t.Errorf("error number %v, want %v (%v)", num, tc.num, body)
			}
		})
	}
	// The Host check runs before everything (here: a server with tokens and
	// an allow-list).
	hosted := startServer(t, syncserver.Config{AllowedHosts: []string{"db.example"}})
	if status, _ := do(t, "GET", hosted.hs.URL+"/_api/version", "", map[string]string{"Host": "rebind.attacker.example"}); status != 421 {
		t.Errorf("a foreign Host: %d, want 421", status)
	}
	// Nothing was stored by the refused writes.
	if status, _ := do(t, "GET", base+"/_db/shop/_api/document/c/x", "", bearer); status != 404 {
		t.Errorf("a refused write stored something: %d", status)
	}
	_, metrics := get(t, base+"/metrics", nil)
	if metric(t, metrics, `hilodb_http_requests_total{door="arango"}`) < 8 || metric(t, metrics, `hilodb_errors_total{code="unauthorized"}`) < 4 {
		t.Errorf("HTTP requests and refusals are not counted:\n%s", metrics)
	}
}

// TestRavenHiLoSharesTheWebsocketCounters: HiLo ranges leased over RavenDB's
// HTTP API follow the capacity rule of the websocket op and come from the
// same counter, so the two never overlap; a return over HTTP never hands
// numbers out again.
func TestRavenHiLoSharesTheWebsocketCounters(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL + "/databases/shop/hilo/"
	recent := time.Now().UTC().Add(-5 * time.Second).Format(time.RFC3339Nano)
	old := time.Now().UTC().Add(-5 * time.Minute).Format(time.RFC3339Nano)
	next := func(q string) (low, high, size float64) {
		t.Helper()
		status, b := do(t, "GET", base+"next?tag=orders"+q, "", ravenClient)
		if status != 200 {
			t.Fatalf("hilo/next%s: %d %v", q, status, b)
		}
		return b["Low"].(float64), b["High"].(float64), b["LastSize"].(float64)
	}
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	wsNext := func(id int) (low, high float64) {
		got := r.call(fmt.Sprintf(`{"id":%d,"op":"hilo.next","tag":"orders","lastSize":0,"lastMax":0,"lastRangeAt":""}`, id))
		return got["low"].(float64), got["high"].(float64)
	}
	type rng struct{ lo, hi float64 }
	var all []rng
	for i, tc := range []struct {
		q    string
		size float64
	}{
		{"", 32},
		{"&lastBatchSize=100&lastRangeAt=" + url.QueryEscape(recent), 200},
		{"&lastBatchSize=100&lastRangeAt=" + url.QueryEscape(old), 50},
		{"&lastBatchSize=40&lastRangeAt=" + url.QueryEscape(old), 32},
	} {
		lo, hi, size := next(tc.q)
		if size != tc.size || hi-lo+1 != tc.size {
			t.Errorf("hilo/next%s: size %v (%v..%v), want %v", tc.q, size, lo, hi, tc.size)
		}
		all = append(all, rng{lo, hi})
		wlo, whi := wsNext(i + 2)
		all = append(all, rng{wlo, whi})
	}
	for i, a := range all {
		for _, b := range all[i+1:] {
			if a.lo <= b.hi && b.lo <= a.hi {
				t.Fatalf("ranges %v and %v overlap", a, b)
			}
		}
	}
	// The websocket leased last: a return of the HTTP range is ignored.
	last := all[len(all)-2]
	if status, b := do(t, "PUT", fmt.Sprintf("%sreturn?tag=orders&end=%.0f&last=%.0f", base, last.hi, last.lo), "", nil); status != 204 {
		t.Fatalf("hilo/return: %d %v", status, b)
	}
	lo, _, _ := next("")
	if lo <= all[len(all)-1].hi {
		t.Errorf("a range returned while not the latest lease was handed out again: %v", lo)
	}
	// Nor is a return of the latest lease: nothing proves it comes from
	// the leaser, so the range is skipped, never handed out again.
	lo2, hi2, _ := next("")
	if status, _ := do(t, "PUT", fmt.Sprintf("%sreturn?tag=orders&end=%.0f&last=%.0f", base, hi2, lo2), "", nil); status != 204 {
		t.Fatal("hilo/return refused")
	}
	if lo3, _, _ := next(""); lo3 != hi2+1 {
		t.Errorf("after a return of %v..%v, the next range starts at %v, want %v", lo2, hi2, lo3, hi2+1)
	}
}

// TestHTTPDoorsCountAsConnections: a request in flight counts against the
// per-address connection limit that websocket clients count against.
func TestHTTPDoorsCountAsConnections(t *testing.T) {
	ts := startServer(t, syncserver.Config{MaxConnsPerAddr: 1})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	for _, path := range []string{"/_api/version", "/databases/shop/hilo/next?tag=orders"} {
		status, body := do(t, "GET", ts.hs.URL+path, "", nil)
		num, ok := body["errorNum"].(float64)
		if !ok {
			num, _ = body["Num"].(float64)
		}
		if status != 503 || num != 1910 {
			t.Errorf("%s while the address holds its one connection: %d %v, want 503 1910", path, status, body)
		}
	}
	r.ws.CloseNow()
	deadline := time.Now().Add(5 * time.Second)
	for {
		status, _ := do(t, "GET", ts.hs.URL+"/_api/version", "", nil)
		if status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the connection's place was not given back: %d", status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRavenTopology: the client's discovery sees one node, this server,
// with the server's tag, in the database and cluster topologies.
func TestRavenTopology(t *testing.T) {
	ts := startServer(t, syncserver.Config{ServerTag: "Q"})
	status, db := do(t, "GET", ts.hs.URL+"/topology?name=shop", "", nil)
	nodes, _ := db["Nodes"].([]any)
	if status != 200 || len(nodes) != 1 {
		t.Fatalf("topology: %d %v", status, db)
	}
	n := nodes[0].(map[string]any)
	if n["ClusterTag"] != "Q" || n["Database"] != "shop" || n["Url"] != ts.hs.URL {
		t.Errorf("topology node: %v", n)
	}
	status, cl := do(t, "GET", ts.hs.URL+"/cluster/topology", "", nil)
	top, _ := cl["Topology"].(map[string]any)
	members, _ := top["Members"].(map[string]any)
	if status != 200 || cl["Leader"] != "Q" || cl["NodeTag"] != "Q" || len(members) != 1 || members["Q"] != ts.hs.URL {
		t.Errorf("cluster topology: %d %v", status, cl)
	}
}

// TestHTTPDoorsShareTheGuards: the Origin allow-list and the buffered-bytes
// budget refuse HTTP requests of both doors, and nothing is stored.
func TestHTTPDoorsShareTheGuards(t *testing.T) {
	ts := startServer(t, syncserver.Config{AllowedOrigins: []string{"app.example"}})
	for _, path := range []string{"/databases/shop/hilo/next?tag=orders", "/_api/version"} {
		if status, body := do(t, "GET", ts.hs.URL+path, "", map[string]string{"Origin": "http://evil.example"}); status != 403 {
			t.Errorf("%s from a foreign origin: %d %v", path, status, body)
		}
		if status, body := do(t, "GET", ts.hs.URL+path, "", map[string]string{"Origin": "http://app.example", "Raven-Client-Version": "7.2"}); status != 200 {
			t.Errorf("%s from the allowed origin: %d %v", path, status, body)
		}
	}
	// A body still arriving holds what it has sent, here all but its last
	// byte of the whole budget.
	busy := startServer(t, syncserver.Config{MaxMessageBytes: 64 << 10, MaxBufferedBytes: 64 << 10})
	slow, err := net.Dial("tcp", strings.TrimPrefix(busy.hs.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprintf(slow, "POST /_api/document/c HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 65536\r\n\r\n{\"a\":%s", strings.Repeat(" ", 65536-1-5))
	// Until the server reads the slow body (a request sent before that
	// would take the budget first, and the slow one be refused).
	for deadline := time.Now().Add(5 * time.Second); metric(t, mustGet(t, busy.hs.URL+"/metrics"), "hilodb_buffered_bytes") < 64<<10; {
		if time.Now().After(deadline) {
			t.Fatal("the server never held the slow body's budget")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, path := range []string{"/databases/shop/bulk_docs", "/_api/document/c"} {
		deadline := time.Now().Add(5 * time.Second)
		for {
			status, body := do(t, "POST", busy.hs.URL+path, `{"Commands":[]}`, nil)
			num, ok := body["errorNum"].(float64)
			if !ok {
				num, _ = body["Num"].(float64)
			}
			if status == 503 && num == 1909 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s while a body holds the buffered budget: %d %v, want 503 server_busy", path, status, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if status, _ := do(t, "GET", busy.hs.URL+"/_api/document/c/x", "", nil); status != 404 {
		t.Errorf("a refused write stored something: %d", status)
	}
}

// TestArangoDefaultDatabase: /_api/… and /_db/_system/_api/… are hilodb's
// database "default", and error bodies have ArangoDB's four members.
func TestArangoDefaultDatabase(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	mustCollection(t, ts.hs.URL, "c", nil)
	if status, b := do(t, "POST", ts.hs.URL+"/_api/document/c", `{"_key":"x","v":1}`, nil); status != 201 {
		t.Fatalf("POST /_api/document/c: %d %v", status, b)
	}
	for _, path := range []string{"/_db/_system/_api/document/c/x", "/_db/default/_api/document/c/x"} {
		if status, b := do(t, "GET", ts.hs.URL+path, "", nil); status != 200 || b["v"] != float64(1) {
			t.Errorf("%s: %d %v", path, status, b)
		}
	}
	status, b := do(t, "GET", ts.hs.URL+"/_api/document/c/none", "", nil)
	if status != 404 || b["error"] != true || b["code"] != float64(404) || b["errorNum"] != float64(1202) || b["errorMessage"] == "" || len(b) != 4 {
		t.Errorf("a missing document: %d %v", status, b)
	}
}

// TestArangoBatchLeasesOnce: keys the server makes for a batch come from
// one range that holds the batch, not from ranges grown one lease (and one
// fsync) at a time.
func TestArangoBatchLeasesOnce(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL
	leased := func() float64 { return metric(t, mustGet(t, base+"/metrics"), "hilodb_ranges_leased_total") }
	mustCollection(t, base+"/_db/shop", "orders", nil)
	before := leased()
	docs := "[" + strings.TrimSuffix(strings.Repeat(`{"n":1},`, 1000), ",") + "]"
	res, err := http.Post(base+"/_db/shop/_api/document/orders", "application/json", strings.NewReader(docs))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	res.Body.Close()
	if res.StatusCode != 201 && res.StatusCode != 202 || len(out) != 1000 {
		t.Fatalf("POST of 1,000 documents: status %d, %d results", res.StatusCode, len(out))
	}
	keys := map[string]bool{}
	for _, d := range out {
		k, _ := d["_key"].(string)
		if k == "" || keys[k] {
			t.Fatalf("result %v: a missing or repeated key", d)
		}
		keys[k] = true
	}
	if got := leased() - before; got != 1 {
		t.Errorf("%v ranges leased for a batch of 1,000 keys, want 1", got)
	}
}
