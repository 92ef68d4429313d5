//go:build !(js && wasm)

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hilodb/hilodb/database"
)

// On the host, the worker's API runs as a plain HTTP server on loopback,
// its replica kept in a directory: the same API, replica and leases,
// without workerd.
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
	dir := flag.String("data", "edge-data", "directory of the replica")
	flag.Parse()
	st, err := database.OpenDir(*dir)
	if err != nil {
		return err
	}
	defer st.Close()
	a, err := openApp(context.Background(), config{URL: *url, Database: *db, Token: *token}, st)
	if err != nil {
		return err
	}
	defer a.Close()
	a.begin()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	hs := &http.Server{Handler: httpHandler(a), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	// As the Durable Object's alarm: a sync round while writes are pending
	// and the live loop is not following.
	go func() {
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				a.tick(ctx)
			}
		}
	}()
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

// httpHandler serves a's API over net/http, as the glue does in workerd.
func httpHandler(a *app) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, hr.Body, maxBodyBytes+1))
		if err != nil && !errors.As(err, new(*http.MaxBytesError)) {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r := &request{method: hr.Method, path: hr.URL.EscapedPath(), query: hr.URL.RawQuery,
			ifMatch: hr.Header.Get("If-Match"), ifNoneMatch: hr.Header.Get("If-None-Match"), body: body,
			noCache: noCache(hr.Header.Get("Cache-Control"))}
		res, ok := a.quick(r)
		if !ok {
			res = a.serve(hr.Context(), r)
		}
		for i := 0; i+1 < len(res.header); i += 2 {
			w.Header().Add(res.header[i], res.header[i+1])
		}
		if res.body != nil || res.status != http.StatusNotModified {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
		}
		w.WriteHeader(res.status)
		_, _ = w.Write(res.body)
	})
}
