package idgen

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
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
	r          Range
	next       atomic.Int64 // last number taken
	mark       atomic.Int64 // numbers up to mark are journaled (with a Journal)
	prefetchAt int64        // taking this number starts the next lease; 0: never
	suffix     string       // "-" + server tag
	arena      atomic.Pointer[arena]
}

func newWindow(r Range, resumeAfter int64, prefetch float64) *window {
	w := &window{r: r, suffix: "-" + r.ServerTag}
	w.next.Store(resumeAfter)
	w.mark.Store(resumeAfter)
	if prefetch > 0 {
		left := int64(float64(r.High-r.Low+1) * prefetch)
		if left < 1 {
			left = 1
		}
		if at := r.High - left + 1; at > resumeAfter {
			w.prefetchAt = at
		} else {
			w.prefetchAt = resumeAfter + 1
		}
	}
	return w
}

// arenaSize is the size of the blocks ids are cut from. One allocation
// serves about arenaSize/len(id) ids; the price is that an id kept alive
// keeps its whole block alive (at most arenaSize bytes).
const arenaSize = 512

// arena is a block that ids are cut from. Bytes below off are taken; each
// id's bytes are written once, by the caller who reserved them, before the
// string is made, and never again, so the strings are immutable.
type arena struct {
	buf []byte
	off atomic.Int64
}

// format returns prefix+n+suffix. The id is cut from the window's current
// arena block (no allocation for most ids), and the digits are written
// straight into it.
func (w *window) format(n int64) string {
	nd := decimalLen(uint64(n))
	size := int64(len(w.r.Prefix) + nd + len(w.suffix))
	if size > arenaSize/4 || n < 0 {
		b := make([]byte, 0, size)
		b = strconv.AppendInt(append(b, w.r.Prefix...), n, 10)
		return string(append(b, w.suffix...))
	}
	for {
		a := w.arena.Load()
		if a != nil {
			if end := a.off.Add(size); end <= arenaSize {
				b := a.buf[end-size : end : end]
				p := copy(b, w.r.Prefix)
				putDecimal(b[p:p+nd], uint64(n))
				for i := 0; i < len(w.suffix); i++ {
					b[p+nd+i] = w.suffix[i]
				}
				return unsafe.String(&b[0], len(b))
			}
		}
		w.arena.CompareAndSwap(a, &arena{buf: make([]byte, arenaSize)})
	}
}

// decimalLen returns the number of decimal digits of v, from its bit
// length (1233/4096 ≈ log10 2) and one comparison.
func decimalLen(v uint64) int {
	if v == 0 {
		return 1
	}
	t := bits.Len64(v) * 1233 >> 12
	if v < pow10[t] {
		return t
	}
	return t + 1
}

var pow10 = [20]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

