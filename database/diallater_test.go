//go:build !js

package database_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hilodb/hilodb/database"
	"github.com/tidwall/gjson"
)

// blackHole listens on 127.0.0.1 and accepts connections it never answers,
// as a server lost on the network does; it counts them.
func blackHole(t *testing.T) (url string, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = new(atomic.Int64)
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return "ws://" + ln.Addr().String() + "/v1/sync", accepted
}

// TestDialLater opens a persisted DB against a server that never answers,
// with DialLater and without it (a store this device opened before opens
// so by itself): Open returns with the kept documents without waiting for
// the dial (DialTimeout is 5 s), and the live loop dials afterwards. A
// store never opened before waits for its first dial.
func TestDialLater(t *testing.T) {
	serverDir := t.TempDir()
	addr, stop := serve(t, serverDir, "127.0.0.1:0")
	ctx := context.Background()
	type kept struct {
		dir string
		ids []string
	}
	var stores []kept
	for range 2 {
		dir := t.TempDir()
		d, err := database.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		db := openDB(t, database.Config{URL: "ws://" + addr + "/v1/sync", Database: "shop", Storage: d, DialTimeout: time.Second})
		var ids []string
		for i := range 3 {
			doc, err := db.Store().Put(ctx, "orders", []byte(fmt.Sprintf(`{"n":%d}`, i)))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, gjson.GetBytes(doc, "_id").String())
		}
		db.Close()
		d.Close()
		stores = append(stores, kept{dir, ids})
	}
	stop()

	for i, dialLater := range []bool{true, false} {
		t.Run(fmt.Sprintf("DialLater=%v", dialLater), func(t *testing.T) {
			url, accepted := blackHole(t)
			d, err := database.OpenDir(stores[i].dir)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			began := time.Now()
			db := openDB(t, database.Config{URL: url, Database: "shop", Storage: d, Live: true, DialLater: dialLater,
				DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second})
			defer db.Close()
			if took := time.Since(began); took > 2*time.Second {
				t.Errorf("Open took %v: it waited for the dial", took)
			}
			for _, id := range stores[i].ids {
				if _, err := db.Store().Get(id); err != nil {
					t.Errorf("get %s after Open: %v", id, err)
				}
			}
			deadline := time.Now().Add(5 * time.Second)
			for accepted.Load() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the live loop did not dial the server within 5 s of Open")
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}

	t.Run("never opened", func(t *testing.T) {
		url, _ := blackHole(t)
		d, err := database.OpenDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		const wait = 400 * time.Millisecond
		began := time.Now()
		db := openDB(t, database.Config{URL: url, Database: "shop", Storage: d, DialTimeout: wait, RequestTimeout: time.Second})
		defer db.Close()
		if took := time.Since(began); took < wait {
			t.Errorf("Open took %v: a store never opened did not wait for its first dial (%v)", took, wait)
		}
	})
}
