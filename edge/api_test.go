package main

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/hilodb/hilodb/database"
	"github.com/hilodb/hilodb/internal/servertest"
	"github.com/hilodb/hilodb/syncserver"
)

func TestParseRoute(t *testing.T) {
	tests := []struct {
		method, path string
		want         route
		ok           bool
	}{
		{"POST", "/docs/orders", route{kind: "docs", coll: "orders"}, true},
		{"GET", "/docs/orders/1-A", route{kind: "doc", key: "orders/1-A"}, true},
		{"GET", "/docs/orders%2F1-A", route{kind: "doc", key: "orders/1-A"}, true},
		{"GET", "/docs/", route{}, false},
		{"GET", "/_api/document/orders/k1", route{kind: "arango", coll: "orders", key: "k1"}, true},
		{"POST", "/_api/document/orders", route{kind: "arango", coll: "orders"}, true},
		{"POST", "/_db/shop/_api/document/orders", route{kind: "arango", coll: "orders"}, true},
		{"GET", "/_db/shop/_api/version", route{kind: "version"}, true},
		{"GET", "/_api/document/orders/a/b", route{}, false},
		{"GET", "/_api/document/", route{}, false},
		{"GET", "/_db/shop", route{}, false},
		{"GET", "/elsewhere", route{}, false},
		{"GET", "/docs/%zz", route{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			got, ok := parseRoute(tt.method, tt.path)
			if ok != tt.ok || got != tt.want {
				t.Errorf("parseRoute = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestDatabaseOf(t *testing.T) {
	for path, want := range map[string]string{"/_db/shop/_api/x": "shop", "/_db/_system/_api/x": "default", "/docs/a": ""} {
		if got := databaseOf(path); got != want {
			t.Errorf("databaseOf(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestArangoView(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":1,"@metadata":{"@collection":"c"}}`, `{"a":1}`},
		{`{"@metadata":{"@collection":"c"},"a":1}`, `{"a":1}`},
		{`{"@metadata":{"x":[1,2]}}`, `{}`},
		{`{"a":{"@metadata":1}}`, `{"a":{"@metadata":1}}`},
		{`{"a":1}`, `{"a":1}`},
		{``, ``},
	}
	for _, tt := range tests {
		if got := string(arangoView([]byte(tt.in))); got != tt.want {
			t.Errorf("arangoView(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func FuzzArangoView(f *testing.F) {
	f.Add([]byte(`{"a":1,"@metadata":{"@collection":"c"}}`))
	f.Add([]byte(`{ "@metadata" : {} , "b":[1]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		out := arangoView(doc)
		if json.Valid(doc) && !json.Valid(out) {
			t.Fatalf("arangoView(%s) = %s: not JSON", doc, out)
		}
	})
}

func TestArangoOptions(t *testing.T) {
	o, wait, _, bad := arangoOptions(&request{query: "returnNew=true&waitForSync=true&overwrite=true", ifMatch: `"r1"`})
	if bad != nil || !o.ReturnNew || !wait || o.OverwriteMode != "replace" || o.IfMatch != "r1" {
		t.Errorf("options = %+v, wait %v, bad %v", o, wait, bad)
	}
	for _, q := range []string{"returnNew=yes", "overwriteMode=sometimes", "%zz"} {
		if _, _, _, bad := arangoOptions(&request{query: q}); bad == nil || bad.status != 400 {
			t.Errorf("query %q: want a 400, got %+v", q, bad)
		}
	}
}

// serve sends one request to a and decodes its JSON body into v (if not nil).
func serve(t *testing.T, a *app, r *request, v any) *response {
	t.Helper()
	res := a.serve(context.Background(), r)
	if v != nil && len(res.body) > 0 {
		if err := json.Unmarshal(res.body, v); err != nil {
			t.Fatalf("%s %s: %d %s", r.method, r.path, res.status, res.body)
		}
	}
	return res
}

// TestReplicaAgainstServer runs the API over a replica kept in a directory,
// replicating with the real sync server: writes reach it, the replica
// reopens with its documents and ranges, and errors have ArangoDB's bodies.
func TestReplicaAgainstServer(t *testing.T) {
	addr, _ := servertest.Serve(t, syncserver.Config{DataDir: t.TempDir()}, "127.0.0.1:0")
	cfg := config{URL: "ws://" + addr + "/v1/sync", Database: "edgego"}
	dir := t.TempDir()
	open := func() (*app, func()) {
		st, err := database.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		a, err := openApp(context.Background(), cfg, st)
		if err != nil {
			t.Fatal(err)
		}
		return a, func() {
			if err := a.Close(); err != nil {
				t.Error(err)
			}
			_ = st.Close()
		}
	}
	a, closeA := open()
	seen := map[string]bool{}
	var doc struct {
		ID  string `json:"_id"`
		Key string `json:"_key"`
		Rev string `json:"_rev"`
	}
	for range 3 {
		res := serve(t, a, &request{method: "POST", path: "/_api/document/orders", query: "waitForSync=true", body: []byte(`{"n":1}`)}, &doc)
		if res.status != 201 || res.get(syncHeader) != "synced" {
			t.Fatalf("create: %d %s %s", res.status, res.get(syncHeader), res.body)
		}
		if seen[doc.ID] {
			t.Fatalf("id %s twice", doc.ID)
		}
		seen[doc.ID] = true
	}
	var e struct {
		Code, ErrorNum int
		Rev            string `json:"_rev"`
	}
	res := serve(t, a, &request{method: "PATCH", path: "/_api/document/orders/" + doc.Key, ifMatch: `"old"`, body: []byte(`{}`)}, &e)
	if res.status != 412 || e.Code != 412 || e.ErrorNum != 1200 || e.Rev != doc.Rev {
		t.Errorf("stale If-Match: %d %s", res.status, res.body)
	}
	res = serve(t, a, &request{method: "GET", path: "/_api/document/orders/nope"}, &e)
	if res.status != 404 || e.ErrorNum != 1202 {
		t.Errorf("missing: %d %s", res.status, res.body)
	}
	closeA()

	a, closeA = open()
	defer closeA()
	res = serve(t, a, &request{method: "GET", path: "/docs/" + doc.ID}, nil)
	if res.status != 200 {
		t.Fatalf("after reopening: %d %s", res.status, res.body)
	}
	res = serve(t, a, &request{method: "POST", path: "/docs/orders", body: []byte(`{"n":2}`)}, &doc)
	if res.status != 201 || seen[doc.ID] {
		t.Errorf("after reopening: %d %s (ids before: %v)", res.status, res.body, seen)
	}
}

func TestOpenWithoutServer(t *testing.T) {
	st, err := database.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := openApp(context.Background(), config{}, st); !errors.Is(err, errNoServer) {
		t.Errorf("openApp without a URL: %v, want errNoServer", err)
	}
}
