package idgen_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hilodb/hilodb/idgen"
)

// countingSource leases ranges of 4 from 1 up, counting the leases.
type countingSource struct{ leases, next int64 }

func (s *countingSource) NextRange(ctx context.Context, tag string, last idgen.Range) (idgen.Range, error) {
	s.leases++
	r := idgen.Range{Prefix: tag + "/", Low: s.next + 1, High: s.next + 4, LastSize: 4, ServerTag: "A"}
	s.next += 4
	return r, nil
}

func TestNoWait(t *testing.T) {
	src := &countingSource{}
	g := idgen.NewGeneratorWith(src, idgen.Options{})
	defer g.Close(context.Background())
	quick := idgen.NoWait(context.Background())
	if _, err := g.NextID(quick, "orders"); !errors.Is(err, idgen.ErrWouldWait) {
		t.Fatalf("no range yet: %v, want ErrWouldWait", err)
	}
	if src.leases != 0 {
		t.Fatalf("NoWait leased %d ranges", src.leases)
	}
	first, err := g.NextID(context.Background(), "orders")
	if err != nil || first != "orders/1-A" {
		t.Fatalf("first id %q %v", first, err)
	}
	seen := map[string]bool{first: true}
	for {
		id, err := g.NextID(quick, "orders")
		if errors.Is(err, idgen.ErrWouldWait) {
			break
		}
		if err != nil || seen[id] {
			t.Fatalf("id %q %v (seen: %v)", id, err, seen[id])
		}
		seen[id] = true
	}
	if len(seen) < 2 || src.leases > 2 {
		t.Errorf("%d ids from the range at hand, %d leases", len(seen), src.leases)
	}
	id, err := g.NextID(context.Background(), "orders")
	if err != nil || seen[id] {
		t.Fatalf("after ErrWouldWait: %q %v, want a new id", id, err)
	}
}
