package idgen_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/hilodb/hilodb/idgen"
)

// TestJournalAhead: with JournalAhead, numbers taken one at a time, with
// the background write given time to land between them (as between the
// puts of a page), never meet the journal's mark: a NoWait caller gets
// every number without ErrWouldWait after the first write, while every
// number handed out is at or below the journaled mark.
func TestJournalAhead(t *testing.T) {
	for _, tt := range []struct {
		name      string
		ahead     bool
		rangeSize int64
		prefetch  float64
		reserve   int
		take      int
		maxWaits  int // ErrWouldWait met by NoWait takes after the first number
	}{
		{"ahead, one large range", true, 1 << 20, 0, 0, 2000, 0},
		{"ahead, a small range: its quarter steps", true, 64, 0, 0, 60, 0},
		// The range after the current one is journaled as current before
		// the swap, so a swap waits for nothing either.
		{"ahead, 31 ranges, prefetched", true, 64, 0.25, 0, 2000, 0},
		{"ahead, 31 ranges, a reserve of 2", true, 64, 0, 2, 2000, 0},
		{"without it, every step waits", false, 1 << 20, 0, 0, 2000, 1 << 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			j := newMemJournal()
			h := idgen.NewHiLoWith("orders", newMemSource(tt.rangeSize), idgen.Options{Journal: j, JournalStep: 8, JournalAhead: tt.ahead, Prefetch: tt.prefetch, Reserve: tt.reserve})
			defer h.Close(context.Background())
			if _, err := h.NextID(context.Background()); err != nil {
				t.Fatal(err)
			}
			quick := idgen.NoWait(context.Background())
			waits := 0
			for i := 1; i < tt.take; i++ {
				h.WaitBackground()
				n, _, err := h.NextNumber(quick)
				if errors.Is(err, idgen.ErrWouldWait) {
					waits++
					if n, _, err = h.NextNumber(context.Background()); err != nil {
						t.Fatal(err)
					}
				} else if err != nil {
					t.Fatal(err)
				}
				if rs, _ := j.get("orders"); !covered(rs, n) {
					t.Fatalf("number %d handed out that the journal does not cover: %+v", n, rs)
				}
			}
			if tt.ahead && waits > tt.maxWaits {
				t.Errorf("%d NoWait takes met ErrWouldWait, want at most %d", waits, tt.maxWaits)
			}
			if !tt.ahead && waits == 0 {
				t.Error("without JournalAhead no take waited: the test does not reach the mark")
			}
		})
	}
}

// covered reports whether a reload from rs would never hand out n again:
// n is in the current range at or below the mark, or in no range rs holds
// (a range the journal no longer names is never resumed).
func covered(rs idgen.Ranges, n int64) bool {
	if n >= rs.Current.Low && n <= rs.Current.High {
		return n <= rs.Mark
	}
	for _, r := range rs.Reserve {
		if n >= r.Low && n <= r.High {
			return false
		}
	}
	return true
}

// TestJournalAheadConcurrentUnique: goroutines taking numbers while the
// background journal writes land (and fail now and then) get distinct
// numbers, each covered by the journal when handed out; a generator made
// from the journal afterwards (a crash, no Close) reuses none.
func TestJournalAheadConcurrentUnique(t *testing.T) {
	for _, opts := range []idgen.Options{
		{JournalStep: 4, JournalAhead: true, Prefetch: 0.25},
		{JournalStep: 4, JournalAhead: true, Reserve: 2},
	} {
		t.Run(fmt.Sprintf("prefetch %v reserve %d", opts.Prefetch, opts.Reserve), func(t *testing.T) { testJournalAheadConcurrentUnique(t, opts) })
	}
}