// putDecimal writes v into b, which is exactly decimalLen(v) long.
func putDecimal(b []byte, v uint64) {
	i := len(b)
	for v >= 100 {
		q := v / 100
		r := (v - q*100) * 2
		i -= 2
		b[i], b[i+1] = digitPairs[r], digitPairs[r+1]
		v = q
	}
	if v >= 10 {
		b[i-2], b[i-1] = digitPairs[v*2], digitPairs[v*2+1]
		return
	}
	b[i-1] = byte('0' + v)
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
	tag  string
	src  RangeSource
	opts Options

	cur atomic.Pointer[window]

	mu       sync.Mutex
	pending  *fetch
	spare    *window // a range leased ahead by prefetching
	closed   bool
	restored bool // the journal was consulted
	jmu      sync.Mutex

	ctx    context.Context // background leases; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Options tune a HiLo beyond RavenDB's behaviour. The zero value is
// RavenDB's: lease when a range runs out, keep nothing.
type Options struct {
	// Prefetch, between 0 and 1, leases the next range in the background
	// when that fraction of the current range is left, so that callers do
	// not wait for a lease while online. 0 turns it off.
	Prefetch float64
	// Journal, when set, keeps the current range and a high-water mark
	// durable, so a generator made after a reload goes on from the journal
	// without a lease and never hands out a number twice.
	Journal Journal
	// JournalStep is how many numbers one journal write covers, at most a
	// quarter of the range in use. Default 64.
	// A crash loses at most this many numbers (they are skipped, never
	// reused).
	JournalStep int64
}

// Journal keeps a HiLo's progress durable on the client (for example in
// IndexedDB beside the store). It is called under the generator's lock,
// at most once every JournalStep numbers, and when a range is closed.
type Journal interface {
	// SaveRange records that r is tag's current range and that no number
	// above mark has been handed out. mark == r.High means r is spent.
	SaveRange(tag string, r Range, mark int64) error
	// LoadRange returns what SaveRange recorded last for tag; ok is false
	// when there is nothing.
	LoadRange(tag string) (r Range, mark int64, ok bool, err error)
}

// NewHiLo returns a generator for tag (the collection's id prefix, e.g.
// "orders") that leases its ranges from src.
func NewHiLo(tag string, src RangeSource) *HiLo {
	return NewHiLoWith(tag, src, Options{})
}

// NewHiLoWith returns a generator for tag with options beyond RavenDB's
// behaviour: prefetching and a durable journal.
func NewHiLoWith(tag string, src RangeSource, opts Options) *HiLo {
	if opts.JournalStep <= 0 {
		opts.JournalStep = 64
	}
	if opts.Prefetch < 0 || opts.Prefetch >= 1 {
		opts.Prefetch = 0
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &HiLo{tag: tag, src: src, opts: opts, ctx: ctx, cancel: cancel}
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
				if n == w.prefetchAt {
					h.prefetch(w)
				}
				if h.opts.Journal != nil && n > w.mark.Load() {
					if err := h.journal(w, n); err != nil {
						return nil, 0, err
					}
				}
				return w, n, nil
			}
		}
		if err := h.refill(ctx, w); err != nil {
			return nil, 0, err
		}
	}
}

// journal makes a mark of at least n durable before n is handed out.
func (h *HiLo) journal(w *window, n int64) error {
	h.jmu.Lock()
	defer h.jmu.Unlock()
	if n <= w.mark.Load() {
		return nil
	}
	// A step of at most a quarter of the range, so a reload skips only part
	// of a small range instead of all of it.
	step := min(h.opts.JournalStep, max(1, (w.r.High-w.r.Low+1)/4))
	mark := min(n+step-1, w.r.High)
	if err := h.opts.Journal.SaveRange(h.tag, w.r, mark); err != nil {
		return fmt.Errorf("journal range for %q: %w", h.tag, err)
	}
	w.mark.Store(mark)
	return nil
}

// restore installs the journaled range, if it has numbers left. Called with
// h.mu held, before the first lease.
func (h *HiLo) restore() error {
	h.restored = true
	if h.opts.Journal == nil {
		return nil
	}
	r, mark, ok, err := h.opts.Journal.LoadRange(h.tag)
	if err != nil {
		return fmt.Errorf("read range journal for %q: %w", h.tag, err)
	}
	if !ok || mark >= r.High || r.High < r.Low || r.Low < 1 {
		return nil
	}
	h.cur.Store(newWindow(r, max(mark, r.Low-1), h.opts.Prefetch))
	return nil
}

// prefetch leases the range after w in the background, once.
func (h *HiLo) prefetch(w *window) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.pending != nil || h.spare != nil || h.cur.Load() != w {
		return
	}
	f := &fetch{done: make(chan struct{})}
	h.pending = f
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		nw, err := h.lease(h.ctx, w)
		h.mu.Lock()
		if err == nil && !h.closed {
			h.spare = nw
		}
		if err != nil {
			f.err = err
		}
		h.pending = nil
		close(f.done)
		h.mu.Unlock()
	}()
}

