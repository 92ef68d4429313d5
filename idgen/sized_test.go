package idgen_test

import (
	"context"
	"sync"
	"testing"

	"github.com/hilodb/hilodb/idgen"
)

// sizedSource is a memSource that also leases ranges of a requested size
// (idgen.SizedRangeSource) and records each want it was asked for.
type sizedSource struct {
	*memSource
	wmu   sync.Mutex
	wants []int64
}

func (s *sizedSource) NextRangeFor(ctx context.Context, tag string, last idgen.Range, want int64) (idgen.Range, error) {
	s.wmu.Lock()
	s.wants = append(s.wants, want)
	s.wmu.Unlock()
	s.mu.Lock()
	size := max(s.size, want)
	low := s.max[tag] + 1
	s.max[tag] += size
	high := s.max[tag]
	s.mu.Unlock()
	s.leases.Add(1)
	return idgen.Range{Prefix: tag + "/", Low: low, High: high, LastSize: size, ServerTag: s.tag}, nil
}

// takeNew takes the next number of h under ctx and fails the test if it
// is in seen, where it adds it.
func takeNew(t *testing.T, h *idgen.HiLo, ctx context.Context, seen map[int64]bool) int64 {
	t.Helper()
	n, _, err := h.NextNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if seen[n] {
		t.Fatalf("number %d handed out twice", n)
	}
	seen[n] = true
	return n
}

func TestWithDemandLeasesOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sized     bool
		opts      idgen.Options
		maxLeases int64
	}{
		{"sized source, no options", true, idgen.Options{}, 2},
		{"sized source, prefetch", true, idgen.Options{Prefetch: 0.25}, 4},
		{"sized source, reserve of two", true, idgen.Options{Reserve: 2}, 6},
		{"sized source, journal ahead", true, idgen.Options{Prefetch: 0.25, Journal: newMemJournal(), JournalAhead: true}, 4},
		{"plain source: demand cannot size the lease", false, idgen.Options{}, 1 + 9968/32 + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := newMemSource(32)
			var src idgen.RangeSource = mem
			var sized *sizedSource
			if tc.sized {
				sized = &sizedSource{memSource: mem}
				src = sized
			}
			h := idgen.NewHiLoWith("orders", src, tc.opts)
			defer h.Close(context.Background())
			ctx := context.Background()
			seen := map[int64]bool{}
			take := func(ctx context.Context) { takeNew(t, h, ctx, seen) }
			take(ctx) // the first, ordinary lease
			const batch = 10000
			bulk := idgen.WithDemand(ctx, batch)
			for range batch {
				take(bulk)
			}
			if got := mem.leases.Load(); got > tc.maxLeases {
				t.Errorf("%d leases for one id and a batch of %d, want at most %d", got, batch, tc.maxLeases)
			}
			if sized != nil {
				sized.wmu.Lock()
				defer sized.wmu.Unlock()
				// One lease asked for what the ranges at hand were short of:
				// the batch less the numbers left and reserved.
				var asked int64
				for _, w := range sized.wants {
					asked += w
				}
				if len(sized.wants) != 1 || asked < batch-32*7 || asked > batch {
					t.Errorf("leases asked for %v numbers, want one lease of up to %d", sized.wants, batch)
				}
			}
		})
	}
}

func TestNoDemandNoWant(t *testing.T) {
	sized := &sizedSource{memSource: newMemSource(8)}
	h := idgen.NewHiLo("orders", sized)
	defer h.Close(context.Background())
	for range 100 {
		if _, err := h.NextID(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := sized.leases.Load(); got != 13 {
		t.Errorf("%d leases for 100 ids in ranges of 8, want 13", got)
	}
	if len(sized.wants) != 0 {
		t.Errorf("ordinary takes asked for sizes %v", sized.wants)
	}
}
