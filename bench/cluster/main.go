// Command cluster measures what a cluster of sync servers over one etcd
// cluster serves, beside the single server on its embedded buntdb, in one
// run: HiLo leases, identities and pushed documents per second from
// concurrent clients through 1, 2 and 3 servers (real hilodb-server
// processes over a real three-member etcd cluster on 127.0.0.1). Every
// client works on the same HiLo tag, identity and database, the hardest
// case for a cluster: each of them is one counter in etcd. Leases are also
// measured with a HiLo tag per client, counters that never collide.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core/revision"
	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/internal/etcdtest"
)

func main() {
	bin := flag.String("server-bin", "build/bin/hilodb-server", "the hilodb-server binary")
	clients := flag.Int("clients", 24, "concurrent clients")
	d := flag.Duration("duration", 5*time.Second, "time per measurement")
	batch := flag.Int("batch", 10, "documents per push")
	flag.Parse()
	if err := run(*bin, *clients, *d, *batch); err != nil {
		fmt.Fprintln(os.Stderr, "cluster bench:", err)
		os.Exit(1)
	}
}

type proc struct {
	cmd  *exec.Cmd
	addr string
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func startServer(bin, dir string, args ...string) (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "server-"+strings.ReplaceAll(addr, ":", "_")+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"-addr", addr, "-rate", "-1", "-log-level", "warn"}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, addr: addr}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if res, err := http.Get("http://" + addr + "/healthz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return p, nil
			}
		}
	}
	p.stop()
	return nil, fmt.Errorf("server %v not ready; see %s", args, logf.Name())
}

func (p *proc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

// measure runs op on every client for d and returns completed units per
// second.
func measure(cls []*client.Client, d time.Duration, op func(i int, c *client.Client) (int, error)) (float64, error) {
	var n atomic.Int64
	var firstErr atomic.Pointer[error]
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range cls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				k, err := op(i, c)
				if err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
				n.Add(int64(k))
			}
		}()
	}
	wg.Wait()
	if p := firstErr.Load(); p != nil {
		return 0, *p
	}
	return float64(n.Load()) / time.Since(start).Seconds(), nil
}

type result struct {
	Setup        string  `json:"setup"`
	Servers      int     `json:"servers"`
	LeasesPerSec float64 `json:"leasesPerSec"`
	OwnTagPerSec float64 `json:"ownTagLeasesPerSec"`
	IdentsPerSec float64 `json:"identitiesPerSec"`
	DocsPerSec   float64 `json:"pushedDocsPerSec"`
	PullPerSec   float64 `json:"pulledDocsPerSec"`
}

func bench(setup string, urls []string, clients int, d time.Duration, batch int) (result, error) {
	ctx := context.Background()
	var cls []*client.Client
	for i := range clients {
		c, err := client.Dial(ctx, urls[i%len(urls)], client.Options{Database: "bench"})
		if err != nil {
			return result{}, err
		}
		defer c.Close()
		cls = append(cls, c)
	}
	r := result{Setup: setup, Servers: len(urls)}
	var err error
	last := make([]idgen.Range, len(cls))
	if r.LeasesPerSec, err = measure(cls, d, func(i int, c *client.Client) (int, error) {
		rg, err := c.NextRange(ctx, "orders", idgen.Range{})
		last[i] = rg
		return 1, err
	}); err != nil {
		return r, fmt.Errorf("leases: %w", err)
	}
	// The same with a HiLo tag per client: counters that never collide.
	if r.OwnTagPerSec, err = measure(cls, d, func(i int, c *client.Client) (int, error) {
		_, err := c.NextRange(ctx, fmt.Sprintf("tag%d", i), idgen.Range{})
		return 1, err
	}); err != nil {
		return r, fmt.Errorf("leases on own tags: %w", err)
	}
	if r.IdentsPerSec, err = measure(cls, d, func(_ int, c *client.Client) (int, error) {
		_, err := c.NextIdentity(ctx, "companies")
		return 1, err
	}); err != nil {
		return r, fmt.Errorf("identities: %w", err)
	}
	seq := make([]int, len(cls))
	clock := revision.NewClock("B") // a push takes hilodb revisions only
	if r.DocsPerSec, err = measure(cls, d, func(i int, c *client.Client) (int, error) {
		items := make([]client.PushItem, batch)
		for j := range items {
			seq[i]++
			id := fmt.Sprintf("notes/%d-%d", i, seq[i])
			items[j] = client.PushItem{ID: id, Rev: clock.NextRev(), Doc: []byte(`{"text":"a small note","n":1}`)}
		}
		out, err := c.Push(ctx, items)
		if err != nil {
			return 0, err
		}
		for _, res := range out.Results {
			if !res.OK {
				return 0, fmt.Errorf("push %s: %v", res.ID, res.Error)
			}
		}
		return batch, nil
	}); err != nil {
		return r, fmt.Errorf("pushes: %w", err)
	}
	// One client reads the whole feed from the start, through the last
	// server.
	start, n := time.Now(), 0
	var since int64
	for {
		p, err := cls[len(cls)-1].Pull(ctx, since, 1000)
		if err != nil {
			return r, fmt.Errorf("pull: %w", err)
		}
		n += len(p.Changes)
		since = p.Last
		if !p.More {
			break
		}
	}
	r.PullPerSec = float64(n) / time.Since(start).Seconds()
	return r, nil
}

func run(bin string, clients int, d time.Duration, batch int) error {
	dir, err := os.MkdirTemp("", "hilodb-bench-cluster-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var results []result

	// The single server on its embedded buntdb.
	single, err := startServer(bin, dir, "-data", filepath.Join(dir, "single"))
	if err != nil {
		return err
	}
	r, err := bench("buntdb", []string{"ws://" + single.addr + "/v1/sync"}, clients, d, batch)
	single.stop()
	if err != nil {
		return fmt.Errorf("single server: %w", err)
	}
	results = append(results, r)

	ec, err := etcdtest.Start(filepath.Join(dir, "etcd"), 3)
	if err != nil {
		return err
	}
	defer ec.Stop()
	for n := 1; n <= 3; n++ {
		var procs []*proc
		var urls []string
		for i := range n {
			p, err := startServer(bin, dir, "-data", filepath.Join(dir, fmt.Sprintf("e%d%d", n, i)),
				"-etcd", strings.Join(ec.Endpoints(), ","), "-etcd-prefix", fmt.Sprintf("bench%d/", n),
				"-node-tag", string(rune('A'+i)))
			if err != nil {
				return err
			}
			procs = append(procs, p)
			urls = append(urls, "ws://"+p.addr+"/v1/sync")
		}
		r, err := bench("etcd", urls, clients, d, batch)
		for _, p := range procs {
			p.stop()
		}
		if err != nil {
			return fmt.Errorf("%d servers on etcd: %w", n, err)
		}
		results = append(results, r)
	}
	fmt.Printf("%d clients, %v per figure, pushes of %d documents; one HiLo tag, one identity, one database\n", clients, d, batch)
	fmt.Printf("%-8s %7s %12s %16s %14s %14s %14s\n", "store", "servers", "leases/s", "own-tag leases/s", "identities/s", "pushed docs/s", "pulled docs/s")
	for _, r := range results {
		fmt.Printf("%-8s %7d %12.0f %16.0f %14.0f %14.0f %14.0f\n", r.Setup, r.Servers, r.LeasesPerSec, r.OwnTagPerSec, r.IdentsPerSec, r.DocsPerSec, r.PullPerSec)
	}
	for _, r := range results {
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
	}
	return nil
}
