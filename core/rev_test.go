package core_test

import (
	"sync"
	"testing"

	"github.com/hilodb/hilodb/core"
)

func TestRevIncreasingAndDistinct(t *testing.T) {
	c := core.NewClock("B")
	seen := map[string]bool{}
	var prev uint64
	for range 100_000 {
		rev := c.NextRev()
		v, node, err := core.DecodeRev(rev)
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
	c := core.NewClock("A")
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
	v, node, err := core.DecodeRev("_l6zhVDW---A")
	if err != nil || node != "A" {
		t.Fatalf("DecodeRev: %v %q", err, node)
	}
	if got := core.EncodeRev(v, "A"); got != "_l6zhVDW---A" {
		t.Errorf("EncodeRev = %q", got)
	}
	for _, bad := range []string{"", "short", "z__________A", "_l6zhVDW--/A", "_l6zhVDW---"} {
		if _, _, err := core.DecodeRev(bad); err == nil {
			t.Errorf("DecodeRev(%q) accepted", bad)
		}
	}
}

func TestClockObserve(t *testing.T) {
	c := core.NewClock("A")
	first, _, _ := core.DecodeRev(c.NextRev())
	c.Observe(first + 1<<30)
	next, _, _ := core.DecodeRev(c.NextRev())
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
		rev := core.EncodeRev(v, node)
		gv, gnode, err := core.DecodeRev(rev)
		if err != nil || gv != v || gnode != node {
			t.Fatalf("round trip of %d,%q via %q: %d,%q,%v", v, node, rev, gv, gnode, err)
		}
	})
}

func FuzzDecodeRev(f *testing.F) {
	f.Add("_l6zhVDW---A")
	f.Add("")
	f.Fuzz(func(t *testing.T, rev string) {
		v, node, err := core.DecodeRev(rev)
		if err == nil && core.EncodeRev(v, node) != rev {
			t.Fatalf("DecodeRev(%q) accepted but does not encode back", rev)
		}
	})
}
