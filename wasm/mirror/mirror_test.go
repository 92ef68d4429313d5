package mirror_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/wasm/mirror"
)

// get runs Lookup.Get for id the way the JavaScript side does: the id's
// bytes into the input buffer, then the text out of the output buffer.
func get(l *mirror.Lookup, store int32, id string) (string, int32) {
	n := copy(l.In(), id)
	r := l.Get(store, int32(n))
	if r < 0 {
		return "", r
	}
	return string(l.Out(int(r))), mirror.Hit
}

func set(id, text string) core.Change { return core.Change{Key: "doc/" + id, Value: text} }
func del(id string) core.Change       { return core.Change{Key: "doc/" + id, Deleted: true} }

func TestGet(t *testing.T) {
	big := `{"_id":"a/big","pad":"` + string(make([]byte, mirror.OutStart)) + `"}`
	tests := []struct {
		name    string
		changes [][]core.Change
		store   int32
		id      string
		want    string
		code    int32
	}{
		{"set", [][]core.Change{{set("a/1", `{"n":1}`)}}, 1, "a/1", `{"n":1}`, mirror.Hit},
		{"set twice", [][]core.Change{{set("a/1", `{"n":1}`)}, {set("a/1", `{"n":2}`)}}, 1, "a/1", `{"n":2}`, mirror.Hit},
		{"deleted", [][]core.Change{{set("a/1", `{"n":1}`)}, {del("a/1")}}, 1, "a/1", "", mirror.Miss},
		{"never written", [][]core.Change{{set("a/1", `{"n":1}`)}}, 1, "a/2", "", mirror.Miss},
		{"other keys ignored", [][]core.Change{{{Key: "sys/nodeseq", Value: "7"}}}, 1, "sys/nodeseq", "", mirror.Miss},
		{"unknown store", [][]core.Change{{set("a/1", `{"n":1}`)}}, 2, "a/1", "", mirror.Miss},
		{"too big", [][]core.Change{{set("a/big", big)}}, 1, "a/big", "", mirror.TooBig},
		{"unicode id", [][]core.Change{{set("a/é✓", `{"n":3}`)}}, 1, "a/é✓", `{"n":3}`, mirror.Hit},
		{"empty id", [][]core.Change{{set("a/1", `{}`)}}, 1, "", "", mirror.Miss},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, d := mirror.NewLookup(), mirror.NewDocs()
			l.Add(1, d)
			for _, chs := range tt.changes {
				d.Apply(chs)
			}
			got, code := get(l, tt.store, tt.id)
			if got != tt.want || code != tt.code {
				t.Errorf("Get(%q) = %q, %d; want %q, %d", tt.id, got, code, tt.want, tt.code)
			}
		})
	}
}

func TestGetBadLength(t *testing.T) {
	l, d := mirror.NewLookup(), mirror.NewDocs()
	l.Add(1, d)
	for _, n := range []int32{-1, mirror.InSize + 1, 1 << 30} {
		if r := l.Get(1, n); r != mirror.BadID {
			t.Errorf("Get(1, %d) = %d, want BadID (%d)", n, r, mirror.BadID)
		}
	}
}

func TestGrow(t *testing.T) {
	l, d := mirror.NewLookup(), mirror.NewDocs()
	l.Add(1, d)
	text := `{"pad":"` + string(make([]byte, 3*mirror.OutStart)) + `"}`
	d.Apply([]core.Change{set("a/1", text)})
	if _, code := get(l, 1, "a/1"); code != mirror.TooBig {
		t.Fatalf("before Grow: code %d, want TooBig", code)
	}
	before := l.OutputAddr()
	if !l.Grow(len(text)) {
		t.Fatal("Grow: false, want true")
	}
	if after := l.OutputAddr(); after == before {
		t.Errorf("Grow: output buffer still at %x", after)
	}
	if got, code := get(l, 1, "a/1"); code != mirror.Hit || got != text {
		t.Errorf("after Grow: %d bytes, code %d; want the text (%d bytes)", len(got), code, len(text))
	}
	if l.Grow(mirror.OutMax + 1) {
		t.Error("Grow past OutMax: true, want false")
	}
}

