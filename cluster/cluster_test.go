package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core/revision"
	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/internal/servertest"
)

// ledger collects what the clients were acknowledged.
type ledger struct {
	mu     sync.Mutex
	spans  map[string][][2]int64     // HiLo tag → [low, high] used
	idents map[string]map[int64]int  // identity → value → times
	docs   map[string]string         // id → rev acknowledged last
	maybe  map[string][]string       // id → revs sent without a reply (may be applied)
	bySrv  map[string]map[string]int // HiLo tag → server tag of the lease → ranges
	errs   map[string]int
	acks   atomic.Int64
	lost   atomic.Int64
}

func newLedger() *ledger {
	return &ledger{spans: map[string][][2]int64{}, idents: map[string]map[int64]int{}, docs: map[string]string{}, maybe: map[string][]string{},
		bySrv: map[string]map[string]int{}, errs: map[string]int{}}
}

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

// worker is one client of the cluster, dialing servers[first] first and
// the others when it cannot.
type worker struct {
	c    *client.Client
	rng  *rand.Rand
	last map[string]idgen.Range
	revs map[string]string // id → rev acknowledged
	n    int
	name string
	// clock makes the revisions: a push takes only hilodb revisions,
	// each past the document's stored one.
	clock *revision.Clock
}

func (w *worker) step(ctx context.Context, led *ledger) error {
	switch k := w.rng.IntN(10); {
	case k < 3:
		tag := []string{"orders", "users"}[w.rng.IntN(2)]
		r, err := w.c.NextRange(ctx, tag, w.last[tag])
		if err != nil {
			return err
		}
		w.last[tag] = r
		used := r.High
		if w.rng.IntN(3) == 0 {
			used = r.Low - 1 + w.rng.Int64N(r.High-r.Low+1)
			defer w.c.ReturnRange(ctx, tag, r.High, used)
		}
		led.mu.Lock()
		if used >= r.Low {
			led.spans[tag] = append(led.spans[tag], [2]int64{r.Low, used})
		}
		if led.bySrv[tag] == nil {
			led.bySrv[tag] = map[string]int{}
		}
		led.bySrv[tag][r.ServerTag]++
		led.mu.Unlock()
	case k < 6:
		name := []string{"companies", "invoices"}[w.rng.IntN(2)]
		v, err := w.c.NextIdentity(ctx, name)
		if err != nil {
			return err
		}
		led.mu.Lock()
		if led.idents[name] == nil {
			led.idents[name] = map[int64]int{}
		}
		led.idents[name][v]++
		led.mu.Unlock()
	default:
		// A new document or an update of one this client wrote, with its
		// last acknowledged rev as the precondition.
		var id, base string
		if len(w.revs) > 0 && w.rng.IntN(2) == 0 {
			for k, v := range w.revs {
				id, base = k, v
				break
			}
		} else {
			w.n++
			id = fmt.Sprintf("notes/%s-%d", w.name, w.n)
		}
		rev := w.clock.NextRev()
		doc, _ := json.Marshal(map[string]any{"_id": id, "_rev": rev, "by": w.name})
		out, err := w.c.Push(ctx, []client.PushItem{{ID: id, BaseRev: base, Rev: rev, Doc: doc}})
		if err != nil {
			// Unknown outcome: the server may have it. The next write of
			// this id would not know its base, so leave the id alone.
			delete(w.revs, id)
			led.mu.Lock()
			led.maybe[id] = append(led.maybe[id], rev)
			led.mu.Unlock()
			return err
		}
		if res := out.Results[0]; !res.OK {
			return fmt.Errorf("push %s: %v", id, res.Error)
		}
		w.revs[id] = rev
		led.mu.Lock()
		led.docs[id] = rev
		led.mu.Unlock()
	}
	return nil
}

