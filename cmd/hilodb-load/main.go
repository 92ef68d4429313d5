// Command hilodb-load is a bounded load test of the sync server: many
// websocket clients on loopback lease HiLo ranges and take identities for a
// fixed time, with and without group commit, then report errors, throughput
// and latency percentiles, and check that no number was handed out twice.
//
//	hilodb-load [-clients 200] [-duration 30s] [-server-bin build/bin/hilodb-server] [-mode both]
//
// With -server-bin it runs that server binary as a separate process on a
// free 127.0.0.1 port over a fresh data directory (under -data-root); without
// it, it runs the server in this process, still over real TCP and real fsync.
// It stops by itself and exits non-zero on any error or duplicate.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/syncserver"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hilodb-load:", err)
		os.Exit(1)
	}
}

// options of one load run.
type options struct {
	clients   int
	duration  time.Duration
	serverBin string
	dataRoot  string
}

// result of one load run.
type result struct {
	Mode       string
	Clients    int
	Duration   time.Duration
	Requests   int64
	Errors     int64
	FirstError string
	Duplicates int
	P50, P99   time.Duration
	Max        time.Duration
	Ranges     int64
	Identities int64
}

func (r result) PerSecond() float64 { return float64(r.Requests) / r.Duration.Seconds() }

func (r result) String() string {
	return fmt.Sprintf("%-16s %4d clients %5.1fs  %8d requests  %9.0f req/s  p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  errors %d  duplicates %d",
		r.Mode, r.Clients, r.Duration.Seconds(), r.Requests, r.PerSecond(),
		ms(r.P50), ms(r.P99), ms(r.Max), r.Errors, r.Duplicates)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("hilodb-load", flag.ContinueOnError)
	var o options
	fs.IntVar(&o.clients, "clients", 200, "concurrent websocket clients")
	fs.DurationVar(&o.duration, "duration", 30*time.Second, "how long each run lasts")
	fs.StringVar(&o.serverBin, "server-bin", "", "server binary to run as a separate process (default: run the server in this process)")
	fs.StringVar(&o.dataRoot, "data-root", "", "where the temporary data directories go (default: the system temp dir)")
	mode := fs.String("mode", "both", "group, nogroup or both")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var modes []bool // noGroupCommit
	switch *mode {
	case "group":
		modes = []bool{false}
	case "nogroup":
		modes = []bool{true}
	case "both":
		modes = []bool{false, true}
	default:
		return fmt.Errorf("-mode: want group, nogroup or both, got %q", *mode)
	}
	var failed error
	for _, noGroup := range modes {
		res, err := loadOnce(o, noGroup)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, res)
		if res.Errors > 0 || res.Duplicates > 0 {
			failed = errors.Join(failed, fmt.Errorf("%s: %d errors (first: %s), %d duplicates", res.Mode, res.Errors, res.FirstError, res.Duplicates))
		}
	}
	return failed
}

// loadOnce starts a server, runs the clients against it and stops it.
func loadOnce(o options, noGroup bool) (result, error) {
	res := result{Mode: "group commit", Clients: o.clients}
	if noGroup {
		res.Mode = "no group commit"
	}
	dir, err := os.MkdirTemp(o.dataRoot, "hilodb-load-")
	if err != nil {
		return res, fmt.Errorf("create data directory: %w", err)
	}
	defer os.RemoveAll(dir)
	url, stop, err := startServer(o.serverBin, dir, noGroup)
	if err != nil {
		return res, err
	}
	defer stop()
	return drive(url, o.clients, o.duration, res)
}