func TestFill(t *testing.T) {
	d := mirror.NewDocs()
	l := mirror.NewLookup()
	l.Add(1, d)

	gen := d.Gen()
	d.Fill(gen, "a/1", `{"n":1}`)
	if got, _ := get(l, 1, "a/1"); got != `{"n":1}` {
		t.Errorf("Fill at the current generation: got %q", got)
	}

	// A read from before a write must not overwrite what the write left.
	gen = d.Gen()
	d.Apply([]core.Change{set("a/2", `{"n":2}`)})
	d.Fill(gen, "a/2", `{"n":"old"}`)
	d.Fill(gen, "a/3", `{"n":"old"}`)
	if got, _ := get(l, 1, "a/2"); got != `{"n":2}` {
		t.Errorf("stale Fill over a write: got %q, want the write's", got)
	}
	if _, code := get(l, 1, "a/3"); code != mirror.Miss {
		t.Errorf("stale Fill: code %d, want Miss", code)
	}

	d.Close()
	d.Fill(d.Gen(), "a/4", `{}`)
	d.Apply([]core.Change{set("a/5", `{}`)})
	for _, id := range []string{"a/1", "a/4", "a/5"} {
		if _, code := get(l, 1, id); code != mirror.Miss {
			t.Errorf("after Close, %s: code %d, want Miss", id, code)
		}
	}
	l.Remove(1)
	if d.Len() != 0 {
		t.Errorf("after Close: %d documents", d.Len())
	}
}

// TestGetAllocatesNothing is the fast path's promise: a garbage collection
// (or an assist that parks) can only start on an allocation.
func TestGetAllocatesNothing(t *testing.T) {
	l, d := mirror.NewLookup(), mirror.NewDocs()
	l.Add(7, d)
	for i := range 1000 {
		d.Apply([]core.Change{set("orders/"+strconv.Itoa(i), fmt.Sprintf(`{"_id":"orders/%d","total":%d}`, i, i))})
	}
	d.Apply([]core.Change{set("orders/big", string(make([]byte, mirror.OutStart+1)))})
	for _, id := range []string{"orders/500", "orders/none", "orders/big"} {
		n := int32(copy(l.In(), id))
		var r int32
		allocs := testing.AllocsPerRun(1000, func() { r = l.Get(7, n) })
		if allocs != 0 {
			t.Errorf("Get(%q) (result %d): %v allocations per call, want 0", id, r, allocs)
		}
	}
	allocs := testing.AllocsPerRun(1000, func() { l.Get(8, 3) })
	if allocs != 0 {
		t.Errorf("Get of an unknown store: %v allocations per call, want 0", allocs)
	}
}

// TestNeverOlderThanApplied reads while another goroutine writes versions
// of one document: a read never returns a version older than the last
// Apply that returned before the read began.
func TestNeverOlderThanApplied(t *testing.T) {
	l, d := mirror.NewLookup(), mirror.NewDocs()
	l.Add(1, d)
	const versions = 20000
	var applied atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for v := int64(1); v <= versions; v++ {
			d.Apply([]core.Change{set("a/1", strconv.FormatInt(v, 10)), set("b/"+strconv.FormatInt(v, 10), "x")})
			applied.Store(v)
			if v%4 == 0 {
				runtime.Gosched()
			}
		}
	}()
	hits := 0
	for applied.Load() < versions {
		runtime.Gosched() // under GOOS=js nothing else runs otherwise
		floor := applied.Load()
		text, code := get(l, 1, "a/1")
		switch code {
		case mirror.Hit:
			hits++
			v, err := strconv.ParseInt(text, 10, 64)
			if err != nil || v < floor {
				t.Fatalf("read %q after version %d was applied", text, floor)
			}
		case mirror.Busy, mirror.Miss:
		default:
			t.Fatalf("code %d", code)
		}
	}
	wg.Wait()
	if text, code := get(l, 1, "a/1"); code != mirror.Hit || text != strconv.Itoa(versions) {
		t.Errorf("at the end: %q, %d; want %d", text, code, versions)
	}
	t.Logf("%d hits while writing", hits)
}

