package idgen_test

import (
	"context"
	"errors"
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
		take      int
		maxWaits  int // ErrWouldWait met by NoWait takes after the first number
	}{
		{"ahead, one large range", true, 1 << 20, 2000, 0},
		{"ahead, a small range: its quarter steps", true, 64, 60, 0},
		{"without it, every step waits", false, 1 << 20, 2000, 1 << 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			j := newMemJournal()
			h := idgen.NewHiLoWith("orders", newMemSource(tt.rangeSize), idgen.Options{Journal: j, JournalStep: 8, JournalAhead: tt.ahead})
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
				if rs, _ := j.get("orders"); n > rs.Mark {
					t.Fatalf("number %d handed out above the journal's mark %d", n, rs.Mark)
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

// TestJournalAheadConcurrentUnique: goroutines taking numbers while the
// background journal writes land (and fail now and then) get distinct
// numbers, each covered by the journal when handed out; a generator made
// from the journal afterwards (a crash, no Close) reuses none.
func TestJournalAheadConcurrentUnique(t *testing.T) {
	src := newMemSource(256)
	j := newMemJournal()
	opts := idgen.Options{Journal: j, JournalStep: 4, JournalAhead: true, Prefetch: 0.25}
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
