package core_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hilodb/hilodb/core/revision"
)

func TestRevOnEveryWrite(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	r1 := insert(t, s, "a", `{"v":1}`)
	r2, err := s.Replace(ctx, "users", "a", []byte(`{"v":2}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	r3, err := s.Update(ctx, "users", "a", []byte(`{"w":3}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	revs := []string{r1.Rev, r2.Rev, r3.Rev}
	for i, r := range revs {
		v, node, err := revision.Decode(r)
		if err != nil || node != "C" {
			t.Fatalf("rev %q: %v %q", r, err, node)
		}
		if i > 0 {
			pv, _, _ := revision.Decode(revs[i-1])
			if v <= pv {
				t.Errorf("rev %d not after the one before", i)
			}
		}
	}
	if r2.OldRev != r1.Rev || r3.OldRev != r2.Rev {
		t.Errorf("_oldRev: %q %q, want %q %q", r2.OldRev, r3.OldRev, r1.Rev, r2.Rev)
	}
}

func TestRevUniqueAcrossNodes(t *testing.T) {
	// Two nodes whose clocks read the same instant never make the same _rev.
	at := func() func() time.Time {
		fixed := time.UnixMilli(1_700_000_000_000)
		return func() time.Time { return fixed }
	}
	a, b := revision.NewClock("A"), revision.NewClock("B")
	a.SetNow(at())
	b.SetNow(at())
	seen := map[string]bool{}
	for range 1000 {
		for _, r := range []string{a.NextRev(), b.NextRev()} {
			if seen[r] {
				t.Fatalf("duplicate %q", r)
			}
			seen[r] = true
		}
	}
}

func TestClockStepsBack(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	c := revision.NewClock("A")
	c.SetNow(func() time.Time { return now })
	first := c.Tick()
	now = now.Add(-time.Hour) // the wall clock steps back
	second := c.Tick()
	if second <= first {
		t.Fatalf("%d after %d: not increasing when the wall clock steps back", second, first)
	}
	if first>>20 != uint64(1_700_000_000_000) {
		t.Errorf("clock value %d is not ms<<20", first)
	}
	now = now.Add(2 * time.Hour)
	if third := c.Tick(); third>>20 != uint64(now.UnixMilli()) || third&(1<<20-1) != 0 {
		t.Errorf("after the wall clock passes again: %d", third)
	}
}

// TestRevisionsOfABatch: a transaction reads the wall clock once; its
// revisions still order after each other and after every earlier one, and
// the next transaction reads the clock again.
func TestRevisionsOfABatch(t *testing.T) {
	s := newTestStore(t)
	var mu sync.Mutex
	reads := 0
	wall := time.UnixMilli(1_800_000_000_000)
	s.Clock().SetNow(func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		reads++
		return wall
	})
	ctx := context.Background()
	docs := make([][]byte, 1000)
	for i := range docs {
		docs[i] = []byte(fmt.Sprintf(`{"n":%d}`, i))
	}
	rs, err := s.InsertMany(ctx, "orders", docs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if reads != 1 {
		t.Errorf("the wall clock was read %d times for one batch, want once", reads)
	}
	var last uint64
	for i, r := range rs {
		v, _, err := revision.Decode(r.Rev)
		if err != nil {
			t.Fatal(err)
		}
		if v <= last {
			t.Fatalf("revision %d (%s) does not order after the one before", i, r.Rev)
		}
		last = v
	}
	if got := last >> 20; got != uint64(wall.UnixMilli()) {
		t.Errorf("the batch's revisions carry %d ms, want the wall clock %d", got, wall.UnixMilli())
	}
	mu.Lock()
	wall = wall.Add(time.Second)
	mu.Unlock()
	r, err := s.Insert(ctx, "orders", []byte(`{"n":-1}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	v, _, _ := revision.Decode(r.Rev)
	if v>>20 != uint64(wall.UnixMilli()) || v <= last {
		t.Errorf("the next transaction's revision %s: want the new wall clock, after the batch's", r.Rev)
	}
}
