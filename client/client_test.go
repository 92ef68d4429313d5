//go:build !js

// These tests run the real sync server on 127.0.0.1, which GOOS=js cannot;
// transport_js_test.go covers the host WebSocket transport there.

package client_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/internal/servertest"
	"github.com/hilodb/hilodb/syncserver"
)

// serve runs a sync server on addr over dir; stop ends it.
func serve(t *testing.T, dir, addr string) (string, func()) {
	t.Helper()
	return servertest.Serve(t, syncserver.Config{DataDir: dir}, addr)
}

// shopClient returns a client of database shop on a server of its own,
// both stopped when the test ends.
func shopClient(t *testing.T) *client.Client {
	t.Helper()
	addr, stop := serve(t, t.TempDir(), "127.0.0.1:0")
	t.Cleanup(stop)
	c := client.New("ws://"+addr+"/v1/sync", client.Options{Database: "shop"})
	t.Cleanup(func() { c.Close() })
	return c
}

func TestOfflineThenOnline(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close() // nothing listens there yet
	c := client.New("ws://"+addr+"/v1/sync", client.Options{Database: "shop"})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.NextRange(ctx, "orders", idgen.Range{}); !errors.Is(err, client.ErrDisconnected) {
		t.Fatalf("offline: got %v, want ErrDisconnected", err)
	}
	dir := t.TempDir()
	_, stop := serve(t, dir, addr)
	r, err := c.NextRange(ctx, "orders", idgen.Range{})
	if err != nil || r.Low != 1 || r.High != 32 || r.ServerTag != "A" {
		t.Fatalf("online: %+v, %v", r, err)
	}
	node := c.Node()
	// The server restarts: the next call redials, keeps the node tag and
	// continues after the first range.
	stop()
	_, stop = serve(t, dir, addr)
	defer stop()
	r2, err := c.NextRange(ctx, "orders", r)
	for i := 0; err != nil && i < 3; i++ { // the first call may meet the dead socket
		r2, err = c.NextRange(ctx, "orders", r)
	}
	if err != nil || r2.Low != 33 {
		t.Fatalf("after restart: %+v, %v", r2, err)
	}
	if c.Node() != node || node == "" {
		t.Errorf("node tag %q became %q", node, c.Node())
	}
}

func TestServerErrors(t *testing.T) {
	addr, stop := serve(t, t.TempDir(), "127.0.0.1:0")
	defer stop()
	c := client.New("ws://"+addr+"/v1/sync", client.Options{Database: "9bad"})
	defer c.Close()
	_, err := c.NextIdentity(context.Background(), "companies")
	var e *client.Error
	if !errors.As(err, &e) || e.Code != "illegal_name" || e.Num != 1208 {
		t.Fatalf("got %v, want illegal_name 1208", err)
	}
	c2 := client.New("ws://"+addr+"/v1/sync", client.Options{Database: "shop"})
	defer c2.Close()
	if _, err := c2.NextIdentities(context.Background(), []string{"a", "a", "b"}); err != nil {
		t.Fatal(err)
	}
	_, err = c2.SeedIdentity(context.Background(), "a|b", 5, false)
	if !errors.As(err, &e) || e.Code != "bad_request" {
		t.Fatalf("got %v, want bad_request", err)
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.NextIdentity(context.Background(), "a"); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}

func TestGetDocuments(t *testing.T) {
	c := shopClient(t)
	ctx := context.Background()
	if _, err := c.Push(ctx, []client.PushItem{{ID: "a", Rev: "_mAAAAAAA-BT", Doc: []byte(`{"x":1}`)}}); err != nil {
		t.Fatal(err)
	}
	docs, err := c.Get(ctx, []string{"a", "zz"})
	if err != nil || len(docs) != 2 || docs[0].Rev != "_mAAAAAAA-BT" || docs[1].Rev != "" || docs[1].ID != "zz" {
		t.Fatalf("Get: %+v, %v", docs, err)
	}
}

func TestNextRangeFor(t *testing.T) {
	addr, stop := serve(t, t.TempDir(), "127.0.0.1:0")
	defer stop()
	c := client.New("ws://"+addr+"/v1/sync", client.Options{Database: "shop"})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.NextRangeFor(ctx, "orders", idgen.Range{}, 5000)
	if err != nil || r.Low != 1 || r.High != 5000 || r.LastSize != 5000 {
		t.Fatalf("first range for 5000: %+v, %v", r, err)
	}
	// Without a want the server's growth rule sizes it: twice the last.
	r2, err := c.NextRangeFor(ctx, "orders", r, 0)
	if err != nil || r2.Low != 5001 || r2.High != 15000 {
		t.Fatalf("next range: %+v, %v; want 5001…15000", r2, err)
	}
	if _, err := c.NextRangeFor(ctx, "orders", r2, -5); err != nil {
		t.Fatalf("a negative want is no want: %v", err)
	}
}

// TestPushChecksDocuments: Push refuses a document that is not valid JSON
// before sending anything; PushChecked sends it unchecked, and the server
// refuses the whole request, storing nothing of it.
func TestPushChecksDocuments(t *testing.T) {
	c := shopClient(t)
	ctx := context.Background()
	items := []client.PushItem{
		{ID: "good", Rev: "_mAAAAAAA-BT", Doc: []byte(`{"x":1}`)},
		{ID: "bad", Rev: "_mAAAAAAA-BT", Doc: []byte(`{"x":`)},
	}
	if _, err := c.Push(ctx, items); err == nil || !strings.Contains(err.Error(), "push bad: the document is not valid JSON") {
		t.Fatalf("Push: %v, want the bad document named", err)
	}
	_, err := c.PushChecked(ctx, -1, items)
	var e *client.Error
	if !errors.As(err, &e) || e.Code != "bad_json" {
		t.Fatalf("PushChecked: %v, want the server's bad_json", err)
	}
	docs, err := c.Get(ctx, []string{"good"})
	if err != nil || len(docs) != 1 || docs[0].Rev != "" {
		t.Fatalf("after the refused pushes: %+v, %v; want nothing stored", docs, err)
	}
	out, err := c.PushChecked(ctx, -1, items[:1])
	if err != nil || len(out.Results) != 1 || !out.Results[0].OK || out.Results[0].ID != "good" || out.Results[0].Seq != 1 {
		t.Fatalf("PushChecked of a valid document: %+v, %v", out, err)
	}
}
