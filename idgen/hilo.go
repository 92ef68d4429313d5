package idgen

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by a generator after Close.
var ErrClosed = errors.New("id generator closed")

// Range is a leased block of numbers Low…High (inclusive) for one HiLo tag,
// as the sync server hands it out.
type Range struct {
	Prefix      string    // id prefix including the separator, e.g. "orders/"
	Low, High   int64     // first and last number of the range
	LastSize    int64     // capacity of this range, sent back on the next lease
	ServerTag   string    // node tag of the server that leased it, e.g. "A"
	LastRangeAt time.Time // when the server leased it
}

// RangeSource leases HiLo ranges. NextRange returns a new range for tag;
// last is the range the caller used before (zero for the first lease), which
// the server uses to size the next one.
type RangeSource interface {
	NextRange(ctx context.Context, tag string, last Range) (Range, error)
}

// RangeReturner is implemented by range sources that take back the unused
// end of a range, so the numbers are not lost when a generator closes.
type RangeReturner interface {
	ReturnRange(ctx context.Context, tag string, end, last int64) error
}

// window is one leased range being handed out. next is advanced atomically;
// a value past r.High means the range is spent.
type window struct {
	r      Range
	next   atomic.Int64 // last number taken
	suffix string       // "-" + server tag
}

func (w *window) format(n int64) string {
	var buf [64]byte
	b := append(buf[:0], w.r.Prefix...)
	b = strconv.AppendInt(b, n, 10)
	b = append(b, w.suffix...)
	return string(b)
}

// fetch is one in-flight lease that every caller who found the range empty
// waits on.
type fetch struct {
	done chan struct{}
	err  error
}

// HiLo hands out ids prefix+N+"-"+serverTag from ranges leased from a
// RangeSource, one lease per range rather than one round trip per id.
//
// # Concurrency
//
// A HiLo is safe for concurrent use. Taking a number is one atomic add on the
// current range; the range is swapped whole, so a number is taken from exactly
// one range and carries that range's server tag. When the range runs out,
// concurrent callers share one in-flight lease.
type HiLo struct {
	tag string
	src RangeSource

	cur atomic.Pointer[window]

	mu      sync.Mutex
	pending *fetch
	closed  bool
}

// NewHiLo returns a generator for tag (the collection's id prefix, e.g.
// "orders") that leases its ranges from src.
func NewHiLo(tag string, src RangeSource) *HiLo {
	return &HiLo{tag: tag, src: src}
}

// Tag returns the HiLo tag this generator leases ranges for.
func (h *HiLo) Tag() string { return h.tag }

// NextID returns the next id, e.g. "orders/1-A". It leases a new range only
// when the current one is spent.
func (h *HiLo) NextID(ctx context.Context) (string, error) {
	w, n, err := h.take(ctx)
	if err != nil {
		return "", err
	}
	return w.format(n), nil
}

// NextNumber returns the next number and the server tag of the range it came
// from.
func (h *HiLo) NextNumber(ctx context.Context) (int64, string, error) {
	w, n, err := h.take(ctx)
	if err != nil {
		return 0, "", err
	}
	return n, w.r.ServerTag, nil
}

func (h *HiLo) take(ctx context.Context) (*window, int64, error) {
	for {
		w := h.cur.Load()
		if w != nil {
			if n := w.next.Add(1); n <= w.r.High {
				return w, n, nil
			}
		}
		if err := h.refill(ctx, w); err != nil {
			return nil, 0, err
		}
	}
}

// refill replaces the spent window old with a new lease, or waits for the
// lease another caller already started.
func (h *HiLo) refill(ctx context.Context, old *window) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	if h.cur.Load() != old {
		h.mu.Unlock() // someone swapped in a fresh range meanwhile
		return nil
	}
	if f := h.pending; f != nil {
		h.mu.Unlock()
		select {
		case <-f.done:
			return f.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f := &fetch{done: make(chan struct{})}
	h.pending = f
	h.mu.Unlock()

	var last Range
	if old != nil {
		last = old.r
	}
	r, err := h.src.NextRange(ctx, h.tag, last)
	if err == nil && (r.High < r.Low || r.Low < 1) {
		err = fmt.Errorf("lease range for %q: server sent an empty range %d…%d", h.tag, r.Low, r.High)
	}
	if err == nil && old != nil && r.Low <= old.r.High && r.ServerTag == old.r.ServerTag {
		err = fmt.Errorf("lease range for %q: server sent %d…%d, overlapping the previous range %d…%d", h.tag, r.Low, r.High, old.r.Low, old.r.High)
	}

	h.mu.Lock()
	if err == nil {
		nw := &window{r: r, suffix: "-" + r.ServerTag}
		nw.next.Store(r.Low - 1)
		h.cur.Store(nw)
	} else {
		f.err = fmt.Errorf("lease range: %w", err)
	}
	h.pending = nil
	close(f.done)
	h.mu.Unlock()
	return f.err
}

// Current returns the range in use and the last number taken from it; ok is
// false before the first lease.
func (h *HiLo) Current() (r Range, last int64, ok bool) {
	w := h.cur.Load()
	if w == nil {
		return Range{}, 0, false
	}
	last = w.next.Load()
	if last > w.r.High {
		last = w.r.High
	}
	return w.r, last, true
}

// Close stops the generator and, when the source can take them back, returns
// the unused end of the current range. Calls to NextID after Close fail with
// ErrClosed, except that numbers still left in the current range may be
// handed out by calls already under way.
func (h *HiLo) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	w := h.cur.Swap(nil)
	rr, ok := h.src.(RangeReturner)
	if w == nil || !ok {
		return nil
	}
	// Push next past High so no caller can take another number from w, then
	// return what was not taken.
	last := w.next.Swap(w.r.High + 1)
	if last >= w.r.High {
		return nil
	}
	if err := rr.ReturnRange(ctx, h.tag, w.r.High, last); err != nil {
		return fmt.Errorf("return range: %w", err)
	}
	return nil
}

// Generator holds one HiLo per tag over one RangeSource, created on first use.
//
// A Generator is safe for concurrent use.
type Generator struct {
	src RangeSource
	mu  sync.RWMutex
	hl  map[string]*HiLo
}

// NewGenerator returns a multi-tag HiLo generator leasing from src.
func NewGenerator(src RangeSource) *Generator {
	return &Generator{src: src, hl: make(map[string]*HiLo)}
}

// For returns the HiLo for tag, creating it on first use.
func (g *Generator) For(tag string) *HiLo {
	g.mu.RLock()
	h := g.hl[tag]
	g.mu.RUnlock()
	if h != nil {
		return h
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if h = g.hl[tag]; h == nil {
		h = NewHiLo(tag, g.src)
		g.hl[tag] = h
	}
	return h
}

// NextID returns the next HiLo id for tag.
func (g *Generator) NextID(ctx context.Context, tag string) (string, error) {
	return g.For(tag).NextID(ctx)
}

// Close closes every HiLo, returning their unused ranges.
func (g *Generator) Close(ctx context.Context) error {
	g.mu.Lock()
	hs := g.hl
	g.hl = make(map[string]*HiLo)
	g.mu.Unlock()
	var errs []error
	for _, h := range hs {
		errs = append(errs, h.Close(ctx))
	}
	return errors.Join(errs...)
}
