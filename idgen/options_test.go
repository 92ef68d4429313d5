package idgen_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hilodb/hilodb/idgen"
)

func TestGeneratorNextNumber(t *testing.T) {
	g := idgen.NewGenerator(newMemSource(2))
	ctx := context.Background()
	var got []string
	for range 3 {
		n, tag, err := g.NextNumber(ctx, "things")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d-%s", n, tag))
	}
	if id, _ := g.NextID(ctx, "things"); id != "things/4-A" {
		t.Errorf("NextID after numbers: %q", id)
	}
	if fmt.Sprint(got) != "[1-A 2-A 3-A]" {
		t.Errorf("got %v", got)
	}
}

// TestPrefetch checks that the next range is leased before the current one
// runs out, so callers do not wait on the source.
func TestPrefetch(t *testing.T) {
	src := newMemSource(10)
	h := idgen.NewHiLoWith("orders", src, idgen.Options{Prefetch: 0.3})
	defer h.Close(context.Background())
	ctx := context.Background()
	for i := 1; i <= 7; i++ { // 3 left of 10: the prefetch starts at 8
		h.NextID(ctx)
	}
	if l := src.leases.Load(); l != 1 {
		t.Fatalf("leases before the threshold: %d", l)
	}
	h.NextID(ctx) // 8: starts the background lease
	deadline := time.Now().Add(2 * time.Second)
	for src.leases.Load() != 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if src.leases.Load() != 2 {
		t.Fatal("no background lease")
	}
	// While offline, the prefetched range still serves 10 more ids.
	src.fail.Store(true)
	for i := 9; i <= 20; i++ {
		id, err := h.NextID(ctx)
		if err != nil {
			t.Fatalf("id %d offline: %v", i, err)
		}
		if want := fmt.Sprintf("orders/%d-A", i); id != want {
			t.Fatalf("got %q, want %q", id, want)
		}
	}
	if _, err := h.NextID(ctx); err == nil {
		t.Error("third range out of nowhere")
	}
}

func TestPrefetchConcurrentUnique(t *testing.T) {
	src := newMemSource(64)
	h := idgen.NewHiLoWith("orders", src, idgen.Options{Prefetch: 0.5})
	defer h.Close(context.Background())
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]string, 0, 20_000)
			for range 20_000 {
				id, err := h.NextID(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				local = append(local, id)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range local {
				if seen[id] {
					t.Errorf("duplicate %s", id)
				}
				seen[id] = true
			}
		}()
	}
	wg.Wait()
	if len(seen) != 160_000 {
		t.Errorf("%d ids", len(seen))
	}
}

// memJournal is an in-memory Journal that can fail.
type memJournal struct {
	mu    sync.Mutex
	r     map[string]idgen.Range
	mark  map[string]int64
	saves int
	fail  bool
}

func newMemJournal() *memJournal {
	return &memJournal{r: map[string]idgen.Range{}, mark: map[string]int64{}}
}

func (j *memJournal) SaveRange(tag string, r idgen.Range, mark int64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fail {
		return errors.New("disk full")
	}
	j.saves++
	j.r[tag], j.mark[tag] = r, mark
	return nil
}

func (j *memJournal) LoadRange(tag string) (idgen.Range, int64, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	r, ok := j.r[tag]
	return r, j.mark[tag], ok, nil
}

// TestJournalResumesWithoutReuse: a generator made after a "reload" goes
// on from the journal without a lease, past every number handed out.
func TestJournalResumesWithoutReuse(t *testing.T) {
	src := newMemSource(100)
	j := newMemJournal()
	opts := idgen.Options{Journal: j, JournalStep: 8}
	ctx := context.Background()
	h := idgen.NewHiLoWith("orders", src, opts)
	seen := map[string]bool{}
	for range 10 {
		id, _ := h.NextID(ctx)
		seen[id] = true
	}
	if j.saves != 2 { // marks 8 and 16
		t.Errorf("journal writes: %d, want 2", j.saves)
	}
	// The process dies without Close; a new generator starts offline.
	src.fail.Store(true)
	h2 := idgen.NewHiLoWith("orders", src, opts)
	id, err := h2.NextID(ctx)
	if err != nil {
		t.Fatalf("after reload, offline: %v", err)
	}
	if id != "orders/17-A" {
		t.Errorf("resumed at %q, want orders/17-A (after the journaled mark 16)", id)
	}
	for range 50 {
		id, err := h2.NextID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("reused %q", id)
		}
	}
	if src.leases.Load() != 1 {
		t.Errorf("leases: %d, want 1", src.leases.Load())
	}
}

func TestJournalFailureHandsOutNothing(t *testing.T) {
	j := newMemJournal()
	j.fail = true
	h := idgen.NewHiLoWith("orders", newMemSource(10), idgen.Options{Journal: j})
	if _, err := h.NextID(context.Background()); err == nil {
		t.Fatal("an id without a durable mark")
	}
	j.fail = false
	if id, err := h.NextID(context.Background()); err != nil || id != "orders/2-A" {
		t.Errorf("got %q %v, want orders/2-A (1 is skipped, never reused)", id, err)
	}
}

// TestJournalCloseMarksSpent: numbers returned to the server at Close are
// marked spent first, so a reload leases anew instead of reusing them.
func TestJournalCloseMarksSpent(t *testing.T) {
	src := newMemSource(32)
	j := newMemJournal()
	ctx := context.Background()
	h := idgen.NewHiLoWith("orders", src, idgen.Options{Journal: j})
	for range 5 {
		h.NextID(ctx)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if j.mark["orders"] != 32 {
		t.Errorf("mark after close %d, want 32 (spent)", j.mark["orders"])
	}
	h2 := idgen.NewHiLoWith("orders", src, idgen.Options{Journal: j})
	if id, _ := h2.NextID(ctx); id != "orders/6-A" {
		t.Errorf("after close and reload: %q, want orders/6-A from a new lease", id)
	}
}

func TestCloseReturnsPrefetchedRange(t *testing.T) {
	src := newMemSource(10)
	h := idgen.NewHiLoWith("orders", src, idgen.Options{Prefetch: 0.5})
	ctx := context.Background()
	for range 6 {
		h.NextID(ctx)
	}
	deadline := time.Now().Add(2 * time.Second)
	for src.leases.Load() != 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(src.ret); got != "[orders:20:10 orders:10:6]" {
		t.Errorf("returned %s", got)
	}
	if id, _ := idgen.NewHiLo("orders", src).NextID(ctx); id != "orders/7-A" {
		t.Errorf("next generator: %q", id)
	}
}