func testJournalAheadConcurrentUnique(t *testing.T, opts idgen.Options) {
	src := newMemSource(64)
	j := newMemJournal()
	opts.Journal = j
	h := idgen.NewHiLoWith("orders", src, opts)
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
		wg   sync.WaitGroup
	)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 400 {
				if g == 0 && i%50 == 25 {
					j.setFail(i%100 == 25) // a failed background write is retried in the foreground
				}
				ctx := context.Background()
				if i%2 == 0 {
					ctx = idgen.NoWait(ctx)
				}
				id, err := h.NextID(ctx)
				if errors.Is(err, idgen.ErrWouldWait) || errors.Is(err, errDiskFull) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[id] {
					t.Errorf("%s handed out twice", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	j.setFail(false)
	h.WaitBackground()
	// No Close: the process died. The next generator starts from the journal.
	h2 := idgen.NewHiLoWith("orders", src, opts)
	defer h2.Close(context.Background())
	for range 300 {
		id, err := h2.NextID(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("after the crash, %s handed out again", id)
		}
	}
}

// heldLeaseSource is a memSource whose leases after the first free ones
// each wait for a token on release.
type heldLeaseSource struct {
	*memSource
	mu      sync.Mutex
	leases  int
	free    int
	release chan struct{}
}

func (s *heldLeaseSource) NextRange(ctx context.Context, tag string, last idgen.Range) (idgen.Range, error) {
	s.mu.Lock()
	s.leases++
	held := s.leases > s.free
	s.mu.Unlock()
	if held {
		<-s.release
	}
	return s.memSource.NextRange(ctx, tag, last)
}

// TestJournalSuccessorThenReserve: the journal names the range after the
// current one as current before the swap (JournalAhead); a range leased
// for the reserve after that must not name the current one again, or a
// reload would hand out the successor's numbers a second time.
func TestJournalSuccessorThenReserve(t *testing.T) {
	src := &heldLeaseSource{memSource: newMemSource(16), free: 2, release: make(chan struct{}, 8)}
	j := newMemJournal()
	opts := idgen.Options{Journal: j, JournalStep: 4, JournalAhead: true, Reserve: 2}
	h := idgen.NewHiLoWith("orders", src, opts)
	ctx := context.Background()
	take := func() int64 {
		t.Helper()
		n, _, err := h.NextNumber(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitJournal := func(what string, ok func(idgen.Ranges) bool) {
		t.Helper()
		waitFor(t, "the journal "+what, func() bool { rs, _ := j.get("orders"); return ok(rs) })
	}
	// Range 1…16 in use, 17…32 reserved; the lease of 33…48 waits.
	take()
	waitJournal("holds the reserve 17…32", func(rs idgen.Ranges) bool { return len(rs.Reserve) == 1 })
	var handed []int64
	for len(handed) < 14 {
		handed = append(handed, take())
	}
	waitJournal("names 17…32 as current", func(rs idgen.Ranges) bool { return rs.Current.Low == 17 })
	// Now the reserve lease lands and is journaled; the next one waits.
	src.release <- struct{}{}
	waitJournal("holds 33…48", func(rs idgen.Ranges) bool {
		for _, r := range rs.Reserve {
			if r.Low == 33 {
				return true
			}
		}
		return rs.Current.Low == 33
	})
	// 16 spends the first range; 17, 18 come from the successor without a
	// journal write of their own.
	for range 3 {
		handed = append(handed, take())
	}
	// A crash, with the lease that topped the reserve up still under way:
	// the next generator starts from the journal as it is now.
	rs, _ := j.get("orders")
	j2 := newMemJournal()
	if err := j2.SaveRanges("orders", rs); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for range 8 {
			src.release <- struct{}{}
		}
		h.Close(ctx)
	}()
	src2 := newMemSource(16)
	src2.max["orders"] = 1000
	h2 := idgen.NewHiLoWith("orders", src2, idgen.Options{Journal: j2, JournalStep: 4})
	defer h2.Close(ctx)
	for range 40 {
		n, _, err := h2.NextNumber(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range handed {
			if n == m {
				t.Fatalf("after the crash, %d handed out again (journal %+v)", n, rs)
			}
		}
	}
}
