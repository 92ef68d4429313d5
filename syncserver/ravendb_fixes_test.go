package syncserver_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hilodb/hilodb/syncserver"
)

// Wrong answers the ravendb client's own tests found in routes the door
// served.

func TestRavenConditionalGetAnswers304(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL + "/databases/shop/docs?id=users/1"
	status, res := do(t, "PUT", base, `{"Name":"Ann"}`, ravenClient)
	if status != 201 {
		t.Fatalf("PUT: %d %v", status, res)
	}
	cv := res["ChangeVector"].(string)
	for _, m := range []string{`"` + cv + `"`, cv} {
		h := map[string]string{"If-None-Match": m, "Raven-Client-Version": "7.2"}
		if status, res := do(t, "GET", base, "", h); status != http.StatusNotModified {
			t.Errorf("GET with If-None-Match %s: %d %v, want 304", m, status, res)
		}
	}
	h := map[string]string{"If-None-Match": `"A:1-other"`, "Raven-Client-Version": "7.2"}
	if status, res := do(t, "GET", base, "", h); status != 200 || res["Results"] == nil {
		t.Errorf("GET with another change vector: %d %v, want 200 with the document", status, res)
	}
	// With includes the ETag does not cover everything answered.
	h["If-None-Match"] = `"` + cv + `"`
	if status, _ := do(t, "GET", base+"&include=Friend", "", h); status != 200 {
		t.Errorf("GET with include and a matching If-None-Match: %d, want 200", status)
	}
}

func TestRavenHiloDocumentIsTheHiloState(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL + "/databases/shop"
	put := `{"Commands":[{"Type":"PUT","Id":"Raven/Hilo/users","ChangeVector":null,"Document":{"Max":64,"@metadata":{"@collection":"HiloDocs","Raven-Node-Type":"HiloDoc"}}}]}`
	if status, res := do(t, "POST", base+"/bulk_docs", put, ravenClient); status != 201 {
		t.Fatalf("storing Raven/Hilo/users: %d %v", status, res)
	}
	status, res := do(t, "GET", base+"/hilo/next?tag=users", "", ravenClient)
	if status != 200 || res["Low"] != 65.0 {
		t.Fatalf("hilo/next after {Max: 64}: %d %v, want Low 65 (users/65-A next)", status, res)
	}
	high := res["High"].(float64)
	status, res = do(t, "GET", base+"/docs?id=Raven/Hilo/users", "", ravenClient)
	if status != 200 || resultMax(res) != high {
		t.Fatalf("reading Raven/Hilo/users after a lease: %d %v, want Max %v", status, res, high)
	}
	// Its @metadata is kept, as RavenDB keeps it (the client takes the
	// document's type from it).
	if md := res["Results"].([]any)[0].(map[string]any)["@metadata"].(map[string]any); md["Raven-Node-Type"] != "HiloDoc" || md["@collection"] != "HiloDocs" {
		t.Errorf("Raven/Hilo/users @metadata %v, want the stored Raven-Node-Type and @collection", md)
	}
	// The websocket's hilo.next leases from the same state.
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	got := r.call(`{"id":2,"op":"hilo.next","tag":"users","lastSize":0,"lastMax":0,"lastRangeAt":""}`)
	if got["low"] != high+1 {
		t.Fatalf("websocket hilo.next: %v, want low %v", got, high+1)
	}
	wsHigh := got["high"].(float64)
	if _, res := do(t, "GET", base+"/docs?id=raven/hilo/users", "", ravenClient); resultMax(res) != wsHigh {
		t.Errorf("Raven/Hilo/users after the websocket's lease: %v, want Max %v", res, wsHigh)
	}
	// A lower Max never hands numbers out again.
	low := `{"Commands":[{"Type":"PUT","Id":"Raven/Hilo/users","ChangeVector":null,"Document":{"Max":3}}]}`
	if status, res := do(t, "POST", base+"/bulk_docs", low, ravenClient); status != 201 {
		t.Fatalf("storing a lower Max: %d %v", status, res)
	}
	if status, res := do(t, "GET", base+"/hilo/next?tag=users", "", ravenClient); status != 200 || res["Low"] != wsHigh+1 {
		t.Errorf("hilo/next after a lower Max: %d %v, want Low %v", status, res, wsHigh+1)
	}
	// PUT /docs is the same write; a mixed batch and a bad Max are refused.
	if status, res := do(t, "PUT", base+"/docs?id=Raven/Hilo/orders", `{"Max":1000}`, ravenClient); status != 201 {
		t.Fatalf("PUT Raven/Hilo/orders: %d %v", status, res)
	}
	if _, res := do(t, "GET", base+"/hilo/next?tag=orders", "", ravenClient); res["Low"] != 1001.0 {
		t.Errorf("hilo/next after PUT {Max: 1000}: %v, want Low 1001", res)
	}
	for _, body := range []string{
		`{"Commands":[{"Type":"PUT","Id":"Raven/Hilo/a","ChangeVector":null,"Document":{"Max":1}},{"Type":"PUT","Id":"x","ChangeVector":null,"Document":{}}]}`,
		`{"Commands":[{"Type":"PUT","Id":"Raven/Hilo/a","ChangeVector":null,"Document":{"Max":"1"}}]}`,
		`{"Commands":[{"Type":"DELETE","Id":"Raven/Hilo/users","ChangeVector":null}]}`,
	} {
		if status, res := do(t, "POST", base+"/bulk_docs", body, ravenClient); status != 400 {
			t.Errorf("%s: %d %v, want 400", body, status, res)
		}
	}
}

