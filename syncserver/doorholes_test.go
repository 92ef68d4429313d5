package syncserver_test

import (
	"bufio"
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

// Each test here is a way through an HTTP door that once broke a rule the
// websocket keeps: ids handed out twice, memory or the buffered budget
// taken by one client, a refused request that changed something.

// doRaw sends one HTTP request on a connection of its own (another client,
// as far as the server can tell) and returns the status and body.
func doRaw(t *testing.T, method, u, body string, h map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	for k, v := range h {
		req.Header.Set(k, v)
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// errNum reads a door's error number: ArangoDB's errorNum or RavenDB's Num.
func errNum(body map[string]any) float64 {
	if n, ok := body["errorNum"].(float64); ok {
		return n
	}
	n, _ := body["Num"].(float64)
	return n
}

func TestHTTPHiLoReturnNeverHandsNumbersOutAgain(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL + "/databases/shop/hilo/"
	status, b := do(t, "GET", base+"next?tag=invoices", "", ravenClient)
	if status != 200 || b["Low"] != 1.0 || b["High"] != 32.0 {
		t.Fatalf("hilo/next: %d %v, want 1..32", status, b)
	}
	// Someone else on this address (another process, another client
	// behind the same proxy) returns the range as if unused.
	if status, body := doRaw(t, "PUT", base+"return?tag=invoices&end=32&last=0", "", nil); status != 204 {
		t.Fatalf("hilo/return: %d %s", status, body)
	}
	// And so does the leaser itself: nothing tells the two apart.
	if status, _ := do(t, "PUT", base+"return?tag=invoices&end=32&last=0", "", nil); status != 204 {
		t.Fatalf("hilo/return: %d", status)
	}
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	if got := r.call(`{"id":2,"op":"hilo.next","tag":"invoices","lastSize":0,"lastMax":0,"lastRangeAt":""}`); got["low"] != 33.0 {
		t.Fatalf("websocket lease after HTTP returns: %v, want low 33 (1..32 is still the HTTP client's)", got)
	}
	if status, b := do(t, "GET", base+"next?tag=invoices", "", ravenClient); status != 200 || b["Low"].(float64) <= 64 {
		t.Fatalf("HTTP lease after the returns: %d %v, want past 64", status, b)
	}
	if status, b := do(t, "PUT", base+"return?tag=invoices&end=1&last=2", "", nil); status != 400 {
		t.Errorf("a return with last past end: %d %v, want 400", status, b)
	}
}

func TestHiloNextNeedsTheClientHeader(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	// What an <img> on a page served from a loopback address sends.
	status, b := do(t, "GET", ts.hs.URL+"/databases/imgdb/hilo/next?tag=t&lastBatchSize=1048576", "", nil)
	if status != 403 || errNum(b) != 1907 {
		t.Fatalf("hilo/next without %s: %d %v, want 403 forbidden", "Raven-Client-Version", status, b)
	}
	// A plain GET reads; it creates no database either.
	if status, _ := do(t, "GET", ts.hs.URL+"/databases/getdb/docs?id=a", "", nil); status != 404 {
		t.Fatalf("GET docs: %d, want 404", status)
	}
	var dash struct {
		Databases []struct{ Name string } `json:"databases"`
	}
	if err := json.Unmarshal([]byte(mustGet(t, ts.hs.URL+"/dashboard.json")), &dash); err != nil {
		t.Fatal(err)
	}
	for _, d := range dash.Databases {
		if d.Name == "imgdb" || d.Name == "getdb" {
			t.Errorf("database %s created by a GET", d.Name)
		}
	}
	// RavenDB's client sends the header; it leases.
	if status, b := do(t, "GET", ts.hs.URL+"/databases/imgdb/hilo/next?tag=t", "", ravenClient); status != 200 || b["Low"] != 1.0 {
		t.Fatalf("hilo/next with the header: %d %v, want low 1 (the refused one leased nothing)", status, b)
	}
}

// slowBody starts a POST whose body is still arriving: the headers and one
// byte of a body of length n.
// slowBody starts a POST of a body declared n bytes long and sends the
// first sent of them (at least one), then nothing more.
func slowBody(t *testing.T, ts *testServer, path, token string, n, sent int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(ts.hs.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{%s", path, token, n, strings.Repeat(" ", max(sent, 1)-1))
	return c
}

func TestSlowBodiesDoNotStarveOtherDatabases(t *testing.T) {
	ts := startServer(t, syncserver.Config{Tokens: map[string]string{"small": "t1", "other": "t2"},
		MaxMessageBytes: 256 << 10, MaxBufferedBytes: 1 << 20, BodyTimeout: 2 * time.Second})
	buffered := func() float64 { return metric(t, mustGet(t, ts.hs.URL+"/metrics"), "hilodb_buffered_bytes") }
	var slow []net.Conn
	for range 32 {
		slow = append(slow, slowBody(t, ts, "/databases/small/bulk_docs", "t1", 100, 1))
	}
	waitFor(t, func() bool { return buffered() >= 32*100 })
	if b := buffered(); b > 32*100 {
		t.Errorf("32 slow bodies of 100 bytes hold %v buffered bytes, want at most what they declare (3,200)", b)
	}
	// A body that declares far more than it sends holds what it sent, in
	// steps of at least 16 KiB, not what it declared.
	slow = append(slow, slowBody(t, ts, "/databases/small/bulk_docs", "t1", 250<<10, 1))
	waitFor(t, func() bool { return buffered() >= 32*100+16<<10 })
	if b := buffered(); b > 32*100+16<<10 {
		t.Errorf("a body declaring 250 KiB that sent 1 byte: %v buffered bytes in all, want 16 KiB more than before", b)
	}
	other := map[string]string{"Authorization": "Bearer t2"}
	write := func(what string) {
		t.Helper()
		if status, b := do(t, "POST", ts.hs.URL+"/databases/other/bulk_docs", `{"Commands":[{"Id":"o/1","Type":"PUT","Document":{"v":1}}]}`, other); status != 201 {
			t.Fatalf("%s: another database's write: %d %v, want 201", what, status, b)
		}
	}
	write("while 32 slow bodies arrive")
	r := dialRaw(t, ts)
	if got := r.call(`{"id":1,"op":"hello","db":"other","token":"t2","node":""}`); got["ok"] != true {
		t.Fatalf("websocket hello while slow bodies arrive: %v", got)
	}

	// One database's large bodies take no more than its share (a quarter
	// of -max-buffered here): its next is refused, the others' are not.
	big := []net.Conn{slowBody(t, ts, "/databases/small/bulk_docs", "t1", 230<<10, 230<<10-1)}
	waitFor(t, func() bool { return buffered() >= 230<<10 })
	status, b := do(t, "POST", ts.hs.URL+"/databases/small/bulk_docs", `{"Commands":[]}`+strings.Repeat(" ", 10<<10), map[string]string{"Authorization": "Bearer t1"})
	if status != 503 || errNum(b) != 1909 {
		t.Errorf("a body past its database's share: %d %v, want 503 server_busy", status, b)
	}
	write("while one database holds its share")

	// The deadline ends them all: 408 body_timeout, the budget given back.
	for _, c := range append(slow, big...) {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("a slow body's answer: %v", err)
		}
		if res.StatusCode != 408 {
			t.Errorf("a slow body's answer: %d, want 408", res.StatusCode)
		}
		res.Body.Close()
	}
	waitFor(t, func() bool { return buffered() == 0 })
	if m := metric(t, mustGet(t, ts.hs.URL+"/metrics"), `hilodb_errors_total{code="body_timeout"}`); m != 34 {
		t.Errorf("body_timeout counted %v, want 34", m)
	}
	write("after the deadline")
}

func TestRepeatedIDsInDoorReadsRefused(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL
	big := strings.Repeat("x", 200<<10)
	if status, b := do(t, "POST", base+"/databases/shop/bulk_docs", `{"Commands":[{"Id":"big/1","Type":"PUT","Document":{"blob":"`+big+`"}},{"Id":"small/1","Type":"PUT","Document":{}}]}`, nil); status != 201 {
		t.Fatalf("bulk_docs: %d %v", status, b)
	}
	many := `["` + strings.TrimSuffix(strings.Repeat(`big/1","`, 2000), `","`) + `"]`
	keys := `["` + strings.TrimSuffix(strings.Repeat(`1","`, 2000), `","`) + `"]`
	for _, tc := range []struct{ name, method, path, body string }{
		{"RavenDB POST docs, 2,000 × one id", "POST", "/databases/shop/docs", `{"Ids":` + many + `}`},
		{"RavenDB POST docs, one small id twice", "POST", "/databases/shop/docs", `{"Ids":["small/1","small/1"]}`},
		{"RavenDB GET docs, id= repeated", "GET", "/databases/shop/docs?id=big/1&id=big/1", ""},
		{"RavenDB POST docs, id= and Ids", "POST", "/databases/shop/docs?id=small/1", `{"Ids":["small/1"]}`},
		{"ArangoDB documents(), 2,000 × one key", "PUT", "/_db/shop/_api/document/big?onlyget=true", keys},
		{"ArangoDB documents(), a key and its id", "PUT", "/_db/shop/_api/document/big?onlyget=true", `["1",{"_id":"big/1"}]`},
	} {
		status, b := do(t, tc.method, base+tc.path, tc.body, nil)
		if status != 400 || errNum(b) != 400 {
			t.Errorf("%s: %d %.200v, want 400 bad_request", tc.name, status, b)
		}
	}
	// Each once is answered.
	if status, b := do(t, "POST", base+"/databases/shop/docs", `{"Ids":["small/1","big/1","none"]}`, nil); status != 200 || len(b["Results"].([]any)) != 3 {
		t.Errorf("distinct ids: %d %.200v", status, b)
	}
}

// ravenNext asks for identity name's next value over RavenDB's door.
func ravenNext(t *testing.T, ts *testServer, name string) float64 {
	t.Helper()
	status, b := do(t, "POST", ts.hs.URL+"/databases/shop/identity/next?name="+url.QueryEscape(name), "", nil)
	if status != 200 {
		t.Fatalf("identity/next %s: %d %v", name, status, b)
	}
	return b["NewIdentityValue"].(float64)
}

// ravenPut PUTs doc as id over RavenDB's door and returns the status and
// the id the server answers with.
func ravenPut(t *testing.T, ts *testServer, id, doc string) (int, string) {
	t.Helper()
	status, b := do(t, "PUT", ts.hs.URL+"/databases/shop/docs?id="+url.QueryEscape(id), doc, nil)
	got, _ := b["Id"].(string)
	return status, got
}

func TestBulkDocsPastMaxBatchChangesNothing(t *testing.T) {
	ts := startServer(t, syncserver.Config{MaxBatch: 100})
	for _, id := range []string{"bp1|", "bp2/"} {
		cmds := strings.TrimSuffix(strings.Repeat(`{"Id":"`+id+`","Type":"PUT","Document":{}},`, 101), ",")
		start := time.Now()
		status, b := do(t, "POST", ts.hs.URL+"/databases/shop/bulk_docs", `{"Commands":[`+cmds+`]}`, nil)
		if status != 413 || errNum(b) != 1905 {
			t.Fatalf("101 %s commands over a batch of 100: %d %v, want 413 batch_too_big", id, status, b)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("refused after %v", d)
		}
	}
	if v := ravenNext(t, ts, "bp1"); v != 1 {
		t.Errorf("identity bp1 after the refused batch: next %v, want 1", v)
	}
	if status, id := ravenPut(t, ts, "bp2/", `{}`); status != 201 || id != "bp2/0000000000000000001-A" {
		t.Errorf("the first bp2/ id after the refused batch: %d %q, want bp2/0000000000000000001-A", status, id)
	}
	// A batch refused for any other reason uses up no number either.
	bad := `{"Commands":[{"Id":"bp1|","Type":"PUT","Document":{}},{"Id":"bp3/","Type":"PUT","Document":{}},{"Id":"x","Type":"PUT","Document":{"a":1,"a":2}}]}`
	if status, b := do(t, "POST", ts.hs.URL+"/databases/shop/bulk_docs", bad, nil); status != 400 {
		t.Fatalf("a batch with a bad document: %d %v, want 400", status, b)
	}
	if v := ravenNext(t, ts, "bp1"); v != 2 {
		t.Errorf("identity bp1 after a refused batch: next %v, want 2", v)
	}
	if status, id := ravenPut(t, ts, "bp3/", `{}`); id != "bp3/0000000000000000002-A" {
		t.Errorf("a bp3/ id after a refused batch: %d %q, want the sequence's next (2)", status, id)
	}
}

func TestDoorsRefuseLoneSurrogates(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL
	for _, tc := range []struct{ name, method, path, body string }{
		{"a RavenDB id, high", "POST", "/databases/shop/bulk_docs", `{"Commands":[{"Id":"lone/\ud800","Type":"PUT","Document":{"who":"first"}}]}`},
		{"a RavenDB id, low", "POST", "/databases/shop/bulk_docs", `{"Commands":[{"Id":"lone/\udc00","Type":"PUT","Document":{"who":"second"}}]}`},
		{"a RavenDB change vector", "POST", "/databases/shop/bulk_docs", `{"Commands":[{"Id":"lone/1","ChangeVector":"A:1-\ud800","Type":"PUT","Document":{}}]}`},
		{"a RavenDB read", "POST", "/databases/shop/docs", `{"Ids":["lone/\ud800"]}`},
		{"a member name", "PUT", "/databases/shop/docs?id=lone/2", `{"\ud800":1,"\udc00":2}`},
		{"an ArangoDB key", "POST", "/_db/shop/_api/document/lone", `{"_key":"\udfff"}`},
		{"an ArangoDB selector", "PUT", "/_db/shop/_api/document/lone?onlyget=true", `["\ud800"]`},
		{"an ArangoDB rev", "PUT", "/_db/shop/_api/document/lone/1", `{"_rev":"\ud800"}`},
		{"a collection name", "POST", "/_db/shop/_api/collection", `{"name":"c\ud800"}`},
		{"an identity name", "POST", "/databases/shop/identity/next?name=%ED%A0%80", ""},
		{"an id in the query", "PUT", "/databases/shop/docs?id=lone/%ED%B0%80", `{}`},
	} {
		status, b := do(t, tc.method, base+tc.path, tc.body, nil)
		if status != 400 || errNum(b) != 400 {
			t.Errorf("%s: %d %v, want 400 bad_request", tc.name, status, b)
		}
	}
	if status, _ := do(t, "GET", base+"/databases/shop/docs?id="+url.QueryEscape("lone/\uFFFD"), "", nil); status != 404 {
		t.Errorf("a document stored under the replacement character: %d", status)
	}
	// A pair is a character; an escaped backslash before u is not an escape.
	if status, b := do(t, "POST", base+"/databases/shop/bulk_docs", `{"Commands":[{"Id":"pair/\ud83d\ude00","Type":"PUT","Document":{"s":"\\ud800"}}]}`, nil); status != 201 {
		t.Errorf("a surrogate pair: %d %v", status, b)
	}
}

func TestServerMadeIDsNeverOverwrite(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL
	if status, b := do(t, "POST", base+"/databases/shop/bulk_docs", `{"Commands":[{"Id":"companies/1","Type":"PUT","Document":{"v":"one"}},{"Id":"companies/0000000000000000001-A","Type":"PUT","Document":{"v":"seq"}}]}`, nil); status != 201 {
		t.Fatalf("bulk_docs: %d %v", status, b)
	}
	// One written over the websocket, at the identity's value after that.
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	if res := results(t, r.call(`{"id":2,"op":"push","changes":[{"id":"companies/2","rev":"_mAAAAAAAB-T","doc":{"v":"ws"}},{"id":"c/1","rev":"_mAAAAAAAB-T","doc":{"v":"ws"}}]}`)); res[0]["ok"] != true || res[1]["ok"] != true {
		t.Fatal(res)
	}
	status, b := do(t, "POST", base+"/databases/shop/bulk_docs", `{"Commands":[{"Id":"companies|","Type":"PUT","Document":{"v":"new"}},{"Id":"companies/","Type":"PUT","Document":{"v":"new"}},{"Id":"companies|","Type":"PUT","Document":{"v":"new"}}]}`, nil)
	if status != 201 {
		t.Fatalf("server-made ids: %d %v", status, b)
	}
	var got []string
	for _, x := range b["Results"].([]any) {
		got = append(got, x.(map[string]any)["@id"].(string))
	}
	if want := []string{"companies/3", "companies/0000000000000000002-A", "companies/4"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("server-made ids %v, want %v (past the documents that exist)", got, want)
	}
	for id, v := range map[string]string{"companies/1": "one", "companies/0000000000000000001-A": "seq", "companies/2": "ws"} {
		status, b := do(t, "GET", base+"/databases/shop/docs?id="+url.QueryEscape(id), "", nil)
		res, _ := b["Results"].([]any)
		if status != 200 || len(res) != 1 || res[0].(map[string]any)["v"] != v {
			t.Errorf("%s: %d %v, want v %q", id, status, b, v)
		}
	}
	// ArangoDB's door: a key the server makes never replaces a document,
	// whatever the overwrite mode.
	for _, mode := range []string{"replace", "update", "ignore"} {
		status, b := do(t, "POST", base+"/_db/shop/_api/document/c?overwriteMode="+mode, `{"v":"arango"}`, nil)
		if status == 201 || status == 202 {
			if b["_key"] == "1" {
				t.Errorf("overwriteMode=%s: the server-made key landed on c/1: %v", mode, b)
			}
			continue
		}
		if status != 409 || errNum(b) != 1210 {
			t.Errorf("overwriteMode=%s: %d %v, want a new key or 409 unique_constraint", mode, status, b)
		}
	}
	if status, b := do(t, "GET", base+"/_db/shop/_api/document/c/1", "", nil); status != 200 || b["v"] != "ws" {
		t.Errorf("c/1 after server-made inserts: %d %v, want v ws", status, b)
	}
}

func TestDoorsRefuseRepeatedMembers(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL
	mustCollection(t, base+"/_db/shop", "d", nil)
	for _, tc := range []struct{ name, method, path, body string }{
		{"RavenDB PUT", "PUT", "/databases/shop/docs?id=d/1", `{"a":1,"a":2}`},
		{"RavenDB bulk_docs", "POST", "/databases/shop/bulk_docs", `{"Commands":[{"Id":"d/1","Type":"PUT","Document":{"a":1,"b":{},"a":2}}]}`},
		{"RavenDB, one name escaped", "PUT", "/databases/shop/docs?id=d/1", `{"a":1,"\u0061":2}`},
		{"ArangoDB two _keys", "POST", "/_db/shop/_api/document/d", `{"_key":"1","_key":"2"}`},
		{"ArangoDB replace", "PUT", "/_db/shop/_api/document/d/1", `{"a":1,"a":2}`},
		{"ArangoDB update", "PATCH", "/_db/shop/_api/document/d/1", `{"a":1,"a":2}`},
	} {
		status, b := do(t, tc.method, base+tc.path, tc.body, nil)
		if status != 400 || errNum(b) != 1227 {
			t.Errorf("%s: %d %v, want 400 bad_document", tc.name, status, b)
		}
	}
	if status, _ := do(t, "GET", base+"/databases/shop/docs?id=d/1", "", nil); status != 404 {
		t.Errorf("a refused document was stored: %d", status)
	}
}

func TestIdentitySeedBounded(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	for _, q := range []string{"value=9007199254740991", "value=9007199254740991&force=true", "value=4503599627370497"} {
		if status, b := do(t, "POST", ts.hs.URL+"/databases/shop/identity/seed?name=s&"+q, "", nil); status != 400 {
			t.Errorf("identity/seed %s: %d %v, want 400", q, status, b)
		}
	}
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	if got := r.call(`{"id":2,"op":"identity.seed","name":"s","value":9007199254740991}`); errCode(got) != "bad_request" {
		t.Errorf("identity.seed past the bound: %v, want bad_request", got)
	}
	if v := ravenNext(t, ts, "s"); v != 1 {
		t.Errorf("identity s after refused seeds: next %v, want 1", v)
	}
	// The highest seed allowed leaves values.
	if status, b := do(t, "POST", ts.hs.URL+"/databases/shop/identity/seed?name=s&value=4503599627370496", "", nil); status != 200 {
		t.Fatalf("identity/seed at the bound: %d %v", status, b)
	}
	if v := ravenNext(t, ts, "s"); v != 4503599627370497 {
		t.Errorf("after the highest seed: next %v", v)
	}
}

func TestServerMadeIDChecks(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	long := strings.Repeat("p", 1020) + "/"
	if status, id := ravenPut(t, ts, long, `{}`); status != 400 {
		t.Errorf("a 1,021-byte p…/ id: %d %q, want 400 illegal_key", status, id)
	}
	for _, id := range []string{"/", "//", "a|/", "a//", "/a/"} {
		if status, got := ravenPut(t, ts, id, `{}`); status != 400 {
			t.Errorf("id %q: %d %q, want 400", id, status, got)
		}
	}
	if status, id := ravenPut(t, ts, "p/", `{}`); status != 201 || id != "p/0000000000000000001-A" {
		t.Errorf("the first server-made id: %d %q, want p/0000000000000000001-A (the refused ones used no number)", status, id)
	}
	if status, id := ravenPut(t, ts, "orders/2026/", `{}`); status != 201 || id != "orders/2026/0000000000000000002-A" {
		t.Errorf("a prefix of two segments: %d %q", status, id)
	}
	for _, sep := range []string{"%00", "%0A", "%20", "%7C", "ab"} {
		status, b := do(t, "GET", ts.hs.URL+"/databases/shop/hilo/next?tag=t&identityPartsSeparator="+sep, "", ravenClient)
		if status != 400 {
			t.Errorf("identityPartsSeparator=%s: %d %q, want 400", sep, status, b["Prefix"])
		}
	}
	if status, b := do(t, "GET", ts.hs.URL+"/databases/shop/hilo/next?tag=t&identityPartsSeparator=-", "", ravenClient); status != 200 || b["Prefix"] != "t-" {
		t.Errorf("identityPartsSeparator=-: %d %v", status, b)
	}
}

func TestPushedKeyAgreesWithTheID(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	for _, doc := range []string{`{"_key":"notmine"}`, `{"_key":"12"}`, `{"_key":"s/2"}`, `{"_key":5}`, `{"_key":"/2"}`} {
		res := results(t, r.call(`{"id":2,"op":"push","changes":[{"id":"cross/2","rev":"_mAAAAAAAB-T","doc":`+doc+`}]}`))
		if res[0]["ok"] == true || res[0]["error"].(map[string]any)["code"] != "bad_document" {
			t.Errorf("id cross/2 with %s: %v, want bad_document", doc, res[0])
		}
	}
	if status, _ := do(t, "GET", ts.hs.URL+"/_db/shop/_api/document/cross/2", "", nil); status != 404 {
		t.Errorf("a refused push was stored: %d", status)
	}
	for id, doc := range map[string]string{"cross/2": `{"_key":"2"}`, "cross/3": `{"_key":null}`, "cross/4": `{}`} {
		if res := results(t, r.call(`{"id":3,"op":"push","changes":[{"id":"`+id+`","rev":"_mAAAAAAAB-T","doc":`+doc+`}]}`)); res[0]["ok"] != true {
			t.Errorf("id %s with %s: %v", id, doc, res[0])
		}
	}
	// Other separators, as a store may choose: the key is the id's tail.
	if res := results(t, r.call(`{"id":4,"op":"push","changes":[{"id":"orders-7-A","rev":"_mAAAAAAAB-T","doc":{"_key":"A"}},{"id":"solo","rev":"_mAAAAAAAB-T","doc":{"_key":"solo"}}]}`)); res[0]["ok"] != true || res[1]["ok"] != true {
		t.Errorf("keys after other separators: %v", res)
	}
}

// TestIdentityValuesSkipStoredIDs: an identity value handed out over the
// websocket (what a client makes "name|" ids of) or RavenDB's identity/next
// skips every value whose id "name/value" names a stored document, as the
// ids the server makes do, so a client's "companies|" never lands on a
// document another client wrote.
func TestIdentityValuesSkipStoredIDs(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	for _, id := range []string{"companies/1", "companies/2", "companies/4", "companies/7"} {
		if status, _ := ravenPut(t, ts, id, `{"v":"other"}`); status != 201 {
			t.Fatalf("PUT %s: %d", id, status)
		}
	}
	// A deleted document's id is not handed out again either.
	if status, _ := do(t, "DELETE", ts.hs.URL+"/databases/shop/docs?id=companies/7", "", nil); status != 204 {
		t.Fatalf("DELETE companies/7: %d", status)
	}
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	if got := r.call(`{"id":2,"op":"identity.next","name":"companies"}`); got["value"] != 3.0 {
		t.Errorf("identity.next past companies/1 and /2: %v, want 3", got)
	}
	if got := r.call(`{"id":3,"op":"identity.nextBatch","names":["companies","companies","other"]}`); fmt.Sprint(got["values"]) != "[5 6 1]" {
		t.Errorf("identity.nextBatch past companies/4: %v, want [5 6 1]", got)
	}
	if v := ravenNext(t, ts, "companies"); v != 8 {
		t.Errorf("RavenDB identity/next past companies/7 (deleted): %v, want 8", v)
	}
}

// TestQueryRepliesAreBounded: an AQL query through the ArangoDB door names
// each document once, and its results, or an RQL query's projections,
// fit in the reply bound, measured as they are made: DOCUMENT() of one id
// many times, a RETURN that repeats the document or a select that repeats
// a field once made a reply of hundreds of megabytes from one small
// request.
func TestQueryRepliesAreBounded(t *testing.T) {
	ts := startServer(t, syncserver.Config{MaxMessageBytes: 1 << 20})
	base := ts.hs.URL + "/_db/shop"
	mustCollection(t, base, "big", nil)
	blob := strings.Repeat("x", 200<<10)
	for i := 1; i <= 8; i++ {
		if status, b := do(t, "POST", base+"/_api/document/big", fmt.Sprintf(`{"_key":"%d","blob":"%s"}`, i, blob), nil); status >= 300 {
			t.Fatalf("insert big/%d: %d %v", i, status, b)
		}
	}
	ids := func(n int, distinct bool) string {
		s := make([]string, n)
		for i := range s {
			s[i] = `"big/1"`
			if distinct {
				s[i] = fmt.Sprintf(`"big/%d"`, i+1)
			}
		}
		return "[" + strings.Join(s, ",") + "]"
	}
	times := func(n int, s string) string { return strings.TrimSuffix(strings.Repeat(s+",", n), ",") }
	sel := strings.TrimPrefix(strings.Repeat(", blob as a", 8), ", ")
	for i := range 8 {
		sel = strings.Replace(sel, "as a,", fmt.Sprintf("as a%d,", i), 1)
	}
	for _, tc := range []struct {
		name, body string
		status     int
		num        float64
	}{
		{"RQL: a select of one field 8 times", `{"Query":"from big select ` + sel + ` limit 1"}`, 413, 1906},
		{"RQL: a select of one field twice", `{"Query":"from big select blob as a, blob as b limit 1"}`, 200, 0},
		{"DOCUMENT of one id 1,000 times", `{"query":"RETURN DOCUMENT(@ids)","bindVars":{"ids":` + ids(1000, false) + `}}`, 400, 400},
		{"DOCUMENT of 8 large documents", `{"query":"RETURN DOCUMENT(@ids)","bindVars":{"ids":` + ids(8, true) + `}}`, 413, 1906},
		{"a RETURN of the document 8 times", `{"query":"FOR d IN big LIMIT 1 RETURN [` + times(8, "d") + `]"}`, 413, 1906},
		{"a RETURN of an attribute 8 times", `{"query":"FOR d IN big LIMIT 1 RETURN {` + strings.ReplaceAll(times(8, "a: d.blob"), "a:", "a@:") + `}"}`, 413, 1906},
		{"a RETURN of a bound value 16 times", `{"query":"FOR v IN @vals RETURN [` + times(16, "v") + `]","bindVars":{"vals":["` + blob[:100<<10] + `"]}}`, 413, 1906},
		{"DOCUMENT of 4 large documents", `{"query":"RETURN DOCUMENT(@ids)","bindVars":{"ids":` + ids(4, true) + `}}`, 201, 0},
		{"a RETURN of the document twice", `{"query":"FOR d IN big LIMIT 1 RETURN [d, d]"}`, 201, 0},
	} {
		body := tc.body
		for i := 0; strings.Contains(body, "a@:"); i++ {
			body = strings.Replace(body, "a@:", fmt.Sprintf("a%d:", i), 1)
		}
		path := base + "/_api/cursor"
		if strings.HasPrefix(tc.name, "RQL") {
			path = ts.hs.URL + "/databases/shop/queries"
		}
		status, b := do(t, "POST", path, body, nil)
		if status != tc.status || errNum(b) != tc.num {
			t.Errorf("%s: %d %.200v, want %d (%v)", tc.name, status, b, tc.status, tc.num)
		}
	}
}
