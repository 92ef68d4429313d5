package core

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// TestLoadedItemsReadAsOneTree holds a store loaded in place (loaded.go)
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
		err = s.LoadChanges(func(apply func(Change) error) error {
			for _, k := range keys {
				if err := apply(Change{Key: k, Value: model[k]}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if s.loaded.live != len(keys) {
			t.Fatalf("seed %d: %d items loaded in place, want %d", seed, s.loaded.live, len(keys))
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
	err = s.LoadChanges(func(apply func(Change) error) error {
		for _, c := range changes {
			if err := apply(c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.loaded.keys) != 2 || s.loaded.live != 0 {
		t.Fatalf("loaded in place %q, %d live; want a and c, both since replaced or deleted", s.loaded.keys, s.loaded.live)
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
	err = s2.LoadChanges(func(apply func(Change) error) error {
		for _, c := range []Change{{Key: "a", Value: "1"}, {Key: "d", Value: "4"}} {
			if err := apply(c); err != nil {
				return err
			}
		}
		return nil
	})
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
