package idgen_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hilodb/hilodb/idgen"
)

// gatedSource is a memSource whose leases hang while the gate is shut, so a
// test can tell an id made without a round trip from one that waited.
type gatedSource struct {
	*memSource
	mu   sync.Mutex
	gate chan struct{} // nil: open
}

func (g *gatedSource) shut() {
	g.mu.Lock()
	g.gate = make(chan struct{})
	g.mu.Unlock()
}

func (g *gatedSource) open() {
	g.mu.Lock()
	if g.gate != nil {
		close(g.gate)
		g.gate = nil
	}
	g.mu.Unlock()
}

func (g *gatedSource) NextRange(ctx context.Context, tag string, last idgen.Range) (idgen.Range, error) {
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return idgen.Range{}, ctx.Err()
		}
	}
	return g.memSource.NextRange(ctx, tag, last)
}

// waitFor polls cond for up to two seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitReserve waits until h holds n ranges in reserve.
func waitReserve(t *testing.T, h *idgen.HiLo, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("a reserve of %d", n), func() bool { return len(h.Reserved()) == n })
}

// lows returns the first number of each range.
func lows(rs []idgen.Range) []int64 {
	var out []int64
	for _, r := range rs {
		out = append(out, r.Low)
	}
	return out
}

// TestReserveSwapWithoutLease: when the current range runs out, the next
// reserved range takes its place with no round trip, and the reserve is
// refilled in the background.
func TestReserveSwapWithoutLease(t *testing.T) {
	tests := []struct {
		name string
		opts idgen.Options
		want int // ranges in reserve
	}{
		{"reserve 1", idgen.Options{Reserve: 1}, 1},
		{"reserve 3", idgen.Options{Reserve: 3}, 3},
		{"reserve 2 with prefetch", idgen.Options{Reserve: 2, Prefetch: 0.5}, 2},
		{"reserve 2 with journal", idgen.Options{Reserve: 2, Journal: newMemJournal()}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &gatedSource{memSource: newMemSource(10)}
			h := idgen.NewHiLoWith("orders", src, tt.opts)
			t.Cleanup(func() { src.open(); h.Close(context.Background()) })
			ctx := context.Background()
			if id, err := h.NextID(ctx); err != nil || id != "orders/1-A" {
				t.Fatalf("first id: %q %v", id, err)
			}
			waitReserve(t, h, tt.want)
			if got, want := lows(h.Reserved()), []int64{11, 21, 31}[:tt.want]; !slices.Equal(got, want) {
				t.Fatalf("reserve starts at %v, want %v", got, want)
			}
			leases := src.leases.Load()
			src.shut() // from here a lease hangs
			tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			for i := 2; i <= 11; i++ {
				id, err := h.NextID(tctx)
				if want := fmt.Sprintf("orders/%d-A", i); err != nil || id != want {
					t.Fatalf("got %q %v, want %q with no lease", id, err, want)
				}
			}
			if l := src.leases.Load(); l != leases {
				t.Errorf("leases %d, want %d: the swap leased", l, leases)
			}
			if r, _, _ := h.Current(); r.Low != 11 {
				t.Errorf("current range starts at %d, want 11", r.Low)
			}
			src.open()
			waitReserve(t, h, tt.want) // refilled in the background
			if got := lows(h.Reserved()); got[len(got)-1] != int64(11+10*tt.want) {
				t.Errorf("reserve after the refill starts at %v, want it to end with %d", got, 11+10*tt.want)
			}
		})
	}
}

// TestReserveOffline: offline, ids keep coming from the reserve, exactly
// the numbers leased, then NextID fails with the source's error.
func TestReserveOffline(t *testing.T) {
	tests := []struct {
		name string
		opts idgen.Options
		last int // the last number handed out offline
	}{
		{"reserve 2", idgen.Options{Reserve: 2}, 30},
		{"reserve 2 journaled", idgen.Options{Reserve: 2, Journal: newMemJournal(), JournalStep: 4}, 30},
		{"reserve 2 with prefetch", idgen.Options{Reserve: 2, Prefetch: 0.25}, 30},
		{"reserve 1", idgen.Options{Reserve: 1}, 20},
		{"no reserve", idgen.Options{}, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer idgen.SetReserveRetry(time.Millisecond)()
			src := newMemSource(10)
			h := idgen.NewHiLoWith("orders", src, tt.opts)
			t.Cleanup(func() { h.Close(context.Background()) })
			ctx := context.Background()
			if _, err := h.NextID(ctx); err != nil {
				t.Fatal(err)
			}
			waitReserve(t, h, tt.opts.Reserve)
			src.fail.Store(true)
			for i := 2; i <= tt.last; i++ {
				id, err := h.NextID(ctx)
				if want := fmt.Sprintf("orders/%d-A", i); err != nil || id != want {
					t.Fatalf("offline: got %q %v, want %q", id, err, want)
				}
				time.Sleep(50 * time.Microsecond) // let failed refills retry
			}
			for range 3 {
				id, err := h.NextID(ctx)
				if !errors.Is(err, errOffline) {
					t.Fatalf("reserve spent: got %q %v, want the source's error", id, err)
				}
			}
			if l := src.leases.Load(); l != int64(1+tt.opts.Reserve) {
				t.Errorf("leases %d, want %d", l, 1+tt.opts.Reserve)
			}
			// Back online, the next call leases again.
			src.fail.Store(false)
			if id, err := h.NextID(ctx); err != nil || id != fmt.Sprintf("orders/%d-A", tt.last+1) {
				t.Errorf("back online: %q %v", id, err)
			}
		})
	}
}

