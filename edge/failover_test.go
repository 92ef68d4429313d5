//go:build !(js && wasm)

package main

import (
	"context"
	"net"
	"testing"

	"github.com/hilodb/hilodb/database"
	"github.com/hilodb/hilodb/internal/servertest"
	"github.com/hilodb/hilodb/syncserver"
)

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