func resultMax(res map[string]any) float64 {
	rs, _ := res["Results"].([]any)
	if len(rs) != 1 {
		return -1
	}
	m, _ := rs[0].(map[string]any)
	v, _ := m["Max"].(float64)
	return v
}

func TestRavenServerLevelRoutesAnswerRavenErrors(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	for _, r := range []struct{ method, path string }{
		{"GET", "/databases?start=0&pageSize=20"},
		{"PUT", "/admin/databases?name=x&replicationFactor=1"},
		{"GET", "/build/version"},
		{"GET", "/info/tcp"},
		{"GET", "/cluster/node-info"},
		{"GET", "/monitoring/v1/server"},
	} {
		status, res := do(t, r.method, ts.hs.URL+r.path, "", ravenClient)
		msg, _ := res["Message"].(string)
		if status != 501 || res["Type"] != "Raven.Client.Exceptions.Routing.RouteNotFoundException" || errNum(res) != 1911 || !strings.Contains(msg, "not served") {
			t.Errorf("%s %s: %d %v, want 501 with a RavenDB error body", r.method, r.path, status, res)
		}
	}
	// hilodb's own routes are still there.
	if status, _ := do(t, "GET", ts.hs.URL+"/cluster/topology", "", ravenClient); status != 200 {
		t.Errorf("cluster/topology: %d", status)
	}
}

// TestRavenHiloDocumentNeedsAdmin: storing Raven/Hilo raises a HiLo state,
// which can use a tag's numbers up; like a seed, a writer may not, while
// reading it and querying need no more than reading.
func TestRavenHiloDocumentNeedsAdmin(t *testing.T) {
	is := newIssuer(t)
	ts := startServer(t, syncserver.Config{Verifier: is.verifier()})
	alice := is.token("alice", map[string]string{"user-{sub}": "write"}, time.Hour)
	admin := is.token("root", map[string]string{"user-alice": "admin"}, time.Hour)
	base := ts.hs.URL + "/databases/user-alice"
	put := `{"Commands":[{"Type":"PUT","Id":"Raven/Hilo/users","ChangeVector":null,"Document":{"Max":1000}}]}`
	if code, b := httpDo(t, http.MethodPost, base+"/bulk_docs", alice, put); code != 403 || !strings.Contains(b, "admin") {
		t.Errorf("a writer stores Raven/Hilo/users: %d %s, want 403", code, b)
	}
	if code, b := httpDo(t, http.MethodPost, base+"/bulk_docs", admin, put); code != 201 {
		t.Errorf("an admin stores Raven/Hilo/users: %d %s, want 201", code, b)
	}
	if code, b := httpDo(t, http.MethodPost, base+"/queries", alice, `{"Query":"from Users"}`); code != 200 {
		t.Errorf("a writer queries: %d %s", code, b)
	}
}
