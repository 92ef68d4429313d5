//go:build !(js && wasm)

package main

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/hilodb/hilodb/idgen"
)

// TestOpenAppFailsOver gives the worker an unreachable server first and a
// live one after it: ids are leased from the live one.
func TestOpenAppFailsOver(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "ws://" + ln.Addr().String() + "/v1/sync"
	ln.Close()
	live, _ := syncServer(t)
	a, err := openApp(config{URL: dead + ", " + live, Database: "shop"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := a.remote.NextRange(ctx, "orders", idgen.Range{})
	if err != nil || r.Low != 1 || r.ServerTag != "A" {
		t.Fatalf("range through the second server: %+v, %v", r, err)
	}
}