// TestReserveRefillAfterFailure: a failed background lease is tried again
// on a later call once the source answers.
func TestReserveRefillAfterFailure(t *testing.T) {
	defer idgen.SetReserveRetry(time.Millisecond)()
	src := newMemSource(10)
	h := idgen.NewHiLoWith("orders", src, idgen.Options{Reserve: 2})
	t.Cleanup(func() { h.Close(context.Background()) })
	ctx := context.Background()
	src.fail.Store(true)
	if _, err := h.NextID(ctx); !errors.Is(err, errOffline) {
		t.Fatalf("offline with nothing leased: %v, want the source's error", err)
	}
	src.fail.Store(false)
	h.NextID(ctx) // leases 1…10; the reserve fills behind it
	waitReserve(t, h, 2)
	src.fail.Store(true)
	for range 10 { // 2…10, then 11 from the reserve; the refill fails
		if _, err := h.NextID(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the failed refill", func() bool { return src.fails.Load() == 2 })
	src.fail.Store(false)
	time.Sleep(2 * time.Millisecond)
	h.NextID(ctx) // a later call starts the refill again
	waitReserve(t, h, 2)
	if got := lows(h.Reserved()); !slices.Equal(got, []int64{21, 31}) {
		t.Errorf("reserve %v, want [21 31]", got)
	}
}

// TestReserveReload: a generator made after a reload, offline, goes on
// from the journaled current range and then its journaled reserve, with no
// lease and no number handed out twice, whether the first one crashed or
// closed.
func TestReserveReload(t *testing.T) {
	tests := []struct {
		name  string
		close bool
		first int // the first number after the reload
	}{
		{"crash", false, 7}, // journal step 2 (a quarter of 10): marks 2, 4, 6
		{"close", true, 6},  // closed at the last number taken, 5
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newMemSource(10)
			j := newMemJournal()
			opts := idgen.Options{Reserve: 2, Journal: j, JournalStep: 8}
			ctx := context.Background()
			h := idgen.NewHiLoWith("orders", src, opts)
			seen := map[string]bool{}
			for range 5 {
				id, err := h.NextID(ctx)
				if err != nil {
					t.Fatal(err)
				}
				seen[id] = true
			}
			waitReserve(t, h, 2)
			rs, _ := j.get("orders")
			if rs.Current.Low != 1 || rs.Mark != 6 || !slices.Equal(lows(rs.Reserve), []int64{11, 21}) {
				t.Fatalf("journal %+v, want 1…10 at mark 6 and the reserve 11, 21", rs)
			}
			if tt.close {
				if err := h.Close(ctx); err != nil {
					t.Fatal(err)
				}
				if len(src.ret) != 0 {
					t.Errorf("a journaled generator returned %v", src.ret)
				}
			}

			src.fail.Store(true) // the reload is offline
			h2 := idgen.NewHiLoWith("orders", src, opts)
			t.Cleanup(func() { h2.Close(ctx) })
			for i := tt.first; i <= 30; i++ {
				id, err := h2.NextID(ctx)
				if want := fmt.Sprintf("orders/%d-A", i); err != nil || id != want {
					t.Fatalf("after the reload: got %q %v, want %q", id, err, want)
				}
				if seen[id] {
					t.Fatalf("reused %q", id)
				}
			}
			if _, err := h2.NextID(ctx); !errors.Is(err, errOffline) {
				t.Errorf("journaled ranges spent: %v, want the source's error", err)
			}
			if l := src.leases.Load(); l != 3 {
				t.Errorf("leases %d, want 3 (none after the reload)", l)
			}
		})
	}
}