// journal hands a store's write transactions to a mirror, as the browser
// build does through database.Config.Observe.
type journal struct{ d *mirror.Docs }

func (j journal) Commit(changes []core.Change) func() error {
	j.d.Apply(changes)
	return func() error { return nil }
}

var _ core.Journal = journal{}

// TestWithStore keeps a mirror beside a real store: every read through the
// fast path is the store's text, deletes and rewrites included.
func TestWithStore(t *testing.T) {
	st, err := core.Open(":memory:", core.Options{Node: "A"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, l := mirror.NewDocs(), mirror.NewLookup()
	l.Add(1, d)
	st.SetJournal(journal{d})
	ctx := context.Background()
	for i := range 50 {
		if _, err := st.Put(ctx, "orders", []byte(fmt.Sprintf(`{"_key":"k%d","n":%d}`, i%10, i))); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			if err := st.Delete(fmt.Sprintf("orders/k%d", (i+3)%10)); err != nil && !errors.Is(err, core.ErrNotFound) {
				t.Fatal(err)
			}
		}
	}
	sameAsStore(t, st, l, 10)
}

// sameAsStore checks that the mirror answers orders/k0 … orders/k(n-1) as
// the store holds them: the same text, or a miss for one it has none of.
func sameAsStore(t *testing.T, st *core.Store, l *mirror.Lookup, n int) {
	t.Helper()
	for i := range n {
		id := fmt.Sprintf("orders/k%d", i)
		want, err := st.GetString(id)
		got, code := get(l, 1, id)
		switch {
		case err != nil && code != mirror.Miss:
			t.Errorf("%s: store has none (%v), mirror has %q", id, err, got)
		case err == nil && (code != mirror.Hit || got != want):
			t.Errorf("%s: mirror %q (%d), store %q", id, got, code, want)
		}
	}
}

// TestMaxDocs: a full mirror takes no new documents but keeps those it
// holds in step with the store.
func TestMaxDocs(t *testing.T) {
	l, d := mirror.NewLookup(), mirror.NewDocs()
	l.Add(1, d)
	chs := make([]core.Change, mirror.MaxDocs)
	for i := range chs {
		chs[i] = set("a/"+strconv.Itoa(i), "{}")
	}
	d.Apply(chs)
	d.Apply([]core.Change{set("a/new", "{}"), set("a/7", `{"n":2}`)})
	d.Fill(d.Gen(), "a/filled", "{}")
	if _, code := get(l, 1, "a/new"); code != mirror.Miss {
		t.Errorf("a new document in a full mirror: %d, want Miss", code)
	}
	if _, code := get(l, 1, "a/filled"); code != mirror.Miss {
		t.Errorf("a filled document in a full mirror: %d, want Miss", code)
	}
	if got, _ := get(l, 1, "a/7"); got != `{"n":2}` {
		t.Errorf("a rewrite in a full mirror: %q, want the new text", got)
	}
	d.Apply([]core.Change{del("a/8"), set("a/new", `{"n":3}`)})
	if got, _ := get(l, 1, "a/new"); got != `{"n":3}` {
		t.Errorf("after a delete made room: %q, want the new document", got)
	}
	if d.Len() != mirror.MaxDocs {
		t.Errorf("Len = %d, want %d", d.Len(), mirror.MaxDocs)
	}
}

// TestSeed: a mirror seeded from a store loaded before Apply was installed
// holds its documents, and writes after keep it in step.
func TestSeed(t *testing.T) {
	st, err := core.Open(":memory:", core.Options{Node: "A"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	for i := range 20 {
		if _, err := st.Put(ctx, "orders", []byte(fmt.Sprintf(`{"_key":"k%d","n":%d}`, i, i))); err != nil {
			t.Fatal(err)
		}
	}
	d, l := mirror.NewDocs(), mirror.NewLookup()
	l.Add(1, d)
	st.SetJournal(journal{d})
	if err := d.Seed(func(fn func(id, text string) bool) error { return st.EachDocument("", fn) }); err != nil {
		t.Fatal(err)
	}
	if d.Len() != 20 {
		t.Errorf("seeded %d documents, want 20", d.Len())
	}
	if _, err := st.Put(ctx, "orders", []byte(`{"_key":"k3","n":"new"}`)); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete("orders/k4"); err != nil {
		t.Fatal(err)
	}
	sameAsStore(t, st, l, 20)
	d.Close()
	if err := d.Seed(func(fn func(id, text string) bool) error { return st.EachDocument("", fn) }); err != nil || d.Len() != 0 {
		t.Errorf("Seed after Close: %v, %d documents; want none", err, d.Len())
	}
}

// TestSeedInPartsWhileWriting: a mirror that catches up part by part, one
// read transaction each, while another goroutine rewrites and deletes
// documents, ends equal to the store: no part overwrites a later write.
func TestSeedInPartsWhileWriting(t *testing.T) {
	st, err := core.Open(":memory:", core.Options{Node: "A"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	const docs = 2000
	for i := range docs {
		if _, err := st.Put(ctx, "orders", []byte(fmt.Sprintf(`{"_key":"k%04d","n":0}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	d, l := mirror.NewDocs(), mirror.NewLookup()
	l.Add(1, d)
	st.SetJournal(journal{d})

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range docs {
			id := fmt.Sprintf("k%04d", (i*7)%docs)
			var err error
			if i%5 == 0 {
				err = st.Delete("orders/" + id)
			} else {
				_, err = st.Put(ctx, "orders", []byte(fmt.Sprintf(`{"_key":"%s","n":%d}`, id, i+1)))
			}
			if err != nil && !errors.Is(err, core.ErrNotFound) {
				t.Error(err)
				return
			}
			runtime.Gosched()
		}
	}()
	after := ""
	for {
		n := 0
		if err := d.Seed(func(fn func(id, text string) bool) error {
			return st.EachDocument(after, func(id, text string) bool {
				if n == 50 || !fn(id, text) {
					return false
				}
				n, after = n+1, id
				return true
			})
		}); err != nil {
			t.Fatal(err)
		}
		if n < 50 {
			break
		}
		runtime.Gosched()
	}
	wg.Wait()
	for i := range docs {
		id := fmt.Sprintf("orders/k%04d", i)
		want, err := st.GetString(id)
		got, code := get(l, 1, id)
		switch {
		case err != nil && code != mirror.Miss:
			t.Errorf("%s: store has none, mirror has %q", id, got)
		case err == nil && (code != mirror.Hit || got != want):
			t.Errorf("%s: mirror %q (%d), store %q", id, got, code, want)
		}
	}
}

// TestApplyMany: a batch much larger than the mirror (a pull into a new
// store) keeps what it held and adds the whole batch.
func TestApplyMany(t *testing.T) {
	l, d := mirror.NewLookup(), mirror.NewDocs()
	l.Add(1, d)
	d.Apply([]core.Change{set("old/1", `{"n":1}`), set("old/2", `{"n":2}`)})
	chs := make([]core.Change, 5000)
	for i := range chs {
		chs[i] = set("new/"+strconv.Itoa(i), `{"i":`+strconv.Itoa(i)+`}`)
	}
	chs[10] = set("old/2", `{"n":3}`)
	d.Apply(chs)
	for id, want := range map[string]string{"old/1": `{"n":1}`, "old/2": `{"n":3}`, "new/0": `{"i":0}`, "new/4999": `{"i":4999}`} {
		if got, code := get(l, 1, id); got != want {
			t.Errorf("%s: %q (%d), want %q", id, got, code, want)
		}
	}
	if d.Len() != 5001 {
		t.Errorf("Len = %d, want 5001", d.Len())
	}
}

// BenchmarkApply5000: a page of a pull into a new store's mirror.
func BenchmarkApply5000(b *testing.B) {
	chs := make([]core.Change, 5000)
	for i := range chs {
		chs[i] = set("orders/"+strconv.Itoa(i)+"-A", `{"total":1}`)
	}
	for b.Loop() {
		mirror.NewDocs().Apply(chs)
	}
}
