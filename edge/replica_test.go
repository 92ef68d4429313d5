//go:build !(js && wasm)

package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/database"
	"github.com/hilodb/hilodb/internal/servertest"
	"github.com/hilodb/hilodb/syncserver"
)

// The tests in this file run the real sync server, which builds for the
// host only (its etcd client does not build for GOOS=js).

// get returns the first value of a header the API set.
func (r *response) get(name string) string {
	for i := 0; i+1 < len(r.header); i += 2 {
		if strings.EqualFold(r.header[i], name) {
			return r.header[i+1]
		}
	}
	return ""
}

// defineOnServer defines collection coll of db with HiLo keys through the
// server's ArangoDB door at addr: that door, and the edge's, insert only
// into collections that exist.
func defineOnServer(t *testing.T, addr, db, coll string) {
	t.Helper()
	body := `{"name":"` + coll + `","keyOptions":{"type":"hilo"}}`
	res, err := http.Post("http://"+addr+"/_db/"+db+"/_api/collection", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("define %s in %s: %d", coll, db, res.StatusCode)
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

// openAppDir opens the app over a replica kept in directory dir.
func openAppDir(t *testing.T, cfg config, dir string) (*app, *database.Dir) {
	t.Helper()
	st, err := database.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := openApp(context.Background(), cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	return a, st
}

// TestReplicaAgainstServer runs the API over a replica kept in a directory,
// replicating with the real sync server: writes reach it, the replica
// reopens with its documents and ranges, and errors have ArangoDB's bodies.
func TestReplicaAgainstServer(t *testing.T) {
	addr, _ := servertest.Serve(t, syncserver.Config{DataDir: t.TempDir()}, "127.0.0.1:0")
	cfg := config{URL: "ws://" + addr + "/v1/sync", Database: "edgego"}
	defineOnServer(t, addr, "edgego", "orders")
	dir := t.TempDir()
	open := func() (*app, func()) {
		a, st := openAppDir(t, cfg, dir)
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

// TestOpenAppFailsOver gives the worker an unreachable server first and a
// live one after it (HILODB_URL lists a cluster's servers, comma-separated):
// the replica leases its ids from the live one and writes reach it.
func TestOpenAppFailsOver(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "ws://" + ln.Addr().String() + "/v1/sync"
	ln.Close()
	addr, _ := servertest.Serve(t, syncserver.Config{DataDir: t.TempDir()}, "127.0.0.1:0")
	defineOnServer(t, addr, "shop", "orders")
	st, err := database.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := openApp(context.Background(), config{URL: dead + " , ws://" + addr + "/v1/sync", Database: "shop"}, st)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var doc struct {
		ID string `json:"_id"`
	}
	res := serve(t, a, &request{method: "POST", path: "/_api/document/orders", query: "waitForSync=true", body: []byte(`{"n":1}`)}, &doc)
	if res.status != 201 || res.get(syncHeader) != "synced" || doc.ID != "orders/1-A" {
		t.Fatalf("create through the second server: %d %s %s", res.status, res.get(syncHeader), res.body)
	}
}
