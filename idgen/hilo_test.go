package idgen_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hilodb/hilodb/idgen"
)

// memSource leases ranges from memory the way the server does, with a fixed
// size, counting leases. It can be told to fail.
type memSource struct {
	mu     sync.Mutex
	max    map[string]int64
	size   int64
	tag    string
	leases atomic.Int64
	fails  atomic.Int64 // leases refused while failing
	fail   atomic.Bool
	delay  time.Duration
	ret    []string
}

// errOffline is what memSource fails with while told to.
var errOffline = errors.New("offline")

func newMemSource(size int64) *memSource {
	return &memSource{max: map[string]int64{}, size: size, tag: "A"}
}

func (m *memSource) NextRange(ctx context.Context, tag string, last idgen.Range) (idgen.Range, error) {
	if m.delay > 0 {
		time.Sleep(m.delay)
	}
	if m.fail.Load() {
		m.fails.Add(1)
		return idgen.Range{}, errOffline
	}
	m.leases.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	low := m.max[tag] + 1
	m.max[tag] += m.size
	return idgen.Range{Prefix: tag + "/", Low: low, High: m.max[tag], LastSize: m.size, ServerTag: m.tag, LastRangeAt: time.Now()}, nil
}

func (m *memSource) ReturnRange(ctx context.Context, tag string, end, last int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ret = append(m.ret, fmt.Sprintf("%s:%d:%d", tag, end, last))
	if m.max[tag] == end {
		m.max[tag] = last
	}
	return nil
}

func TestHiLoSequence(t *testing.T) {
	h := idgen.NewHiLo("orders", newMemSource(3))
	ctx := context.Background()
	want := []string{"orders/1-A", "orders/2-A", "orders/3-A", "orders/4-A", "orders/5-A"}
	for i, w := range want {
		got, err := h.NextID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got != w {
			t.Errorf("id %d: got %q, want %q", i, got, w)
		}
	}
}