// startServer runs a server on a free loopback port and returns its
// websocket URL and a function that stops it.
func startServer(bin, dir string, noGroup bool) (string, func(), error) {
	if bin == "" {
		srv, err := syncserver.New(syncserver.Config{DataDir: dir, NoGroupCommit: noGroup,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			return "", nil, err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			srv.Close(context.Background())
			return "", nil, fmt.Errorf("listen: %w", err)
		}
		hs := &http.Server{Handler: srv}
		go hs.Serve(ln)
		return "ws://" + ln.Addr().String() + "/v1/sync", func() {
			hs.Close()
			srv.Close(context.Background())
		}, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("find a free port: %w", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args := []string{"-addr", addr, "-data", dir, "-log-level", "warn"}
	if noGroup {
		args = append(args, "-no-group-commit")
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start server: %w", err)
	}
	stop := func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		res, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			res.Body.Close()
			break
		}
		if time.Since(start) > 15*time.Second {
			stop()
			return "", nil, fmt.Errorf("server at %s not ready: %w", addr, err)
		}
	}
	return "ws://" + addr + "/v1/sync", stop, nil
}

// drive runs n clients against url for d and fills in res.
func drive(url string, n int, d time.Duration, res result) (result, error) {
	type clientStats struct {
		lat      []time.Duration
		errs     int64
		firstErr string
		ranges   []idgen.Range
		idents   map[string][]int64
	}
	stats := make([]*clientStats, n)
	// Connect everyone first, so the timed part measures requests only.
	clients := make([]*client.Client, n)
	for i := range clients {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := client.Dial(ctx, url, client.Options{Database: "load"})
		cancel()
		if err != nil {
			for _, c := range clients[:i] {
				c.Close()
			}
			return res, fmt.Errorf("connect client %d: %w", i, err)
		}
		clients[i] = c
	}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for i, c := range clients {
		st := &clientStats{idents: map[string][]int64{}}
		stats[i] = st
		wg.Add(1)
		go func() {
			defer wg.Done()
			tags := []string{"orders", "users", "invoices", "events"}
			last := map[string]idgen.Range{}
			for k := 0; time.Now().Before(deadline); k++ {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				t0 := time.Now()
				var err error
				switch k % 10 {
				case 0, 2, 4, 6, 8:
					tag := tags[(i+k)%len(tags)]
					var r idgen.Range
					if r, err = c.NextRange(ctx, tag, last[tag]); err == nil {
						last[tag] = r
						st.ranges = append(st.ranges, r)
					}
				case 1, 3, 5, 7:
					var v int64
					if v, err = c.NextIdentity(ctx, "companies"); err == nil {
						st.idents["companies"] = append(st.idents["companies"], v)
					}
				default:
					names := []string{"companies", "orders", "companies"}
					var vs []int64
					if vs, err = c.NextIdentities(ctx, names); err == nil {
						for j, v := range vs {
							st.idents[names[j]] = append(st.idents[names[j]], v)
						}
					}
				}
				cancel()
				st.lat = append(st.lat, time.Since(t0))
				if err != nil {
					if st.errs == 0 {
						st.firstErr = err.Error()
					}
					st.errs++
				}
			}
		}()
	}
	wg.Wait()
	res.Duration = time.Since(start)
	var all []time.Duration
	byTag := map[string][]idgen.Range{}
	seen := map[string]map[int64]bool{}
	for _, st := range stats {
		all = append(all, st.lat...)
		res.Errors += st.errs
		if res.FirstError == "" {
			res.FirstError = st.firstErr
		}
		for _, r := range st.ranges {
			byTag[r.Prefix] = append(byTag[r.Prefix], r)
			res.Ranges++
		}
		for name, vs := range st.idents {
			if seen[name] == nil {
				seen[name] = map[int64]bool{}
			}
			for _, v := range vs {
				if seen[name][v] {
					res.Duplicates++
				}
				seen[name][v] = true
				res.Identities++
			}
		}
	}
	for _, rs := range byTag {
		slices.SortFunc(rs, func(a, b idgen.Range) int { return int(a.Low - b.Low) })
		for i := 1; i < len(rs); i++ {
			if rs[i].Low <= rs[i-1].High {
				res.Duplicates++
			}
		}
	}
	res.Requests = int64(len(all))
	if len(all) > 0 {
		slices.Sort(all)
		res.P50 = all[len(all)*50/100]
		res.P99 = all[min(len(all)-1, len(all)*99/100)]
		res.Max = all[len(all)-1]
	}
	return res, nil
}
