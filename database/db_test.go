//go:build !js

// These tests run the real sync server on 127.0.0.1, which GOOS=js cannot;
// the wasm build's tests cover DB there through the JavaScript storage.

package database_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/database"
	"github.com/hilodb/hilodb/internal/servertest"
	"github.com/hilodb/hilodb/syncserver"
	"github.com/tidwall/gjson"
)

// serve runs a sync server on addr over dir; stop ends it.
func serve(t *testing.T, dir, addr string) (string, func()) {
	t.Helper()
	return servertest.Serve(t, syncserver.Config{DataDir: dir}, addr)
}

func openDB(t *testing.T, cfg database.Config) *database.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := database.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestLifecycle opens a persisted DB, writes, closes; reopens it with the
// server down and writes offline from the kept range; reopens it live once
// the server is back, and finds everything on the server.
func TestLifecycle(t *testing.T) {
	serverDir, storeDir := t.TempDir(), t.TempDir()
	addr, stop := serve(t, serverDir, "127.0.0.1:0")
	url := "ws://" + addr + "/v1/sync"
	ctx := context.Background()
	put := func(db *database.DB, n int) []string {
		t.Helper()
		var ids []string
		for i := range n {
			doc, err := db.Store().Put(ctx, "orders", []byte(fmt.Sprintf(`{"n":%d}`, i)))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, gjson.GetBytes(doc, "_id").String())
		}
		return ids
	}
	open := func(live bool) (*database.DB, *database.Dir) {
		d, err := database.OpenDir(storeDir)
		if err != nil {
			t.Fatal(err)
		}
		return openDB(t, database.Config{URL: url, Database: "shop", Storage: d, Live: live, RequestTimeout: time.Second, DialTimeout: time.Second}), d
	}

	db, d := open(false)
	ids := put(db, 5)
	node := db.Client().Node()
	if node == "" {
		t.Fatal("no node tag from the server")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	d.Close()

	stop() // the server goes away
	db, d = open(false)
	if got := db.Store().Clock().Node(); got != node {
		t.Errorf("node tag after reopen: %q, want %q", got, node)
	}
	offline := put(db, 5) // from the kept range, without the server
	all := append(ids, offline...)
	seen := map[string]bool{}
	for _, id := range all {
		if seen[id] {
			t.Fatalf("id %s handed out twice: %v", id, all)
		}
		seen[id] = true
	}
	if n, _ := db.Store().PendingCount(); n != 10 {
		t.Errorf("pending offline: %d, want 10", n)
	}
	if _, _, err := db.Sync(ctx); !errors.Is(err, client.ErrDisconnected) {
		t.Errorf("sync offline: %v, want ErrDisconnected", err)
	}
	db.Close()
	d.Close()

	_, stop = serve(t, serverDir, addr) // back, same address and data
	defer stop()
	db, d = open(true)
	defer d.Close()
	defer db.Close()
	deadline := time.Now().Add(10 * time.Second)
	for n, _ := db.Store().PendingCount(); n > 0; n, _ = db.Store().PendingCount() {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes still pending 10 s after the server came back", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	reader := openDB(t, database.Config{URL: url, Database: "shop"})
	defer reader.Close()
	if _, _, err := reader.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range all {
		if _, err := reader.Store().Get(id); err != nil {
			t.Errorf("%s not on the server: %v", id, err)
		}
	}
}

func TestOpenRefused(t *testing.T) {
	addr, _ := servertest.Serve(t, syncserver.Config{DataDir: t.TempDir(), Tokens: map[string]string{"shop": "s3cret"}}, "127.0.0.1:0")
	_, err := database.Open(context.Background(), database.Config{URL: "ws://" + addr + "/v1/sync", Database: "shop", Token: "wrong"})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "unauthorized" {
		t.Errorf("wrong token: %v, want unauthorized", err)
	}
	if _, err := database.Open(context.Background(), database.Config{Database: "shop"}); err == nil {
		t.Error("Open without a URL succeeded")
	}
}

// flushCounter is a Storage whose Flush is counted, with the appends made
// before each one.
type flushCounter struct {
	database.Storage
	mu       sync.Mutex
	appended int
	flushed  int // appends covered by the last Flush
}

func (f *flushCounter) Append(b []byte) error {
	f.mu.Lock()
	f.appended++
	f.mu.Unlock()
	return f.Storage.Append(b)
}

func (f *flushCounter) Flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushed = f.appended
	return nil
}

// TestPushHardensFirst: before writes leave for the server they are put on
// the disk, so a power cut never leaves the server holding writes (and ids)
// the store lost.
func TestPushHardensFirst(t *testing.T) {
	addr, _ := serve(t, t.TempDir(), "127.0.0.1:0")
	d, err := database.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	f := &flushCounter{Storage: d}
	db := openDB(t, database.Config{URL: "ws://" + addr + "/v1/sync", Database: "shop", Storage: f, RequestTimeout: 5 * time.Second})
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	for i := range 10 {
		if _, err := db.Store().Put(ctx, "orders", []byte(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	f.mu.Lock() // each Put returned once appended
	before, written := f.flushed, f.appended
	f.mu.Unlock()
	if before != 0 {
		t.Fatalf("flushed before any push (%d appends)", before)
	}
	if _, err := db.Replicator().Push(ctx); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// The push's acknowledgements are appended after it: what counts is
	// that every write appended before it was on the disk.
	if f.flushed < written {
		t.Errorf("push sent writes with %d of %d appends on the disk", f.flushed, written)
	}
}