func TestHiLoTagOfRange(t *testing.T) {
	src := newMemSource(2)
	h := idgen.NewHiLo("orders", src)
	ctx := context.Background()
	var got []string
	for i := 0; i < 4; i++ {
		if i == 2 {
			src.mu.Lock()
			src.tag = "B" // the next range comes from another server
			src.mu.Unlock()
		}
		id, err := h.NextID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	want := "orders/1-A orders/2-A orders/3-B orders/4-B"
	if strings.Join(got, " ") != want {
		t.Errorf("got %v, want %s", got, want)
	}
}

// TestHiLoConcurrentUnique takes 16 × 50,000 ids at once from small ranges
// and finds every one distinct and well formed.
func TestHiLoConcurrentUnique(t *testing.T) {
	const goroutines, each = 16, 50_000
	src := newMemSource(32)
	h := idgen.NewHiLo("orders", src)
	ids := make([][]string, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := make([]string, 0, each)
			for range each {
				id, err := h.NextID(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				out = append(out, id)
			}
			ids[g] = out
		}()
	}
	wg.Wait()
	seen := make(map[string]struct{}, goroutines*each)
	re := regexp.MustCompile(`^orders/([1-9][0-9]*)-A$`)
	var maxN int64
	for _, out := range ids {
		for _, id := range out {
			m := re.FindStringSubmatch(id)
			if m == nil {
				t.Fatalf("malformed id %q", id)
			}
			if _, dup := seen[id]; dup {
				t.Fatalf("duplicate id %q", id)
			}
			seen[id] = struct{}{}
			n, _ := strconv.ParseInt(m[1], 10, 64)
			maxN = max(maxN, n)
		}
	}
	if len(seen) != goroutines*each {
		t.Fatalf("got %d ids, want %d", len(seen), goroutines*each)
	}
	// Ranges are used whole: no number was skipped.
	if maxN != goroutines*each {
		t.Errorf("highest number %d, want %d (numbers were skipped)", maxN, goroutines*each)
	}
	if l := src.leases.Load(); l != goroutines*each/32 {
		t.Errorf("leases: got %d, want %d (one lease per range)", l, goroutines*each/32)
	}
}

// TestHiLoSharedFetch checks that callers who find the range spent at the
// same moment share one lease.
func TestHiLoSharedFetch(t *testing.T) {
	src := newMemSource(1000)
	src.delay = 50 * time.Millisecond
	h := idgen.NewHiLo("orders", src)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h.NextID(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if l := src.leases.Load(); l != 1 {
		t.Errorf("leases: got %d, want 1", l)
	}
}

func TestHiLoLeaseErrorThenRecover(t *testing.T) {
	src := newMemSource(2)
	h := idgen.NewHiLo("orders", src)
	ctx := context.Background()
	src.fail.Store(true)
	if _, err := h.NextID(ctx); err == nil || !strings.Contains(err.Error(), "offline") {
		t.Fatalf("got %v, want the lease error", err)
	}
	src.fail.Store(false)
	id, err := h.NextID(ctx)
	if err != nil || id != "orders/1-A" {
		t.Fatalf("got %q, %v; want orders/1-A", id, err)
	}
}

func TestHiLoCloseReturnsUnused(t *testing.T) {
	src := newMemSource(32)
	h := idgen.NewHiLo("orders", src)
	ctx := context.Background()
	for range 5 {
		if _, err := h.NextID(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(src.ret, ","); got != "orders:32:5" {
		t.Errorf("returned %q, want orders:32:5", got)
	}
	if _, err := h.NextID(ctx); !errors.Is(err, idgen.ErrClosed) {
		t.Errorf("after close: got %v, want ErrClosed", err)
	}
	// The next generator continues right after the returned numbers.
	h2 := idgen.NewHiLo("orders", src)
	if id, _ := h2.NextID(ctx); id != "orders/6-A" {
		t.Errorf("after return: got %q, want orders/6-A", id)
	}
}

func TestHiLoContextCancelWhileWaiting(t *testing.T) {
	src := newMemSource(10)
	src.delay = 300 * time.Millisecond
	h := idgen.NewHiLo("orders", src)
	go h.NextID(context.Background()) // starts the slow lease
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := h.NextID(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want deadline exceeded", err)
	}
}

func TestGeneratorPerTag(t *testing.T) {
	g := idgen.NewGenerator(newMemSource(32))
	ctx := context.Background()
	a, _ := g.NextID(ctx, "orders")
	b, _ := g.NextID(ctx, "users")
	c, _ := g.NextID(ctx, "orders")
	if a != "orders/1-A" || b != "users/1-A" || c != "orders/2-A" {
		t.Errorf("got %s %s %s", a, b, c)
	}
}

// TestGeneratorForConcurrently has goroutines ask for new tags at once:
// each tag gets one HiLo, whoever asks, and no id is handed out twice.
func TestGeneratorForConcurrently(t *testing.T) {
	g := idgen.NewGenerator(newMemSource(8))
	ctx := context.Background()
	tags := []string{"a", "b", "c", "d", "e", "f"}
	const workers, per = 8, 200
	hs := make([][]*idgen.HiLo, workers)
	ids := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				tag := tags[(i+w)%len(tags)]
				hs[w] = append(hs[w], g.For(tag))
				id, err := g.NextID(ctx, tag)
				if err != nil {
					t.Error(err)
					return
				}
				ids[w] = append(ids[w], id)
			}
		}()
	}
	wg.Wait()
	for _, tag := range tags {
		h := g.For(tag)
		for w := range workers {
			for i, got := range hs[w] {
				if tags[(i+w)%len(tags)] == tag && got != h {
					t.Fatalf("tag %q: two HiLos", tag)
				}
			}
		}
	}
	seen := map[string]bool{}
	for _, list := range ids {
		for _, id := range list {
			if seen[id] {
				t.Fatalf("id %q handed out twice", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != workers*per {
		t.Fatalf("%d ids, want %d", len(seen), workers*per)
	}
}

func ExampleHiLo() {
	h := idgen.NewHiLo("orders", newMemSource(32))
	id, _ := h.NextID(context.Background())
	fmt.Println(id)
	// Output: orders/1-A
}

// TestFormatDigits checks ids at every digit count and across range
// boundaries against strconv.
func TestFormatDigits(t *testing.T) {
	ctx := context.Background()
	for _, low := range []int64{1, 9, 10, 99, 100, 999_999, 1 << 31, 1<<53 - 3, 1<<62 + 7} {
		src := &fixedSource{low: low, high: low + 3}
		h := idgen.NewHiLo("p", src)
		for n := low; n <= low+3; n++ {
			id, err := h.NextID(ctx)
			if want := "p/" + strconv.FormatInt(n, 10) + "-Z"; err != nil || id != want {
				t.Fatalf("got %q %v, want %q", id, err, want)
			}
		}
	}
	// A prefix too long for the arena still formats.
	long := strings.Repeat("x", 300) + "/"
	h := idgen.NewHiLo("x", &fixedSource{prefix: long, low: 5, high: 6})
	if id, _ := h.NextID(ctx); id != long+"5-Z" {
		t.Errorf("long prefix: %q", id)
	}
}

// fixedSource hands out one range.
type fixedSource struct {
	prefix    string
	low, high int64
}

func (f *fixedSource) NextRange(ctx context.Context, tag string, last idgen.Range) (idgen.Range, error) {
	if last.High != 0 {
		return idgen.Range{}, errors.New("spent")
	}
	p := f.prefix
	if p == "" {
		p = tag + "/"
	}
	return idgen.Range{Prefix: p, Low: f.low, High: f.high, ServerTag: "Z"}, nil
}

func TestDecimalLenViaIDs(t *testing.T) {
	// Every power of ten and its neighbours, through the public path.
	ctx := context.Background()
	for p := int64(1); p > 0 && p < 1<<62; p *= 10 {
		for _, n := range []int64{p - 1, p, p + 1} {
			if n < 1 {
				continue
			}
			h := idgen.NewHiLo("q", &fixedSource{low: n, high: n})
			id, err := h.NextID(ctx)
			if want := "q/" + strconv.FormatInt(n, 10) + "-Z"; err != nil || id != want {
				t.Fatalf("got %q %v, want %q", id, err, want)
			}
		}
	}
}