// TestCluster runs three sync servers (A, B, C) over a three-member etcd
// cluster, all real processes, and checks the cluster's promises one after
// another on the same deployment.
func TestCluster(t *testing.T) {
	bin := servertest.BuildServer(t)
	ec := startEtcd(t)
	var nodes []*node
	for _, tag := range []string{"A", "B", "C"} {
		n := newNode(t, bin, tag, ec.Endpoints())
		n.start()
		nodes = append(nodes, n)
	}
	a, b, c := nodes[0], nodes[1], nodes[2]
	ctx := context.Background()

	t.Run("TagsAreExclusive", func(t *testing.T) {
		// A second server asking for a live server's tag does not start.
		dup := newNode(t, bin, "B", ec.Endpoints())
		dup.launch()
		if !dup.exited(30 * time.Second) {
			t.Fatalf("a second server with tag B is running: %s", dup.p.Out)
		}
		// No client is given a server's tag, nor may claim one.
		for _, srv := range nodes {
			cl, err := client.Dial(ctx, srv.url(), client.Options{Database: "tags"})
			if err != nil {
				t.Fatal(err)
			}
			if tag := cl.Node(); tag == "A" || tag == "B" || tag == "C" {
				t.Errorf("client given server tag %s", tag)
			}
			cl.Close()
		}
		_, err := client.Dial(ctx, a.url(), client.Options{Database: "tags", Node: "C"})
		var e *client.Error
		if !errors.As(err, &e) || e.Code != "bad_request" {
			t.Errorf("client claiming server tag C: %v, want bad_request", err)
		}
		// A clean stop gives the tag back at once: A restarts without
		// waiting out a lease, and answers as A.
		a.stop()
		start := time.Now()
		a.start()
		if d := time.Since(start); d > 4*time.Second {
			t.Errorf("A took %v to take its tag back after a clean stop", d)
		}
		cl, err := client.Dial(ctx, a.url(), client.Options{Database: "tags"})
		if err != nil || cl.ServerTag() != "A" {
			t.Fatalf("restarted A: %v (tag %s)", err, cl.ServerTag())
		}
		cl.Close()
	})

	t.Run("TagsChosenWhenNotGiven", func(t *testing.T) {
		// Servers started without -node-tag take free tags of their own,
		// keep them in their data directories, and take the same tag back
		// after a crash.
		endpoints := strings.Join(ec.Endpoints(), ",")
		type started struct {
			addr, dir string
			p         *servertest.Proc
		}
		start := func(addr, dir string) started {
			p := servertest.StartProc(t, bin, addr, 40*time.Second, "-data", dir, "-etcd", endpoints, "-rate", "-1")
			return started{addr, dir, p}
		}
		tagOf := func(s started) string {
			t.Helper()
			cl, err := client.Dial(ctx, "ws://"+s.addr+"/v1/sync", client.Options{Database: "tags"})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			return cl.ServerTag()
		}
		d := start(servertest.FreeAddr(t), t.TempDir())
		e := start(servertest.FreeAddr(t), t.TempDir())
		td, te := tagOf(d), tagOf(e)
		for _, tag := range []string{td, te} {
			if len(tag) != 1 || tag < "A" || tag > "Z" || tag == "A" || tag == "B" || tag == "C" {
				t.Errorf("chosen tag %q: want a free letter, not A, B or C", tag)
			}
		}
		if td == te {
			t.Fatalf("two servers chose tag %s", td)
		}
		d.p.Kill()
		d = start(d.addr, d.dir) // waits out the dead server's lease
		if got := tagOf(d); got != td {
			t.Errorf("after a crash the server took tag %s, want its own %s back", got, td)
		}
		d.p.Stop(t)
		e.p.Stop(t)
	})

	t.Run("IdentitiesSequentialAcrossNodes", func(t *testing.T) {
		var cls []*client.Client
		for _, srv := range nodes {
			cl, err := client.Dial(ctx, srv.url(), client.Options{Database: "seq"})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			cls = append(cls, cl)
		}
		for i := int64(1); i <= 30; i++ {
			v, err := cls[i%3].NextIdentity(ctx, "companies")
			if err != nil {
				t.Fatal(err)
			}
			if v != i {
				t.Fatalf("identity %d from server %s, want %d", v, nodes[i%3].tag, i)
			}
		}
		// Ranges carry the tag of the server that leased them and follow
		// each other whichever server leases.
		var high int64
		for i := range 9 {
			r, err := cls[i%3].NextRange(ctx, "orders", idgen.Range{})
			if err != nil {
				t.Fatal(err)
			}
			if r.ServerTag != nodes[i%3].tag {
				t.Errorf("range from %s carries tag %s", nodes[i%3].tag, r.ServerTag)
			}
			if r.Low != high+1 {
				t.Errorf("range %d-%d from %s, want it to start at %d", r.Low, r.High, nodes[i%3].tag, high+1)
			}
			high = r.High
		}
	})

	t.Run("PushToAPullFromC", func(t *testing.T) {
		ca, err := client.Dial(ctx, a.url(), client.Options{Database: "repl"})
		if err != nil {
			t.Fatal(err)
		}
		defer ca.Close()
		cc, err := client.Dial(ctx, c.url(), client.Options{Database: "repl"})
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		live := make(chan client.Change, 1000)
		if err := cc.Subscribe(ctx, 0, func(ch []client.Change, _ int64) {
			for _, x := range ch {
				select {
				case live <- x:
				default: // never hold up the client's reader
				}
			}
		}); err != nil {
			t.Fatal(err)
		}
		doc := []byte(`{"_id":"notes/1","_rev":"_mAAAAAAA-BT","text":"hello"}`)
		out, err := ca.Push(ctx, []client.PushItem{{ID: "notes/1", Rev: "_mAAAAAAA-BT", Doc: doc}})
		if err != nil || !out.Results[0].OK {
			t.Fatalf("push to A: %v %+v", err, out)
		}
		pulled, err := cc.Pull(ctx, 0, 100)
		if err != nil || len(pulled.Changes) != 1 || pulled.Changes[0].Rev != "_mAAAAAAA-BT" {
			t.Fatalf("pull from C: %v %+v", err, pulled)
		}
		select {
		case x := <-live:
			if x.ID != "notes/1" || x.Rev != "_mAAAAAAA-BT" {
				t.Errorf("live feed on C: %+v", x)
			}
		case <-time.After(10 * time.Second):
			t.Error("C's live feed did not bring A's push")
		}
		// A precondition holds across servers: B refuses a write on a stale rev.
		cb, err := client.Dial(ctx, b.url(), client.Options{Database: "repl"})
		if err != nil {
			t.Fatal(err)
		}
		defer cb.Close()
		out, err = cb.Push(ctx, []client.PushItem{{ID: "notes/1", BaseRev: "_mAAAAAAA-_T", Rev: "_mAAAAAAA-CT", Doc: []byte(`{"text":"stale"}`)}})
		if err != nil || out.Results[0].OK || out.Results[0].Error.Code != "conflict" {
			t.Errorf("stale write through B: %v %+v", err, out.Results)
		}
		// Writes racing on one document through three servers: exactly one
		// wins each round, the others see a conflict.
		cls := []*client.Client{ca, cb, cc}
		base := ""
		// Each round's revisions are past the last round's.
		t0 := uint64(time.Now().Add(-time.Hour).UnixMilli()) << 20
		raceRev := func(round, i int) string { return revision.Encode(t0+uint64(round*4+i), "R") }
		for round := range 10 {
			var wg sync.WaitGroup
			results := make([]client.PushResult, 3)
			for i, cl := range cls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rev := raceRev(round, i)
					out, err := cl.Push(ctx, []client.PushItem{{ID: "notes/race", BaseRev: base, Rev: rev, Doc: []byte(`{"n":1}`)}})
					if err != nil {
						t.Error(err)
						return
					}
					results[i] = out.Results[0]
				}()
			}
			wg.Wait()
			won := 0
			for i, res := range results {
				switch {
				case res.OK:
					won++
					base = raceRev(round, i)
				case res.Error == nil || res.Error.Code != "conflict":
					t.Errorf("round %d: %+v", round, res)
				}
			}
			if won != 1 {
				t.Fatalf("round %d: %d writes on base %q accepted, want 1: %+v", round, won, base, results)
			}
		}
		// A client switches servers mid-sync and resumes from its checkpoint.
		out, err = ca.Push(ctx, []client.PushItem{{ID: "notes/2", Rev: "_mAAAAAAA-BT", Doc: []byte(`{"n":2}`)}})
		if err != nil || !out.Results[0].OK {
			t.Fatal(err)
		}
		// Since the checkpoint: notes/1 again, carrying the stale write B
		// refused (noted on the version that won, for the winner to hear
		// of), then the race's last version, then notes/2.
		more, err := cb.Pull(ctx, pulled.Last, 100)
		if err != nil || len(more.Changes) != 3 || more.Changes[0].ID != "notes/1" || more.Changes[1].ID != "notes/race" || more.Changes[2].ID != "notes/2" || more.Changes[0].Seq <= pulled.Last {
			t.Fatalf("pull from B after C's checkpoint %d: %v %+v", pulled.Last, err, more)
		}
		if lost := more.Changes[0].Lost; len(lost) != 1 || lost[0].Rev != "_mAAAAAAA-CT" || more.Changes[0].Rev != "_mAAAAAAA-BT" {
			t.Errorf("notes/1 after the refused stale write: %+v", more.Changes[0])
		}
	})

	t.Run("HTTPDoorsShareTheState", func(t *testing.T) {
		do := func(method, url, body string) (int, string) {
			req, _ := http.NewRequest(method, url, strings.NewReader(body))
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			return res.StatusCode, string(b)
		}
		if code, body := do("PUT", "http://"+a.addr+"/databases/doors/docs?id=users/1", `{"name":"Ann"}`); code != 201 {
			t.Fatalf("RavenDB PUT through A: %d %s", code, body)
		}
		if code, body := do("GET", "http://"+c.addr+"/databases/doors/docs?id=users/1", ""); code != 200 || !strings.Contains(body, `"Ann"`) {
			t.Errorf("RavenDB GET through C: %d %s", code, body)
		}
		// A backup through any server holds the cluster's keys.
		if code, body := do("GET", "http://"+b.addr+"/admin/backup", ""); code != 200 || !strings.Contains(body, "rdoc/doors/users/1") {
			t.Errorf("backup through B: %d, %d bytes", code, len(body))
		}
		for i, srv := range []*node{a, b, c} {
			code, body := do("POST", "http://"+srv.addr+"/databases/doors/identity/next?name=companies", "")
			if want := fmt.Sprintf(`"NewIdentityValue":%d`, i+1); code != 200 || !strings.Contains(body, want) {
				t.Errorf("identity through %s: %d %s, want %s", srv.tag, code, body, want)
			}
		}
	})

	t.Run("FailoverFromAServerThatStopsAnswering", func(t *testing.T) {
		cl := client.New(c.url(), client.Options{Database: "stall", URLs: []string{a.url()}, RequestTimeout: time.Second})
		defer cl.Close()
		first, err := cl.NextIdentity(ctx, "stall")
		if err != nil || cl.ServerTag() != "C" {
			t.Fatalf("identity from C: %d %v (server %s)", first, err, cl.ServerTag())
		}
		c.p.Cmd.Process.Signal(syscall.SIGSTOP) // C hangs: its socket stays open
		defer c.p.Cmd.Process.Signal(syscall.SIGCONT)
		var got int64
		for i := 0; i < 5 && got == 0; i++ {
			v, err := cl.NextIdentity(ctx, "stall")
			if err != nil {
				if !errors.Is(err, client.ErrDisconnected) {
					t.Fatalf("call to a stalled server: %v", err)
				}
				continue
			}
			got = v
		}
		if got == 0 || cl.ServerTag() != "A" {
			t.Fatalf("no identity through A after C stalled (got %d from %s)", got, cl.ServerTag())
		}
		// A call cut by the stall may have taken a value; none repeats.
		if got <= first {
			t.Errorf("identity %d through A after %d through C", got, first)
		}
		c.p.Cmd.Process.Signal(syscall.SIGCONT)
	})

	t.Run("FailuresUnderLoad", func(t *testing.T) {
		led := newLedger()
		urls := []string{a.url(), b.url(), c.url()}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		const clients = 24
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				first := i % 3
				var others []string
				for j := 1; j < 3; j++ {
					others = append(others, urls[(first+j)%3])
				}
				cl := client.New(urls[first], client.Options{Database: "load", URLs: others, RequestTimeout: 3 * time.Second})
				defer cl.Close()
				w := &worker{c: cl, rng: rand.New(rand.NewPCG(uint64(i), 3)), last: map[string]idgen.Range{}, revs: map[string]string{}, name: fmt.Sprintf("w%d", i), clock: revision.NewClock(fmt.Sprintf("W%d", i))}
				for {
					select {
					case <-stop:
						return
					default:
					}
					sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					err := w.step(sctx, led)
					cancel()
					if err != nil {
						led.failed(err)
						time.Sleep(20 * time.Millisecond)
					} else {
						led.acks.Add(1)
					}
				}
			}()
		}
		// phase keeps the load on for d and checks that the cluster goes on:
		// at least 20 replies acknowledged, within d or, where a failure
		// stalls every client at once (an etcd election under load on two
		// cores, each call waiting out its timeout), within recoverWithin.
		const recoverWithin = 20 * time.Second
		phase := func(what string, d time.Duration) {
			before := led.acks.Load()
			start := time.Now()
			time.Sleep(d)
			for led.acks.Load()-before < 20 && time.Since(start) < recoverWithin {
				time.Sleep(50 * time.Millisecond)
			}
			got := led.acks.Load() - before
			t.Logf("%s: %d acknowledged in %v", what, got, time.Since(start).Round(time.Millisecond))
			if got < 20 {
				t.Errorf("%s: only %d acknowledged replies in %v; the cluster did not go on", what, got, recoverWithin)
			}
		}
		phase("all up", 3*time.Second)
		b.kill() // SIGKILL mid-load: B's clients move to A and C
		phase("server B killed", 4*time.Second)
		ec.Kill(0) // an etcd member dies: two of three keep the quorum
		phase("etcd member 0 killed", 4*time.Second)
		if err := ec.Restart(0); err != nil {
			t.Fatal(err)
		}
		b.start() // B takes its tag back once its old lease is gone
		phase("B and etcd member 0 back", 3*time.Second)
		close(stop)
		wg.Wait()
		t.Logf("%d acknowledged, %d calls cut by failures", led.acks.Load(), led.lost.Load())
		for e, n := range led.errs {
			t.Errorf("unexpected error (%d times): %s", n, e)
		}

		// The whole cluster restarted: every acknowledged write and number
		// is still there, and nothing is handed out again.
		for _, n := range nodes {
			n.kill()
		}
		ec.Stop()
		for i := range ec.Members {
			if err := ec.Restart(i); err != nil {
				t.Fatal(err)
			}
		}
		if err := ec.WaitHealthy(30 * time.Second); err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			n.start()
		}
		check := client.New(c.url(), client.Options{Database: "load"})
		defer check.Close()
		have := map[string]string{}
		var since int64
		for {
			p, err := check.Pull(ctx, since, 1000)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range p.Changes {
				have[x.ID] = x.Rev
			}
			since = p.Last
			if !p.More {
				break
			}
		}
		if len(led.docs) < 20 {
			t.Errorf("only %d documents acknowledged", len(led.docs))
		}
		for id, rev := range led.docs {
			if got, ok := have[id]; !ok {
				t.Errorf("acknowledged document %s lost", id)
			} else if got != rev && !slices.Contains(led.maybe[id], got) {
				t.Errorf("document %s at %q, acknowledged %q (unanswered: %v)", id, got, rev, led.maybe[id])
			}
		}
		for tag, spans := range led.spans {
			sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
			for i := 1; i < len(spans); i++ {
				if spans[i][0] <= spans[i-1][1] {
					t.Errorf("HiLo %s: numbers %v and %v overlap", tag, spans[i-1], spans[i])
				}
			}
			r, err := check.NextRange(ctx, tag, idgen.Range{})
			if err != nil {
				t.Fatal(err)
			}
			if top := spans[len(spans)-1][1]; r.Low <= top {
				t.Errorf("HiLo %s after the restart starts at %d, at or below %d handed out before", tag, r.Low, top)
			}
			t.Logf("HiLo %s: %d ranges used, leased through %v", tag, len(spans), led.bySrv[tag])
			if len(led.bySrv[tag]) < 2 {
				t.Errorf("HiLo %s: ranges leased through %v only; want several servers", tag, led.bySrv[tag])
			}
		}
		for name, vs := range led.idents {
			var top int64
			for v, n := range vs {
				if n > 1 {
					t.Errorf("identity %s value %d handed out %d times", name, v, n)
				}
				top = max(top, v)
			}
			v, err := check.NextIdentity(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if v <= top {
				t.Errorf("identity %s after the restart is %d, at or below %d handed out before", name, v, top)
			}
			t.Logf("identity %s: %d values, up to %d", name, len(vs), top)
		}
	})
}
