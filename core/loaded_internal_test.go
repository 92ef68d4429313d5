package core

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// applyAll is a load's fill that applies changes in order.
func applyAll(changes []Change) func(apply func(Change) error) error {
	return func(apply func(Change) error) error {
		for _, c := range changes {
			if err := apply(c); err != nil {
				return err
			}
		}
		return nil
	}
}

// tableOf lays the items of keys out as a snapshot's table: each key and
// value one after another in text, with a byte between.
func tableOf(keys []string, value func(string) string) (string, []ItemRow) {
	var text []byte
	rows := make([]ItemRow, len(keys))
	for i, k := range keys {
		text = append(text, '|')
		rows[i].KeyOff = uint32(len(text))
		text = append(text, k...)
		rows[i].KeyEnd = uint32(len(text))
		text = append(text, '=')
		rows[i].ValOff = uint32(len(text))
		text = append(text, value(k)...)
		rows[i].ValEnd = uint32(len(text))
	}
	return string(text), rows
}

// TestLoadedItemsReadAsOneTree holds a store loaded in place (package loaded),
// item by item or as one table,
// and then written to, by transactions that commit and by ones that fail
// after their writes, to a model of its keys: after every transaction,
// Get of every key, Len, and reads of random ranges (each stopped early at
// times) agree with the model. A failed transaction, a DeleteAll in it
// included, leaves no trace.
func TestLoadedItemsReadAsOneTree(t *testing.T) {
	errFail := errors.New("fail on purpose")
	for seed := int64(1); seed <= 30; seed++ {
		r := rand.New(rand.NewSource(seed))
		key := func() string { return fmt.Sprintf("k/%03d", r.Intn(200)) }
		model := map[string]string{}
		for range 80 {
			model[key()] = fmt.Sprint("loaded-", r.Intn(1000))
		}
		s, err := Open(":memory:", Options{Node: "A"})
		if err != nil {
			t.Fatal(err)
		}
		keys := slices.Sorted(maps.Keys(model))
		if seed%2 == 0 {
			// Item by item, each kept as it comes.
			err = s.LoadChanges(func(apply func(Change) error) error {
				for _, k := range keys {
					if err := apply(Change{Key: k, Value: model[k]}); err != nil {
						return err
					}
				}
				return nil
			})
		} else {
			// One table, read in place.
			text, rows := tableOf(keys, func(k string) string { return model[k] })
			err = s.LoadSaved(0, func(f Fill) error { return f.Table(text, rows) })
		}
		if err != nil {
			t.Fatal(err)
		}
		if s.loaded.Live() != len(keys) || (seed%2 == 1) != (s.loaded.FromTable()) {
			t.Fatalf("seed %d: %d items loaded in place (table %v), want %d", seed, s.loaded.Live(), s.loaded.FromTable(), len(keys))
		}
		check := func(step int) {
			t.Helper()
			err := s.view(func(tx *txn) error {
				if n, _ := tx.Len(); n != len(model) {
					t.Fatalf("seed %d step %d: Len %d, want %d", seed, step, n, len(model))
				}
				for i := range 200 {
					k := fmt.Sprintf("k/%03d", i)
					v, err := tx.Get(k)
					want, ok := model[k]
					if ok != (err == nil) || v != want {
						t.Fatalf("seed %d step %d: Get(%s) = %q, %v; want %q, %v", seed, step, k, v, err, want, ok)
					}
				}
				for range 6 {
					lo, hi := key(), key()
					if lo > hi {
						lo, hi = hi, lo
					}
					stop := 1 + r.Intn(40)
					var want []string
					for _, k := range slices.Sorted(maps.Keys(model)) {
						if k >= lo && k < hi && len(want) < stop {
							want = append(want, k+"="+model[k])
						}
					}
					var got []string
					collect := func(k, v string) bool { got = append(got, k+"="+v); return len(got) < stop }
					if err := tx.AscendRange("", lo, hi, collect); err != nil {
						return err
					}
					if !slices.Equal(got, want) {
						t.Fatalf("seed %d step %d: AscendRange [%s, %s) stop %d:\n%q\nwant\n%q", seed, step, lo, hi, stop, got, want)
					}
					// The open-ended reads, each against the model.
					got = got[:0]
					if err := tx.AscendGreaterOrEqual("", lo, collect); err != nil {
						return err
					}
					want = want[:0]
					for _, k := range slices.Sorted(maps.Keys(model)) {
						if k >= lo && len(want) < stop {
							want = append(want, k+"="+model[k])
						}
					}
					if !slices.Equal(got, want) {
						t.Fatalf("seed %d step %d: AscendGreaterOrEqual %s:\n%q\nwant\n%q", seed, step, lo, got, want)
					}
					got, want = got[:0], want[:0]
					if err := tx.AscendLessThan("", hi, collect); err != nil {
						return err
					}
					for _, k := range slices.Sorted(maps.Keys(model)) {
						if k < hi && len(want) < stop {
							want = append(want, k+"="+model[k])
						}
					}
					if !slices.Equal(got, want) {
						t.Fatalf("seed %d step %d: AscendLessThan %s:\n%q\nwant\n%q", seed, step, hi, got, want)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		check(0)
		for step := 1; step <= 40; step++ {
			fail := r.Intn(4) == 0
			next := maps.Clone(model)
			err := s.update(func(tx *txn) error {
				for range 1 + r.Intn(6) {
					k := key()
					switch op := r.Intn(10); {
					case op < 5:
						v := fmt.Sprint("set-", step, "-", r.Intn(1000))
						prev, replaced, err := tx.Set(k, v, nil)
						if old, ok := next[k]; err != nil || replaced != ok || prev != old {
							t.Fatalf("seed %d step %d: Set(%s) replaced %q, %v, %v; want %q, %v", seed, step, k, prev, replaced, err, old, ok)
						}
						next[k] = v
					case op < 9:
						prev, err := tx.Delete(k)
						if old, ok := next[k]; ok != (err == nil) || prev != old {
							t.Fatalf("seed %d step %d: Delete(%s) = %q, %v; want %q, %v", seed, step, k, prev, err, old, ok)
						}
						delete(next, k)
					case fail: // only where it is put back
						if err := tx.DeleteAll(); err != nil {
							return err
						}
						clear(next)
					}
				}
				if fail {
					return errFail
				}
				return nil
			})
			switch {
			case fail && !errors.Is(err, errFail):
				t.Fatalf("seed %d step %d: %v, want the failure", seed, step, err)
			case !fail && err != nil:
				t.Fatal(err)
			case !fail:
				model = next
			}
			check(step)
		}
		s.Close()
	}
}

// TestLoadInPlaceStopsAtDisorder: a load keeps its changes in place only
// while they come in ascending key order; the rest, and every pending
// mark, go where they always went, and the store reads the same.
func TestLoadInPlaceStopsAtDisorder(t *testing.T) {
	s, err := Open(":memory:", Options{Node: "A"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	changes := []Change{
		{Key: "a", Value: "1"}, {Key: "c", Value: "3"},
		{Key: "b", Value: "2"}, // out of order: from here on into buntdb
		{Key: "d", Value: "4"}, {Key: "c", Deleted: true}, {Key: "a", Value: "1b"},
	}
	err = s.LoadChanges(applyAll(changes))
	if err != nil {
		t.Fatal(err)
	}
	if s.loaded.Len() != 2 || s.loaded.Live() != 0 {
		t.Fatalf("%d loaded in place, %d live; want a and c, both since replaced or deleted", s.loaded.Len(), s.loaded.Live())
	}
	var got []string
	_ = s.view(func(tx *txn) error {
		return tx.AscendGreaterOrEqual("", "", func(k, v string) bool {
			got = append(got, k+"="+v)
			return true
		})
	})
	if want := []string{"a=1b", "b=2", "d=4"}; !slices.Equal(got, want) {
		t.Fatalf("store holds %q, want %q", got, want)
	}
	// A store saved elsewhere, loaded over this one: its values win, and
	// every key counts once.
	other, err := Open(":memory:", Options{Node: "A"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_ = other.update(func(tx *txn) error {
		_, _, err := tx.Set("d", "4b", nil)
		return err
	})
	var saved bytes.Buffer
	if err := other.Save(&saved); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(":memory:", Options{Node: "A"})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	err = s2.LoadChanges(applyAll([]Change{{Key: "a", Value: "1"}, {Key: "d", Value: "4"}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Load(&saved); err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	_ = s2.view(func(tx *txn) error {
		return tx.AscendGreaterOrEqual("", "", func(k, v string) bool {
			if !strings.HasPrefix(k, "sys/") {
				got = append(got, k+"="+v)
			}
			return true
		})
	})
	n := 0
	_ = s2.view(func(tx *txn) error { n, err = tx.Len(); return err })
	sys := 0
	_ = s2.view(func(tx *txn) error {
		return tx.AscendRange("", "sys/", "sys0", func(string, string) bool { sys++; return true })
	})
	if want := []string{"a=1", "d=4b"}; !slices.Equal(got, want) || n != len(want)+sys {
		t.Fatalf("after a Load over it: %q, Len %d; want %q, Len %d", got, n, want, len(want)+sys)
	}
	if err := s.view(func(tx *txn) error { return tx.AscendRange("by-name", "", "", nil) }); err == nil || !strings.Contains(err.Error(), "key order") {
		t.Fatalf("a read of an index by name: %v, want refused", err)
	}
}

// TestTableLoadsAsChanges: a snapshot's items handed as one table (Fill's
// Table) load the store that Apply of each loads: the same items, the
// same pending marks (kept in the table, hidden), the same indexes; and a
// table handed after a change (so not into an empty list) is applied item
// by item.
func TestTableLoadsAsChanges(t *testing.T) {
	ctx := context.Background()
	src, err := Open(":memory:", Options{Node: "A"})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, _, err := src.CreateIndex(ctx, "orders", IndexDef{Fields: []string{"total"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if _, err := src.Put(ctx, "orders", fmt.Appendf(nil, `{"_id":"orders/%d","total":%d}`, i, i%13)); err != nil {
			t.Fatal(err)
		}
	}
	// Half acknowledged: the rest keep their pending marks among the items.
	ws, err := src.PendingWrites(150)
	if err != nil {
		t.Fatal(err)
	}
	acks := make([]Ack, len(ws))
	for i, w := range ws {
		acks[i] = Ack{ID: w.ID, Rev: w.Rev}
	}
	if err := src.Acknowledge(acks...); err != nil {
		t.Fatal(err)
	}
	var items []Change
	if err := src.Items(nil, func(k, v string) error {
		items = append(items, Change{Key: strings.Clone(k), Value: strings.Clone(v)}) // valid during the call only
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	state := func(s *Store) (kv []string, loaded, pending int, ixs []IndexDef) {
		t.Helper()
		_ = s.view(func(tx *txn) error {
			return tx.AscendGreaterOrEqual("", "", func(k, v string) bool {
				kv = append(kv, k+"="+v)
				return true
			})
		})
		pending, _ = s.PendingCount()
		ixs, _ = s.Indexes("orders")
		return kv, s.loaded.Len(), pending, ixs
	}
	one, err := Open(":memory:", Options{Node: "A"})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	err = one.LoadChanges(applyAll(items))
	if err != nil {
		t.Fatal(err)
	}
	kv1, l1, p1, ix1 := state(one)
	if p1 != 150 || l1 != len(items)-150 || len(ix1) != 1 {
		t.Fatalf("%d pending, %d in place, indexes %v; want 150 pending, %d in place, one index", p1, l1, ix1, len(items)-150)
	}
	keys := make([]string, len(items))
	values := map[string]string{}
	for i, c := range items {
		keys[i], values[c.Key] = c.Key, c.Value
	}
	text, rows := tableOf(keys, func(k string) string { return values[k] })
	for _, after := range []bool{false, true} {
		tab, err := Open(":memory:", Options{Node: "A"})
		if err != nil {
			t.Fatal(err)
		}
		err = tab.LoadSaved(0, func(f Fill) error {
			if after {
				if err := f.Apply(Change{Key: "a/first", Value: "1"}); err != nil {
					return err
				}
			}
			return f.Table(text, rows)
		})
		if err != nil {
			t.Fatal(err)
		}
		kv2, _, p2, ix2 := state(tab)
		if after {
			kv2 = slices.DeleteFunc(kv2, func(s string) bool { return s == "a/first=1" })
		}
		if !slices.Equal(kv1, kv2) || p1 != p2 || len(ix2) != 1 || (tab.loaded.FromTable()) == after {
			t.Fatalf("after a change %v: the table loads %d items (%d pending, indexes %v, in place %v); one by one %d (%d pending)",
				after, len(kv2), p2, ix2, tab.loaded.FromTable(), len(kv1), p1)
		}
		res, err := tab.FindJSON("orders", []byte(`{"selector":{"total":5}}`))
		if err != nil || len(res.Docs) != 23 || res.Plan.Index != "idx-total" {
			t.Fatalf("after a change %v: %d documents of total 5 through %q (%v), want 23 through idx-total", after, len(res.Docs), res.Plan.Index, err)
		}
		tab.Close()
	}
}
