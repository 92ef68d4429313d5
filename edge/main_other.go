//go:build !(js && wasm)

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// On the host, the worker's handler runs as a plain HTTP server on
// loopback: the same API, store and leases, without workerd.
func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "edge:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:8788", "listen address")
	url := flag.String("url", os.Getenv("HILODB_URL"), "sync server websocket URL (env HILODB_URL)")
	db := flag.String("db", os.Getenv("HILODB_DB"), "database name (env HILODB_DB)")
	token := flag.String("token", os.Getenv("HILODB_TOKEN"), "token for the database (env HILODB_TOKEN)")
	flag.Parse()
	a, err := openApp(config{URL: *url, Database: *db, Token: *token}, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	hs := &http.Server{Handler: a.handler(), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "edge: serving http://%s\n", ln.Addr())
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}
