package query_test

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"testing"

	"github.com/hilodb/hilodb/core/query"
)

// TestIndexBaseAndWrites holds an index filled at once (its base: by a
// restore, or by a build) and then written to (deletes and replacements
// of base entries, new entries) to a model of sorted entries: every scan,
// forwards and backwards between random bounds and stopped early, Each
// and Len agree with it after every few writes.
func TestIndexBaseAndWrites(t *testing.T) {
	p, _ := query.ParsePath("n")
	for seed := int64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewSource(seed))
		key := func() string { return fmt.Sprintf("k%03d", r.Intn(300)) }
		model := map[string]string{} // key → doc
		var ix *query.Index
		if seed%2 == 0 {
			// A base from a build: documents whose values make the keys.
			ix = query.NewDocIndex([]query.Path{p})
			b := ix.Builder()
			for i := 0; i < 120; i++ {
				id := fmt.Sprintf("d%03d", r.Intn(1000))
				doc := fmt.Sprintf(`{"n":%d,"v":%d}`, r.Intn(50), i)
				k := string(ix.AppendKey(nil, doc, id))
				if _, dup := model[k]; dup {
					continue
				}
				model[k] = doc
				b.Add(doc, id)
			}
			b.Finish()
		} else {
			ix = query.NewDocIndex([]query.Path{p})
			for i := 0; i < 120; i++ {
				model[key()] = fmt.Sprint("doc", i)
			}
			keys := sortedKeys(model)
			docs, docKeys := make([]string, len(keys)), make([]string, len(keys))
			for i, k := range keys {
				docs[i], docKeys[i] = model[k], "d"+k[len(k)-1:]
			}
			all, spans := spansOf(keys, func(int) int { return 1 }, func(i int) int32 { return int32(i) })
			if !ix.RestoreSpans(all, spans, listDocs{docs, docKeys}, "d") {
				t.Fatal("restore refused sorted entries")
			}
		}
		check := func(step int) {
			t.Helper()
			keys := sortedKeys(model)
			if ix.Len() != len(keys) {
				t.Fatalf("seed %d step %d: Len %d, want %d", seed, step, ix.Len(), len(keys))
			}
			var all []string
			ix.Each(func(e query.Entry) bool { all = append(all, e.Key+"="+e.Doc); return true })
			if want := withDocs(keys, model); !slices.Equal(all, want) {
				t.Fatalf("seed %d step %d: Each %q, want %q", seed, step, all, want)
			}
			for range 5 {
				lo, hi := key(), key()
				if lo > hi {
					lo, hi = hi, lo
				}
				stop := 1 + r.Intn(20)
				for _, desc := range []bool{false, true} {
					var got []string
					ix.Scan(lo, hi, desc, func(e query.Entry) bool {
						got = append(got, e.Key+"="+e.Doc)
						return len(got) < stop
					})
					var want []string
					for _, k := range keys {
						if k >= lo && k < hi {
							want = append(want, k+"="+model[k])
						}
					}
					if desc {
						slices.Reverse(want)
					}
					want = want[:min(len(want), stop)]
					if !slices.Equal(got, want) {
						t.Fatalf("seed %d step %d: scan [%s, %s) desc %v: %q, want %q", seed, step, lo, hi, desc, got, want)
					}
				}
			}
		}
		check(0)
		for step := 1; step <= 300; step++ {
			keys := sortedKeys(model)
			switch op := r.Intn(3); {
			case op == 0 && len(keys) > 0: // delete one there is
				k := keys[r.Intn(len(keys))]
				e, ok := ix.Delete(k)
				if !ok || e.Key != k || e.Doc != model[k] {
					t.Fatalf("seed %d step %d: Delete(%s) = %+v %v, want its entry", seed, step, k, e, ok)
				}
				delete(model, k)
			case op == 1: // set: new, or in place of one there is
				k := key()
				doc := fmt.Sprint("new", step)
				prev, replaced := ix.Set(query.Entry{Key: k, ID: k[len(k)-1:], Doc: doc})
				old, had := model[k]
				if replaced != had || (had && prev.Doc != old) {
					t.Fatalf("seed %d step %d: Set(%s) replaced %+v %v, want %q %v", seed, step, k, prev, replaced, old, had)
				}
				model[k] = doc
			default: // delete one there may not be
				k := key()
				_, ok := ix.Delete(k)
				if _, had := model[k]; ok != had {
					t.Fatalf("seed %d step %d: Delete(%s) found %v, want %v", seed, step, k, ok, had)
				}
				delete(model, k)
			}
			if step%10 == 0 {
				check(step)
			}
		}
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func withDocs(keys []string, m map[string]string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + "=" + m[k]
	}
	return out
}