// TestReserveConcurrentUnique takes ids from 16 goroutines at once from
// small ranges with a reserve, and finds every one distinct; with a journal,
// a reload then goes on past all of them.
func TestReserveConcurrentUnique(t *testing.T) {
	const goroutines, each = 16, 4_000
	tests := []struct {
		name string
		opts idgen.Options
	}{
		{"reserve 2", idgen.Options{Reserve: 2}},
		{"reserve 3 with prefetch", idgen.Options{Reserve: 3, Prefetch: 0.5}},
		{"reserve 2 journaled", idgen.Options{Reserve: 2, Journal: newMemJournal(), JournalStep: 4}},
		{"prefetch journaled", idgen.Options{Prefetch: 0.25, Journal: newMemJournal()}},
	}
	re := regexp.MustCompile(`^orders/[1-9][0-9]*-A$`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newMemSource(32)
			ctx := context.Background()
			h := idgen.NewHiLoWith("orders", src, tt.opts)
			ids := make([][]string, goroutines)
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					out := make([]string, 0, each)
					for range each {
						id, err := h.NextID(ctx)
						if err != nil {
							t.Error(err)
							return
						}
						out = append(out, id)
					}
					ids[g] = out
				})
			}
			wg.Wait()
			seen := make(map[string]bool, goroutines*each)
			for _, out := range ids {
				for _, id := range out {
					if !re.MatchString(id) {
						t.Fatalf("malformed id %q", id)
					}
					if seen[id] {
						t.Fatalf("duplicate id %q", id)
					}
					seen[id] = true
				}
			}
			if len(seen) != goroutines*each {
				t.Fatalf("got %d ids, want %d", len(seen), goroutines*each)
			}
			if err := h.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if tt.opts.Journal == nil {
				return
			}
			h2 := idgen.NewHiLoWith("orders", src, tt.opts)
			defer h2.Close(ctx)
			for range 200 {
				id, err := h2.NextID(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if seen[id] {
					t.Fatalf("reused %q after the reload", id)
				}
				seen[id] = true
			}
		})
	}
}

// TestJournalFailureStopsUnjournaledRange: no number is handed out from a
// range until a journal write covering it has succeeded, and a failed
// write leaves the journal's earlier record in place.
func TestJournalFailureStopsUnjournaledRange(t *testing.T) {
	tests := []struct {
		name     string
		before   int   // ids taken while the journal works
		wantFail int64 // the number whose write fails, skipped afterwards
	}{
		{"first range", 0, 1},
		{"reserved range swapped in", 4, 5},
		{"within the current range", 2, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newMemSource(4) // a journal step of 1: every number is written
			j := newMemJournal()
			h := idgen.NewHiLoWith("orders", src, idgen.Options{Reserve: 1, Journal: j})
			t.Cleanup(func() { h.Close(context.Background()) })
			ctx := context.Background()
			for range tt.before {
				if _, err := h.NextID(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if tt.before > 0 {
				waitReserve(t, h, 1)
			}
			before, _ := j.get("orders")
			j.setFail(true)
			for range 2 {
				if id, err := h.NextID(ctx); !errors.Is(err, errDiskFull) {
					t.Fatalf("journal failing: got %q %v, want the journal's error", id, err)
				}
			}
			if after, _ := j.get("orders"); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("journal changed by failed writes: %+v, was %+v", after, before)
			}
			j.setFail(false)
			// The numbers whose writes failed are skipped, never reused.
			id, err := h.NextID(ctx)
			if want := fmt.Sprintf("orders/%d-A", tt.wantFail+2); err != nil || id != want {
				t.Fatalf("journal back: got %q %v, want %q", id, err, want)
			}
			if rs, _ := j.get("orders"); rs.Mark < tt.wantFail+2 {
				t.Errorf("journal mark %d, want at least %d", rs.Mark, tt.wantFail+2)
			}
		})
	}
}

// TestCloseReturnsReserveNewestFirst: without a journal, Close returns the
// reserved ranges newest first, then the rest of the current range, so the
// server, which takes back only the range it leased last, takes them all.
func TestCloseReturnsReserveNewestFirst(t *testing.T) {
	src := newMemSource(10)
	h := idgen.NewHiLoWith("orders", src, idgen.Options{Reserve: 2})
	ctx := context.Background()
	for range 3 {
		h.NextID(ctx)
	}
	waitReserve(t, h, 2)
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(src.ret); got != "[orders:30:20 orders:20:10 orders:10:3]" {
		t.Errorf("returned %s", got)
	}
	if id, _ := idgen.NewHiLo("orders", src).NextID(ctx); id != "orders/4-A" {
		t.Errorf("next generator: %q, want orders/4-A", id)
	}
}

func ExampleJournal() {
	j := newMemJournal() // in a browser: IndexedDB, through the wasm build
	src := newMemSource(32)
	ctx := context.Background()
	h := idgen.NewHiLoWith("orders", src, idgen.Options{Journal: j, Reserve: 1})
	id, _ := h.NextID(ctx)
	fmt.Println(id)
	h.Close(ctx) // the ranges stay in the journal for the next session

	// After a reload, offline: the journal serves the next ids, with no
	// lease, right after the last number handed out before the close (after
	// a crash, past the journaled mark).
	src.fail.Store(true)
	h = idgen.NewHiLoWith("orders", src, idgen.Options{Journal: j, Reserve: 1})
	defer h.Close(ctx)
	id, _ = h.NextID(ctx)
	fmt.Println(id)
	// Output:
	// orders/1-A
	// orders/2-A
}
