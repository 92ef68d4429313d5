package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core/revision"
	"github.com/hilodb/hilodb/internal/servertest"
)

// TestCrashKeepsAcknowledgedWrites runs the real server as a separate
// process while 10 clients push new versions of their own documents, and
// kills it with SIGKILL at random moments 6 times. A push whose reply was
// lost is sent again as it was (pushes are idempotent). At the end the
// server holds exactly the last acknowledged version of every document, and
// no change sequence was given to two writes.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	bin := servertest.BuildServer(t)
	dir := t.TempDir()
	addr := servertest.FreeAddr(t)
	url := wsURL(addr)

	type state struct {
		rev  string // last acknowledged revision
		next int    // version of the next write
	}
	var (
		mu      sync.Mutex
		acked   = map[string]state{}
		seqs    = map[int64]string{} // sequence → id@rev that got it
		bad     []string
		acks    atomic.Int64
		retries atomic.Int64
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	const writers, docsEach = 10, 20
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 11))
			c := client.New(url, client.Options{Database: "shop"})
			defer c.Close()
			local := map[string]state{}
			clock := revision.NewClock(fmt.Sprintf("W%d", w)) // revisions only grow (docs/protocol.md)
			var pending []client.PushItem                     // sent, reply not seen: send again as it is
			for stopped := false; ; {
				select {
				case <-stop:
					stopped = true
				default:
				}
				if stopped && len(pending) == 0 {
					return
				}
				if len(pending) == 0 {
					for range 1 + rng.IntN(5) {
						id := fmt.Sprintf("w%d/doc%d", w, rng.IntN(docsEach))
						if containsID(pending, id) {
							continue
						}
						st := local[id]
						rev := clock.NextRev()
						doc, _ := json.Marshal(map[string]any{"_id": id, "_rev": rev, "v": st.next})
						pending = append(pending, client.PushItem{ID: id, BaseRev: st.rev, Rev: rev, Doc: doc})
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				out, err := c.Push(ctx, pending)
				cancel()
				if err != nil {
					retries.Add(1)
					time.Sleep(time.Duration(5+rng.IntN(20)) * time.Millisecond)
					continue
				}
				mu.Lock()
				for i, r := range out.Results {
					it := pending[i]
					if !r.OK {
						bad = append(bad, fmt.Sprintf("%s %s: %v", it.ID, it.Rev, r.Error))
						continue
					}
					if prev, dup := seqs[r.Seq]; dup && prev != it.ID+"@"+it.Rev {
						bad = append(bad, fmt.Sprintf("sequence %d given to %s and to %s@%s", r.Seq, prev, it.ID, it.Rev))
					}
					seqs[r.Seq] = it.ID + "@" + it.Rev
					st := local[it.ID]
					local[it.ID] = state{rev: it.Rev, next: st.next + 1}
					acked[it.ID] = local[it.ID]
				}
				mu.Unlock()
				acks.Add(int64(len(out.Results)))
				pending = pending[:0]
			}
		}()
	}

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	for range 6 {
		p := startProc(t, bin, addr, "-data", dir, "-rate", "-1")
		time.Sleep(time.Duration(200+rng.IntN(400)) * time.Millisecond)
		p.kill()
	}
	p := startProc(t, bin, addr, "-data", dir, "-rate", "-1")
	defer p.stop()
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait() // every writer ends with its last push acknowledged

	t.Logf("%d writes acknowledged, %d pushes sent again after a crash", acks.Load(), retries.Load())
	if acks.Load() < 500 || retries.Load() == 0 {
		t.Errorf("too little traffic or no crash hit it (%d acknowledged, %d retries)", acks.Load(), retries.Load())
	}
	for _, b := range bad {
		t.Error(b)
	}
	c := client.New(url, client.Options{Database: "shop"})
	defer c.Close()
	server := map[string]string{}
	var since int64
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := c.Pull(ctx, since, 10000)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range r.Changes {
			server[ch.ID] = ch.Rev
		}
		since = r.Last
		if !r.More {
			break
		}
	}
	if len(server) != len(acked) {
		t.Errorf("server holds %d documents, %d were acknowledged", len(server), len(acked))
	}
	for id, st := range acked {
		if server[id] != st.rev {
			t.Errorf("%s: server has %q, last acknowledged %q", id, server[id], st.rev)
		}
	}
}

func containsID(items []client.PushItem, id string) bool {
	for _, it := range items {
		if it.ID == id {
			return true
		}
	}
	return false
}
