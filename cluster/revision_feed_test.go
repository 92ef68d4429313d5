package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/internal/etcdtest"
)

// etcdLeader returns the index of the member that leads the cluster.
func etcdLeader(t *testing.T, ec *etcdtest.Cluster) int {
	t.Helper()
	cli := etcdClient(t, ec.Endpoints())
	for i, ep := range ec.Endpoints() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := cli.Status(ctx, ep)
		cancel()
		if err == nil && st.Header.MemberId == st.Leader {
			return i
		}
	}
	t.Fatal("no etcd member leads")
	return -1
}

// testLiveFeedLeaderLoss: a subscriber on C keeps getting every write made
// through A while etcd's leader is killed (its watch, which requires a
// leader, is cut; it catches up from its checkpoint and watches again),
// and pulls from a revision checkpoint stay complete.
func testLiveFeedLeaderLoss(t *testing.T, ec *etcdtest.Cluster) {
	srvs := startRevServers(t, ec.Endpoints(), "rev/leader/", "A", "C")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	a := dialDB(t, srvs[0].url(), "shop")
	if _, err := a.Push(ctx, []client.PushItem{{ID: "start", Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	_, ck := pullAll(t, ctx, a, 0, 10)
	var mu sync.Mutex
	got := map[string]bool{}
	var seqs []int64
	// A subscription ends with its connection; the subscriber resumes from
	// the last checkpoint it saw, as clients do.
	go func() {
		since := ck
		for ctx.Err() == nil {
			c := client.New(srvs[1].url(), client.Options{Database: "shop"})
			err := c.Subscribe(ctx, since, func(ch []client.Change, last int64) {
				mu.Lock()
				for _, x := range ch {
					got[x.ID] = true
					seqs = append(seqs, x.Seq)
				}
				since = last
				mu.Unlock()
			})
			if err == nil {
				select {
				case <-c.Done():
				case <-ctx.Done():
				}
			}
			c.Close()
			time.Sleep(50 * time.Millisecond)
		}
	}()
	const n = 120
	push := func(i int) {
		id := fmt.Sprintf("lead/%d", i)
		for {
			out, err := a.Push(ctx, []client.PushItem{{ID: id, Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)}})
			if err == nil && out.Results[0].OK {
				return
			}
			var ce *client.Error
			if err != nil && !errors.Is(err, client.ErrDisconnected) && !(errors.As(err, &ce) && ce.Code == "unavailable") {
				t.Errorf("push %s: %v", id, err)
				return
			}
			if ctx.Err() != nil {
				t.Errorf("push %s: %v", id, ctx.Err())
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	leader := etcdLeader(t, ec)
	for i := range n {
		if i == n/3 {
			ec.Kill(leader)
		}
		push(i)
	}
	if err := ec.Restart(leader); err != nil {
		t.Fatal(err)
	}
	if err := ec.WaitHealthy(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		k := 0
		for i := range n {
			if got[fmt.Sprintf("lead/%d", i)] {
				k++
			}
		}
		mu.Unlock()
		if k == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the live feed on C got %d of %d writes made through A", k, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	for i := 1; i < len(seqs); i++ {
		if seqs[i] < seqs[i-1] {
			t.Errorf("the feed went back: %d after %d", seqs[i], seqs[i-1])
		}
	}
	mu.Unlock()
	// A pull from the checkpoint, through C, has all of them.
	all, _ := pullAll(t, ctx, dialDB(t, srvs[1].url(), "shop"), ck, 50)
	if len(all) != n {
		t.Errorf("pull from the checkpoint through C: %d changes, want %d", len(all), n)
	}
}

// testLiveFromRevision: a subscriber on C from a revision checkpoint gets
// every write made after it through A and B, in order, and none before.
func testLiveFromRevision(t *testing.T, etcd []string) {
	srvs := startRevServers(t, etcd, "rev/live/", "A", "B", "C")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, b := dialDB(t, srvs[0].url(), "shop"), dialDB(t, srvs[1].url(), "shop")
	if _, err := a.Push(ctx, []client.PushItem{{ID: "before", Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	_, ck := pullAll(t, ctx, a, 0, 10)
	c := dialDB(t, srvs[2].url(), "shop")
	var mu sync.Mutex
	var got []client.Change
	if err := c.Subscribe(ctx, ck, func(ch []client.Change, _ int64) {
		mu.Lock()
		got = append(got, ch...)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := range n {
		cl := []*client.Client{a, b}[i%2]
		if _, err := cl.Push(ctx, []client.PushItem{{ID: fmt.Sprintf("live/%d", i), Rev: "_mAAAAAAA-BT", Doc: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		k := len(got)
		mu.Unlock()
		if k >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	seen := map[string]bool{}
	for i, ch := range got {
		if ch.Seq <= ck || i > 0 && ch.Seq < got[i-1].Seq {
			t.Errorf("live change %s at %d (checkpoint %d, previous %d)", ch.ID, ch.Seq, ck, got[max(i-1, 0)].Seq)
		}
		seen[ch.ID] = true
	}
	for i := range n {
		if id := fmt.Sprintf("live/%d", i); !seen[id] {
			t.Errorf("the feed on C missed %s", id)
		}
	}
	if seen["before"] {
		t.Error("the feed brought a change from before its checkpoint")
	}
}