// lease asks the source for the range after old (nil for the first) and
// checks it.
func (h *HiLo) lease(ctx context.Context, old *window) (*window, error) {
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
	if err != nil {
		return nil, fmt.Errorf("lease range: %w", err)
	}
	return newWindow(r, r.Low-1, h.opts.Prefetch), nil
}

// refill replaces the spent window old with the prefetched range or a new
// lease, or waits for the lease another caller already started.
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
	if old == nil && !h.restored {
		err := h.restore()
		h.mu.Unlock()
		return err
	}
	if h.spare != nil {
		h.cur.Store(h.spare)
		h.spare = nil
		h.mu.Unlock()
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

	nw, err := h.lease(ctx, old)

	h.mu.Lock()
	if err == nil && !h.closed {
		h.cur.Store(nw)
	}
	f.err = err
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

// Close stops the generator, waits for a background lease under way, and,
// when the source can take them back, returns the unused numbers of the
// prefetched and the current range (the prefetched first: the server takes
// a range back only while it is the last one it leased). With a Journal the
// current range is marked spent first, so a reload never reuses numbers
// given back. Calls to NextID after Close fail with ErrClosed, except that
// numbers still left in the current range may be handed out by calls
// already under way.
func (h *HiLo) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
	h.mu.Lock()
	spare := h.spare
	h.spare = nil
	h.mu.Unlock()
	w := h.cur.Swap(nil)
	rr, ok := h.src.(RangeReturner)
	if !ok {
		return nil
	}
	var errs []error
	if spare != nil {
		if err := rr.ReturnRange(ctx, h.tag, spare.r.High, spare.r.Low-1); err != nil {
			errs = append(errs, fmt.Errorf("return range: %w", err))
		}
	}
	if w == nil {
		return errors.Join(errs...)
	}
	// Push next past High so no caller can take another number from w, then
	// return what was not taken.
	last := w.next.Swap(w.r.High + 1)
	if last >= w.r.High {
		return errors.Join(errs...)
	}
	if j := h.opts.Journal; j != nil {
		h.jmu.Lock()
		err := j.SaveRange(h.tag, w.r, w.r.High)
		h.jmu.Unlock()
		if err != nil {
			// Without a durable "spent" mark, giving the numbers back could
			// let a reload reuse them: keep them.
			return errors.Join(append(errs, fmt.Errorf("journal range for %q: %w", h.tag, err))...)
		}
	}
	if err := rr.ReturnRange(ctx, h.tag, w.r.High, last); err != nil {
		errs = append(errs, fmt.Errorf("return range: %w", err))
	}
	return errors.Join(errs...)
}

// Generator holds one HiLo per tag over one RangeSource, created on first use.
//
// A Generator is safe for concurrent use.
type Generator struct {
	src  RangeSource
	opts Options
	mu   sync.RWMutex
	hl   map[string]*HiLo
}

// NewGenerator returns a multi-tag HiLo generator leasing from src.
func NewGenerator(src RangeSource) *Generator {
	return NewGeneratorWith(src, Options{})
}

// NewGeneratorWith returns a multi-tag HiLo generator whose HiLos use opts.
func NewGeneratorWith(src RangeSource, opts Options) *Generator {
	return &Generator{src: src, opts: opts, hl: make(map[string]*HiLo)}
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
		h = NewHiLoWith(tag, g.src, g.opts)
		g.hl[tag] = h
	}
	return h
}

// NextID returns the next HiLo id for tag.
func (g *Generator) NextID(ctx context.Context, tag string) (string, error) {
	return g.For(tag).NextID(ctx)
}

// NextNumber returns the next HiLo number for tag and the server tag of its
// range. The keyOptions generators of package core use it.
func (g *Generator) NextNumber(ctx context.Context, tag string) (int64, string, error) {
	return g.For(tag).NextNumber(ctx)
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
