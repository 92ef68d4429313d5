// Command sync measures hilodb replication over loopback: one client pushes
// N small documents to a real sync server on 127.0.0.1, then a fresh client
// pulls them. It prints one JSON line with documents per second for each leg,
// in the same shape as bench/pouchdb/pouch.mjs.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/hilodb/hilodb/database"
	"github.com/hilodb/hilodb/syncserver"
)

func main() {
	n := flag.Int("docs", 10000, "documents to replicate")
	flag.Parse()
	if err := run(*n); err != nil {
		fmt.Fprintln(os.Stderr, "sync bench:", err)
		os.Exit(1)
	}
}

func run(n int) error {
	dir, err := os.MkdirTemp("", "hilodb-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	srv, err := syncserver.New(syncserver.Config{DataDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	defer func() {
		hs.Close()
		srv.Close(context.Background())
	}()
	url := "ws://" + ln.Addr().String() + "/v1/sync"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	a, err := database.Open(ctx, database.Config{URL: url, Database: "bench"})
	if err != nil {
		return err
	}
	defer a.Close()
	for i := range n {
		doc := fmt.Sprintf(`{"total":%d,"item":"widget"}`, i)
		if _, err := a.Store().Put(ctx, "orders", []byte(doc)); err != nil {
			return err
		}
	}
	t0 := time.Now()
	pushed, err := a.Replicator().Push(ctx)
	pushDur := time.Since(t0)
	if err != nil {
		return err
	}
	if pushed != n {
		return fmt.Errorf("pushed %d of %d", pushed, n)
	}

	b, err := database.Open(ctx, database.Config{URL: url, Database: "bench"})
	if err != nil {
		return err
	}
	defer b.Close()
	t0 = time.Now()
	pulled, err := b.Replicator().Pull(ctx)
	pullDur := time.Since(t0)
	if err != nil {
		return err
	}
	count := 0
	b.Store().ForEach(func(string, []byte) error { count++; return nil })
	if pulled != n || count != n {
		return fmt.Errorf("pulled %d, holds %d of %d", pulled, count, n)
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"system": "hilodb", "docs": n,
		"pushMs": pushDur.Milliseconds(), "pullMs": pullDur.Milliseconds(),
		"pushDocsPerSec": int(float64(n) / pushDur.Seconds()),
		"pullDocsPerSec": int(float64(n) / pullDur.Seconds()),
	})
}
