// Command hilodb-server runs the hilodb sync server.
//
//	hilodb-server -addr 127.0.0.1:8080 -data ./data -node-tag A [-static dir]
//
// It stops cleanly on SIGINT and SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hilodb/hilodb/syncserver"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "hilodb-server:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	data := flag.String("data", "./data", "data directory")
	tag := flag.String("node-tag", "A", "this server's node tag")
	static := flag.String("static", "", "directory served at / (the demo app)")
	tokens := flag.String("tokens", "", "comma-separated db=token pairs (or env HILODB_TOKENS); * matches any db")
	origins := flag.String("origins", "", "comma-separated Origin host patterns allowed for browser connections")
	maxMsg := flag.Int64("max-message", 8<<20, "largest websocket message in bytes")
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg := syncserver.Config{DataDir: *data, ServerTag: *tag, MaxMessageBytes: *maxMsg, Logger: log}
	if *static != "" {
		cfg.Static = http.FileServer(http.Dir(*static))
	}
	if *origins != "" {
		cfg.AllowedOrigins = strings.Split(*origins, ",")
	}
	tk := *tokens
	if tk == "" {
		tk = os.Getenv("HILODB_TOKENS")
	}
	if tk != "" {
		cfg.Tokens = map[string]string{}
		for _, pair := range strings.Split(tk, ",") {
			db, token, ok := strings.Cut(pair, "=")
			if !ok || db == "" || token == "" {
				return fmt.Errorf("-tokens: want db=token pairs, got %q", pair)
			}
			cfg.Tokens[db] = token
		}
	}
	srv, err := syncserver.New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		srv.Close(context.Background())
		return fmt.Errorf("listen: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	log.Info("serving", "addr", "http://"+ln.Addr().String(), "data", *data, "nodeTag", *tag)
	select {
	case err := <-errc:
		srv.Close(context.Background())
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Websocket connections are hijacked, so Shutdown does not wait for them;
	// srv.Close ends them and flushes the store.
	err = errors.Join(hs.Shutdown(sctx), srv.Close(sctx))
	if err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}
