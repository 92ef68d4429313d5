package core

import (
	"maps"
	"slices"
	"testing"
)

// FuzzPendingMarks runs sequences of mark, drop, commit and rollback on
// the pending marks against a plain map, and checks after every step that
// the sorted ids, less those no longer marked, are the map's keys in order.
func FuzzPendingMarks(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 1, 1, 5, 0, 3, 4, 5})
	f.Add([]byte{0, 0, 0, 9, 0, 17, 5, 1, 0, 1, 9, 4, 5, 0, 0, 3, 5})
	f.Add([]byte{0, 4, 3, 0, 12, 1, 4, 5, 4, 0, 4, 0, 12, 5})
	ids := []string{"a", "b", "c", "d", "orders/1-A", "orders/10-A", "orders/2-A", "x"}
	f.Fuzz(func(t *testing.T, ops []byte) {
		p := newPendingMarks()
		tx := &txn{marks: p}
		want := map[string]syncMeta{}
		committed := map[string]syncMeta{}
		rev := 0
		for i := 0; i+1 < len(ops); i += 2 {
			id := ids[int(ops[i+1])%len(ids)]
			switch ops[i] % 6 {
			case 0, 3:
				rev++
				m := syncMeta{Base: "b", Rev: string(rune('A' + rev%26)), Deleted: rev%3 == 0, Dirty: true}
				tx.setPending(id, m, true)
				want[id] = m
			case 1:
				tx.dropPending(id)
				delete(want, id)
			case 2: // commit
				if len(tx.undo) > 0 { // as updateN does
					p.release()
					if len(want) == 0 && len(p.order)+len(p.added) > 0 {
						t.Fatalf("step %d: nothing marked, %d entries kept", i/2, len(p.order)+len(p.added))
					}
				}
				tx.undo = tx.undo[:0]
				committed = maps.Clone(want)
			case 4: // the transaction fails
				tx.undoMarks()
				want = maps.Clone(committed)
			case 5:
				var got []string
				for _, e := range p.sorted() {
					if e.live {
						got = append(got, e.id)
					}
				}
				keys := slices.Sorted(maps.Keys(want))
				if !slices.Equal(got, keys) {
					t.Fatalf("step %d: sorted %q, want %q", i/2, got, keys)
				}
			}
			marks := map[string]syncMeta{}
			for id, e := range p.m {
				if !e.live || e.id != id {
					t.Fatalf("step %d: entry of %q: %+v", i/2, id, e)
				}
				marks[id] = e.meta
			}
			if !maps.Equal(marks, want) {
				t.Fatalf("step %d: marks %v, want %v", i/2, marks, want)
			}
			var ids []string
			for _, e := range p.sorted() {
				ids = append(ids, e.id)
			}
			if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
				t.Fatalf("step %d: order not ascending and unique: %q", i/2, ids)
			}
		}
	})
}
