//go:build !(js && wasm)

package main

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/syncserver"
)

// syncServer starts a sync server on loopback and returns its websocket URL.
func syncServer(t *testing.T) string {
	t.Helper()
	srv, err := syncserver.New(syncserver.Config{DataDir: t.TempDir(), ServerTag: "A"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Close(ctx)
	})
	return "ws" + strings.TrimPrefix(hs.URL, "http") + "/v1/sync"
}

func TestLeaserLeasesConsecutiveRangesAndKeepsTheNode(t *testing.T) {
	l := newLeaser(syncServer(t), client.Options{Database: "shop"})
	var nodes []string
	l.setOnNode(func(n string) { nodes = append(nodes, n) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	r1, err := l.NextRange(ctx, "orders", idgen.Range{})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := l.NextRange(ctx, "orders", r1)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Low != 1 || r1.ServerTag != "A" || r1.Prefix != "orders/" {
		t.Errorf("first range: got %+v, want orders/ from 1, server tag A", r1)
	}
	if r2.Low != r1.High+1 {
		t.Errorf("second range: got %d…%d, want it to start at %d", r2.Low, r2.High, r1.High+1)
	}
	if len(nodes) != 1 || nodes[0] == "" || l.Node() != nodes[0] {
		t.Errorf("node tags: got onNode calls %q and Node %q, want one call with the tag Node returns", nodes, l.Node())
	}
}

func TestLeaserThroughGenerator(t *testing.T) {
	g := idgen.NewGenerator(newLeaser(syncServer(t), client.Options{Database: "shop"}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, want := range []string{"orders/1-A", "orders/2-A", "orders/3-A"} {
		got, err := g.NextID(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("id %d: got %s, want %s", i, got, want)
		}
	}
}

func TestLeaserServerDown(t *testing.T) {
	l := newLeaser("ws://127.0.0.1:1/v1/sync", client.Options{Database: "shop"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := l.NextRange(ctx, "orders", idgen.Range{})
	if !errors.Is(err, client.ErrDisconnected) {
		t.Fatalf("got %v, want client.ErrDisconnected", err)
	}
	if f := classify(err); f.status != 503 || f.num != 1900 {
		t.Errorf("classify: got %+v, want 503 needs_server 1900", f)
	}
}

func TestLeaserRequestGone(t *testing.T) {
	l := newLeaser("ws://127.0.0.1:1/v1/sync", client.Options{Database: "shop"})
	l.enterTurn = func(context.Context) bool { return false }
	_, err := l.NextRange(context.Background(), "orders", idgen.Range{})
	if !errors.Is(err, errRequestGone) {
		t.Fatalf("got %v, want errRequestGone", err)
	}
}
