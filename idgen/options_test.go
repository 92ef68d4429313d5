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

// errDiskFull is what memJournal fails with while told to.
var errDiskFull = errors.New("disk full")

// memJournal is an in-memory Journal that can fail.
type memJournal struct {
	mu    sync.Mutex
	rs    map[string]idgen.Ranges
	saves int
	fail  bool
}

func newMemJournal() *memJournal {
	return &memJournal{rs: map[string]idgen.Ranges{}}
}

var _ idgen.Journal = (*memJournal)(nil)

func (j *memJournal) SaveRanges(tag string, rs idgen.Ranges) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fail {
		return errDiskFull
	}
	j.saves++
	j.rs[tag] = rs
	return nil
}

func (j *memJournal) LoadRanges(tag string) (idgen.Ranges, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	rs, ok := j.rs[tag]
	return rs, ok, nil
}

func (j *memJournal) setFail(fail bool) {
	j.mu.Lock()
	j.fail = fail
	j.mu.Unlock()
}

// get returns what is journaled for tag and how many writes were made.
func (j *memJournal) get(tag string) (idgen.Ranges, int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.rs[tag], j.saves
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
	// Marks 8, then 24: taken in quick succession, the second write covers
	// twice the first step.
	if _, saves := j.get("orders"); saves != 2 {
		t.Errorf("journal writes: %d, want 2", saves)
	}
	// The process dies without Close; a new generator starts offline.
	src.fail.Store(true)
	h2 := idgen.NewHiLoWith("orders", src, opts)
	id, err := h2.NextID(ctx)
	if err != nil {
		t.Fatalf("after reload, offline: %v", err)
	}
	if id != "orders/25-A" {
		t.Errorf("resumed at %q, want orders/25-A (after the journaled mark 24)", id)
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

// TestJournalStepGrowsUnderDemand: numbers taken fast cost a few journal
// writes (each covers twice the last, up to a quarter of the range), not one
// per JournalStep; after a quiet spell the step is JournalStep again.
func TestJournalStepGrowsUnderDemand(t *testing.T) {
	src := newMemSource(1 << 20)
	j := newMemJournal()
	h := idgen.NewHiLoWith("orders", src, idgen.Options{Journal: j, JournalStep: 8})
	ctx := context.Background()
	for range 10000 {
		if _, err := h.NextID(ctx); err != nil {
			t.Fatal(err)
		}
	}
	rs, saves := j.get("orders")
	// 8+16+…+8·2^10 = 16,376 ≥ 10,000: eleven writes.
	if saves > 11 {
		t.Errorf("10,000 numbers cost %d journal writes, want at most 11", saves)
	}
	if rs.Mark < 10000 || rs.Mark > 10000+8<<10 {
		t.Errorf("mark %d after 10,000 numbers", rs.Mark)
	}
	time.Sleep(150 * time.Millisecond) // quiet: the step falls back
	for n := rs.Mark - 10000 + 1; n > 0; n-- {
		if _, err := h.NextID(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.NextID(ctx); err != nil {
		t.Fatal(err)
	}
	after, _ := j.get("orders")
	if after.Mark != rs.Mark+8 {
		t.Errorf("after a quiet spell the mark moved %d, want JournalStep (8)", after.Mark-rs.Mark)
	}
}

// TestJournalStepCappedByRange: however fast numbers go, one journal write
// never covers more than a quarter of a small range.
func TestJournalStepCappedByRange(t *testing.T) {
	src := newMemSource(64)
	j := newMemJournal()
	h := idgen.NewHiLoWith("orders", src, idgen.Options{Journal: j, JournalStep: 8})
	ctx := context.Background()
	for range 40 {
		if _, err := h.NextID(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Marks 8, 24 (a step of 16, the cap), 40.
	if rs, saves := j.get("orders"); rs.Mark != 40 || saves != 3 {
		t.Errorf("mark %d after %d writes, want 40 after 3", rs.Mark, saves)
	}
}

// TestJournalCoversADemand: numbers taken under WithDemand (a bulk write)
// are journaled once per range, each write covering the rest of the batch
// as far as the range goes (and no further than the batch: the demand counts
// down as numbers are taken), and every number is still covered before it
// is handed out.
func TestJournalCoversADemand(t *testing.T) {
	for _, tt := range []struct {
		name          string
		rangeSize     int64
		demand, take  int
		maxSaves      int
		wantMarkAtEnd int64
	}{
		{"one range holds the batch", 1 << 20, 10000, 10000, 1, 10000},
		{"a batch over four ranges", 256, 1000, 1000, 4, 1000},
		{"a demand larger than what is taken", 1 << 20, 500, 100, 1, 500},
	} {
		t.Run(tt.name, func(t *testing.T) {
			j := newMemJournal()
			h := idgen.NewHiLoWith("orders", newMemSource(tt.rangeSize), idgen.Options{Journal: j, JournalStep: 8})
			ctx := idgen.WithDemand(context.Background(), tt.demand)
			for i := 1; i <= tt.take; i++ {
				n, _, err := h.NextNumber(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if rs, _ := j.get("orders"); n > rs.Mark && rs.Current.High >= n {
					t.Fatalf("number %d handed out above the journal's mark %d", n, rs.Mark)
				}
			}
			rs, saves := j.get("orders")
			if saves > tt.maxSaves {
				t.Errorf("%d numbers under a demand of %d cost %d journal writes, want at most %d", tt.take, tt.demand, saves, tt.maxSaves)
			}
			if rs.Mark != tt.wantMarkAtEnd {
				t.Errorf("mark %d, want %d", rs.Mark, tt.wantMarkAtEnd)
			}
		})
	}
}

func TestJournalFailureHandsOutNothing(t *testing.T) {
	j := newMemJournal()
	j.setFail(true)
	h := idgen.NewHiLoWith("orders", newMemSource(10), idgen.Options{Journal: j})
	if _, err := h.NextID(context.Background()); !errors.Is(err, errDiskFull) {
		t.Fatalf("got %v, want the journal's error and no id without a durable mark", err)
	}
	j.setFail(false)
	if id, err := h.NextID(context.Background()); err != nil || id != "orders/2-A" {
		t.Errorf("got %q %v, want orders/2-A (1 is skipped, never reused)", id, err)
	}
}

// TestJournalCloseKeepsRanges: a journaled generator keeps its range at
// Close and returns nothing, so the next session goes on from the journaled
// mark without a lease.
func TestJournalCloseKeepsRanges(t *testing.T) {
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
	// Journaled up to 8 (a step of 8: a quarter of 32), closed at 5, the
	// last number taken: a clean close skips nothing.
	if rs, _ := j.get("orders"); rs.Mark != 5 || rs.Current.High != 32 {
		t.Errorf("journal after close: %+v, want range 1…32 with mark 5", rs)
	}
	if len(src.ret) != 0 {
		t.Errorf("returned %v, want nothing: the journal keeps the range", src.ret)
	}
	h2 := idgen.NewHiLoWith("orders", src, idgen.Options{Journal: j})
	defer h2.Close(ctx)
	if id, _ := h2.NextID(ctx); id != "orders/6-A" {
		t.Errorf("after close and reload: %q, want orders/6-A", id)
	}
	if l := src.leases.Load(); l != 1 {
		t.Errorf("leases: %d, want 1", l)
	}
}

// TestJournalUnusedCloseKeepsRecord: a generator that handed out nothing
// does not overwrite what an earlier session journaled.
func TestJournalUnusedCloseKeepsRecord(t *testing.T) {
	j := newMemJournal()
	r := idgen.Range{Prefix: "orders/", Low: 1, High: 32, ServerTag: "A"}
	j.SaveRanges("orders", idgen.Ranges{Current: r, Mark: 9})
	h := idgen.NewHiLoWith("orders", newMemSource(32), idgen.Options{Journal: j})
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rs, _ := j.get("orders"); rs.Mark != 9 {
		t.Errorf("journal after an unused close: %+v, want mark 9 kept", rs)
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
