package idgen_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hilodb/hilodb/idgen"
)

// TestDemandPastRangeJournalsOnce: a bulk write whose demand goes past the
// current range journals the next range once, marked for the rest of the
// demand, instead of the current range to its end and then the next.
func TestDemandPastRangeJournalsOnce(t *testing.T) {
	ctx := context.Background()
	j := newMemJournal()
	src := &sizedSource{memSource: newMemSource(32)}
	h := idgen.NewHiLoWith("orders", src, idgen.Options{Journal: j, JournalStep: 8})
	defer h.Close(ctx)
	if n, _, err := h.NextNumber(ctx); err != nil || n != 1 {
		t.Fatalf("first number: %d, %v", n, err)
	}
	rs, before := j.get("orders")
	if rs.Mark != 8 {
		t.Fatalf("mark %d after the first number, want 8", rs.Mark)
	}
	const batch = 10000
	bulk := idgen.WithDemand(ctx, batch)
	for i := range batch {
		n, _, err := h.NextNumber(bulk)
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(i + 2); n != want {
			t.Fatalf("number %d, want %d", n, want)
		}
		if rs, _ := j.get("orders"); n > rs.Mark {
			t.Fatalf("number %d handed out past the journal's mark %d", n, rs.Mark)
		}
	}
	rs, after := j.get("orders")
	if after-before != 1 {
		t.Errorf("%d journal writes for the batch, want 1", after-before)
	}
	if rs.Current.Low != 33 || rs.Mark != batch+1 {
		t.Errorf("journal %+v, want the range from 33 current, marked at %d", rs, batch+1)
	}
	if len(src.wants) != 1 || src.wants[0] != batch-31 {
		t.Errorf("leases asked for %v, want one of %d", src.wants, batch-31)
	}
}

// TestDemandPastRangeNeverReissues takes numbers in bulk batches and one
// by one, under each option that changes how ranges are leased and
// journaled, and checks after every number that the journal covers it:
// that a generator reloaded from the journal at that moment (the process
// killed) would go on past it. Then it reloads from the journal as it is
// and checks that no number comes again.
func TestDemandPastRangeNeverReissues(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts idgen.Options
	}{
		{"journal", idgen.Options{JournalStep: 8}},
		{"prefetch", idgen.Options{JournalStep: 8, Prefetch: 0.25}},
		{"prefetch, journal ahead", idgen.Options{JournalStep: 8, Prefetch: 0.25, JournalAhead: true}},
		{"reserve of two, journal ahead", idgen.Options{JournalStep: 4, Reserve: 2, JournalAhead: true}},
	} {
		for seed := range uint64(8) {
			t.Run(fmt.Sprintf("%s/%d", tc.name, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 1))
				j := newMemJournal()
				src := &sizedSource{memSource: newMemSource(int64(8 + rng.IntN(120)))}
				opts := tc.opts
				opts.Journal = j
				h := idgen.NewHiLoWith("orders", src, opts)
				seen := map[int64]bool{}
				take := func(h *idgen.HiLo, ctx context.Context) {
					t.Helper()
					n := takeNew(t, h, ctx, seen)
					if rs, _ := j.get("orders"); n > rs.Mark {
						t.Fatalf("number %d handed out past the journal's mark %d (%+v)", n, rs.Mark, rs)
					}
				}
				for range 40 {
					if rng.IntN(3) == 0 {
						take(h, ctx)
						continue
					}
					demand := 1 + rng.IntN(600)
					if rng.IntN(2) == 0 {
						h.Prepare(demand + rng.IntN(100) - 50) // a guess, racing the takes
					}
					bulk := idgen.WithDemand(ctx, demand)
					for range demand - rng.IntN(demand/4+1) { // a batch may take less than it said
						take(h, bulk)
					}
				}
				// The process is killed: a new generator goes on from a copy
				// of the journal as it is, and the old one is left running.
				rs, _ := j.get("orders")
				j2 := newMemJournal()
				if err := j2.SaveRanges("orders", rs); err != nil {
					t.Fatal(err)
				}
				opts.Journal = j2
				h2 := idgen.NewHiLoWith("orders", src, opts)
				defer h2.Close(ctx)
				for range 300 {
					n, _, err := h2.NextNumber(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if seen[n] {
						t.Fatalf("number %d handed out again after a reload from %+v", n, rs)
					}
				}
				h.Close(ctx)
			})
		}
	}
}

// TestPrepare: a bulk write that readies the generator first finds its
// range leased and journaled: its takes make no lease and no journal write
// of their own.
func TestPrepare(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		first bool // a number taken before the batch
	}{
		{"a new generator", false},
		{"a demand past the current range", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newMemJournal()
			src := &sizedSource{memSource: newMemSource(32)}
			h := idgen.NewHiLoWith("orders", src, idgen.Options{Journal: j, JournalStep: 8})
			defer h.Close(ctx)
			if tc.first {
				if _, _, err := h.NextNumber(ctx); err != nil {
					t.Fatal(err)
				}
			}
			const batch = 5000
			h.Prepare(batch)
			// Wait until the preparation is done: the journal covers the
			// batch.
			deadline := time.Now().Add(5 * time.Second)
			for {
				if rs, _ := j.get("orders"); rs.Mark >= batch {
					break
				}
				if time.Now().After(deadline) {
					rs, _ := j.get("orders")
					t.Fatalf("journal %+v: the preparation did not cover %d numbers", rs, batch)
				}
				time.Sleep(time.Millisecond)
			}
			_, saves := j.get("orders")
			leases := src.leases.Load()
			bulk := idgen.WithDemand(ctx, batch)
			for range batch - 1 {
				if _, _, err := h.NextNumber(bulk); err != nil {
					t.Fatal(err)
				}
			}
			if _, s := j.get("orders"); s != saves || src.leases.Load() != leases {
				t.Errorf("the batch made %d journal writes and %d leases after its preparation, want none", s-saves, src.leases.Load()-leases)
			}
		})
	}
}

// TestNextIDs: a batch of ids is what as many NextID calls give, across
// ranges; when a lease fails partway, the ids before it are filled and
// the error says why.
func TestNextIDs(t *testing.T) {
	ctx := context.Background()
	one := idgen.NewHiLo("orders", newMemSource(32))
	defer one.Close(ctx)
	src := newMemSource(32)
	many := idgen.NewHiLo("orders", src)
	defer many.Close(ctx)
	ids := make([]string, 100)
	if n, err := many.NextIDs(ctx, ids); n != 100 || err != nil {
		t.Fatalf("NextIDs: %d, %v", n, err)
	}
	for i, id := range ids {
		want, err := one.NextID(ctx)
		if err != nil || id != want {
			t.Fatalf("id %d: %q, NextID gives %q (%v)", i, id, want, err)
		}
	}
	// 100 taken of ranges of 32: 28 are left in the current one.
	src.fail.Store(true)
	n, err := many.NextIDs(ctx, make([]string, 50))
	if n != 28 || !errors.Is(err, errOffline) {
		t.Fatalf("NextIDs with the source failing: %d, %v; want 28 and the lease's error", n, err)
	}
}
