package revision_test

import (
	"sync"
	"testing"

	"github.com/hilodb/hilodb/core/revision"
)

func TestRevIncreasingAndDistinct(t *testing.T) {
	c := revision.NewClock("B")
	seen := map[string]bool{}
	var prev uint64
	for range 100_000 {
		rev := c.NextRev()
		v, node, err := revision.Decode(rev)
		if err != nil {
			t.Fatal(err)
		}
		if node != "B" || v <= prev || seen[rev] {
			t.Fatalf("rev %q: v=%d prev=%d node=%q dup=%v", rev, v, prev, node, seen[rev])
		}
		seen[rev] = true
		prev = v
	}
}

func TestRevConcurrentDistinct(t *testing.T) {
	c := revision.NewClock("A")
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]string, 0, 10_000)
			for range 10_000 {
				local = append(local, c.NextRev())
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range local {
				if seen[r] {
					t.Errorf("duplicate rev %q", r)
				}
				seen[r] = true
			}
		}()
	}
	wg.Wait()
}

func TestRevFormat(t *testing.T) {
	// ArangoDB's example revision decodes and encodes back.
	v, node, err := revision.Decode("_l6zhVDW---A")
	if err != nil || node != "A" {
		t.Fatalf("Decode: %v %q", err, node)
	}
	if got := revision.Encode(v, "A"); got != "_l6zhVDW---A" {
		t.Errorf("Encode = %q", got)
	}
	for _, bad := range []string{"", "short", "z__________A", "_l6zhVDW--/A", "_l6zhVDW---"} {
		if _, _, err := revision.Decode(bad); err == nil {
			t.Errorf("Decode(%q) accepted", bad)
		}
	}
}

func TestClockObserve(t *testing.T) {
	c := revision.NewClock("A")
	first, _, _ := revision.Decode(c.NextRev())
	c.Observe(first + 1<<30)
	next, _, _ := revision.Decode(c.NextRev())
	if next <= first+1<<30 {
		t.Errorf("after Observe: %d, want > %d", next, first+1<<30)
	}
}

func FuzzRev(f *testing.F) {
	f.Add(uint64(0), "A")
	f.Add(uint64(1)<<63, "ZZ9")
	f.Add(^uint64(0), "B")
	f.Fuzz(func(t *testing.T, v uint64, node string) {
		if node == "" {
			return
		}
		rev := revision.Encode(v, node)
		gv, gnode, err := revision.Decode(rev)
		if err != nil || gv != v || gnode != node {
			t.Fatalf("round trip of %d,%q via %q: %d,%q,%v", v, node, rev, gv, gnode, err)
		}
	})
}

func FuzzDecode(f *testing.F) {
	f.Add("_l6zhVDW---A")
	f.Add("")
	f.Fuzz(func(t *testing.T, rev string) {
		v, node, err := revision.Decode(rev)
		if err == nil && revision.Encode(v, node) != rev {
			t.Fatalf("Decode(%q) accepted but does not encode back", rev)
		}
	})
}

// A transaction of many writes reserves its revisions' clock values a
// block at a time; with single writes made beside it, on other goroutines,
// no value is made twice and each goroutine's values increase.
func TestRevBlocksBesideSingleTicks(t *testing.T) {
	c := revision.NewClock("A")
	var mu sync.Mutex
	seen := map[uint64]bool{}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local []uint64
			for i := range 3000 {
				if g%2 == 0 {
					local = append(local, c.Tick())
					continue
				}
				first := c.TickN(c.Now().UnixMilli(), uint64(1+i%50))
				for k := range uint64(1 + i%50) {
					local = append(local, first+k)
				}
			}
			for i := 1; i < len(local); i++ {
				if local[i] <= local[i-1] {
					t.Errorf("goroutine %d: value %d after %d", g, local[i], local[i-1])
					return
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, v := range local {
				if seen[v] {
					t.Errorf("value %d made twice", v)
				}
				seen[v] = true
			}
		}()
	}
	wg.Wait()
	if v := c.Tick(); seen[v] {
		t.Fatalf("a tick after the blocks repeats %d", v)
	}
}
