package main_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/internal/servertest"
)

// span is a run of HiLo numbers a client took as its own.
type span struct{ lo, hi int64 }

// ledger collects every number acknowledged to any client.
type ledger struct {
	mu     sync.Mutex
	spans  map[string][]span        // HiLo tag → numbers used
	idents map[string]map[int64]int // identity name → value → times seen
	nodes  map[string]int           // node tag → times handed out
	errs   map[string]int           // unexpected errors
	acks   atomic.Int64             // acknowledged replies
	lost   atomic.Int64             // calls cut by a crash
}

func newLedger() *ledger {
	return &ledger{spans: map[string][]span{}, idents: map[string]map[int64]int{}, nodes: map[string]int{}, errs: map[string]int{}}
}

func (l *ledger) span(tag string, lo, hi int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.spans[tag] = append(l.spans[tag], span{lo, hi})
}

func (l *ledger) ident(name string, v int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.idents[name] == nil {
		l.idents[name] = map[int64]int{}
	}
	l.idents[name][v]++
}

func (l *ledger) node(tag string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nodes[tag]++
}

// failed sorts an error: a call cut by the crash is expected, anything
// else is counted as unexpected.
func (l *ledger) failed(err error) {
	var e *client.Error
	if errors.Is(err, client.ErrDisconnected) || errors.Is(err, context.DeadlineExceeded) ||
		(errors.As(err, &e) && e.Code == "unavailable") {
		l.lost.Add(1)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs[err.Error()]++
}

// TestCrashNeverReusesNumbers runs the real server as a separate process
// while 50 clients lease HiLo ranges (returning some), take identities one
// and several at a time, and ask for node tags; the server is killed with
// SIGKILL at random moments 10 times and restarted on the same data
// directory. Across every acknowledged reply, no HiLo number, identity or
// node tag is handed out twice.
func TestCrashNeverReusesNumbers(t *testing.T) {
	bin := servertest.BuildServer(t)
	dir := t.TempDir()
	addr := servertest.FreeAddr(t)
	url := wsURL(addr)
	led := newLedger()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	const workers = 50
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			if w < 5 {
				nodeWorker(url, stop, led)
				return
			}
			c := client.New(url, client.Options{Database: "shop"})
			defer c.Close()
			last := map[string]idgen.Range{}
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				err := step(ctx, c, rng, last, led)
				cancel()
				if err != nil {
					led.failed(err)
					time.Sleep(time.Duration(5+rng.IntN(20)) * time.Millisecond)
				} else {
					led.acks.Add(1)
				}
			}
		}()
	}

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	start := time.Now()
	for i := range 10 {
		p := startProc(t, bin, addr, "-data", dir, "-rate", "-1")
		time.Sleep(time.Duration(150+rng.IntN(450)) * time.Millisecond)
		p.kill()
		t.Logf("kill %d at %v: %d replies acknowledged so far", i+1, time.Since(start).Round(time.Millisecond), led.acks.Load())
	}
	p := startProc(t, bin, addr, "-data", dir, "-rate", "-1")
	time.Sleep(400 * time.Millisecond)
	close(stop)
	wg.Wait()
	p.stop()

	acks, lost := led.acks.Load(), led.lost.Load()
	t.Logf("%d acknowledged replies, %d calls cut by crashes, %v in all", acks, lost, time.Since(start).Round(time.Millisecond))
	if acks < 1000 {
		t.Errorf("only %d acknowledged replies; the test proves little", acks)
	}
	if lost == 0 {
		t.Error("no call was cut by a crash; the kills missed the traffic")
	}
	for e, n := range led.errs {
		t.Errorf("unexpected error (%d times): %s", n, e)
	}
	for tag, spans := range led.spans {
		sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
		for i := 1; i < len(spans); i++ {
			if spans[i].lo <= spans[i-1].hi {
				t.Errorf("HiLo %s: numbers %v and %v overlap", tag, spans[i-1], spans[i])
			}
		}
		t.Logf("HiLo %s: %d ranges, up to %d", tag, len(spans), spans[len(spans)-1].hi)
	}
	for name, vs := range led.idents {
		for v, n := range vs {
			if n > 1 {
				t.Errorf("identity %s value %d handed out %d times", name, v, n)
			}
		}
		t.Logf("identity %s: %d values", name, len(vs))
	}
	for tag, n := range led.nodes {
		if n > 1 || tag == "A" {
			t.Errorf("node tag %s handed out %d times", tag, n)
		}
	}
	t.Logf("%d node tags", len(led.nodes))
}

// step performs one random request and records what it was given.
func step(ctx context.Context, c *client.Client, rng *rand.Rand, last map[string]idgen.Range, led *ledger) error {
	switch k := rng.IntN(10); {
	case k < 4:
		tag := []string{"orders", "users"}[rng.IntN(2)]
		r, err := c.NextRange(ctx, tag, last[tag])
		if err != nil {
			return err
		}
		last[tag] = r
		if rng.IntN(3) > 0 {
			led.span(tag, r.Low, r.High)
			return nil
		}
		// Use part of it and give the rest back. From the moment the return
		// is sent the client may not use the numbers after used, whether or
		// not the reply arrives.
		used := r.Low - 1 + rng.Int64N(r.High-r.Low+1)
		if used >= r.Low {
			led.span(tag, r.Low, used)
		}
		return c.ReturnRange(ctx, tag, r.High, used)
	case k < 7:
		name := []string{"companies", "invoices"}[rng.IntN(2)]
		v, err := c.NextIdentity(ctx, name)
		if err != nil {
			return err
		}
		led.ident(name, v)
	default:
		names := []string{"companies", "invoices", "companies"}
		vs, err := c.NextIdentities(ctx, names)
		if err != nil {
			return err
		}
		for i, v := range vs {
			led.ident(names[i], v)
		}
	}
	return nil
}

// nodeWorker connects fresh clients, each asking for a new node tag.
func nodeWorker(url string, stop <-chan struct{}, led *ledger) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		c, err := client.Dial(ctx, url, client.Options{Database: fmt.Sprintf("db%d", time.Now().UnixNano()%3)})
		cancel()
		if err != nil {
			led.failed(err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		led.node(c.Node())
		led.acks.Add(1)
		c.Close()
	}
}
