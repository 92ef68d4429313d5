// Package servertest runs the real sync server on 127.0.0.1 for the tests of
// other packages.
package servertest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hilodb/hilodb/syncserver"
	"github.com/hilodb/hilodb/syncserver/arangodoor"
	"github.com/hilodb/hilodb/syncserver/ravendoor"
)

// Doors are the HTTP doors a test server serves when its Config names
// none: all of them, as hilodb-server serves them.
var Doors = []syncserver.Door{arangodoor.Register, ravendoor.Register}

// Serve runs a sync server over cfg (its DataDir is required; Logger
// defaults to discarding; Doors defaults to Doors) on addr ("127.0.0.1:0" for any port, or an
// address a stopped server had, retried briefly while it is released). It
// returns the address and a function that stops the server; the test's
// cleanup stops it too.
func Serve(t testing.TB, cfg syncserver.Config, addr string) (string, func()) {
	t.Helper()
	_, a, stop := Start(t, cfg, addr)
	return a, stop
}

// Start is Serve that also returns the server, for tests that call its
// methods.
func Start(t testing.TB, cfg syncserver.Config, addr string) (*syncserver.Server, string, func()) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Doors == nil {
		cfg.Doors = Doors
	}
	srv, err := syncserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	for range 50 {
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		srv.Close(context.Background())
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		hs.Close()
		if err := srv.Close(context.Background()); err != nil {
			t.Errorf("close the server: %v", err)
		}
	}
	t.Cleanup(stop)
	return srv, ln.Addr().String(), stop
}

// Metric reads the value of the metric line name (with its labels, as the
// server writes them) from the /metrics of the server at addr, failing t
// when there is none.
func Metric(t testing.TB, addr, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %q", name, v)
			}
			return n
		}
	}
	t.Fatalf("no metric %s in:\n%s", name, body)
	return 0
}
