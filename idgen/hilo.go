package idgen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// HiLo hands out ids prefix+N+"-"+serverTag from ranges leased from a
// RangeSource, one lease per range rather than one round trip per id.
//
// # Concurrency
//
// A HiLo is safe for concurrent use. Taking a number is one atomic add on the
// current range; the range is swapped whole, so a number is taken from exactly
// one range and carries that range's server tag. When the range runs out,
// concurrent callers share one in-flight lease. Leases for the reserve run in
// one background goroutine at a time, which Close waits for.
type HiLo struct {
	tag        string
	src        RangeSource
	opts       Options
	want       int           // ranges to hold in reserve
	retryDelay time.Duration // reserveRetry when made

	cur atomic.Pointer[window]

	// retry is set when a background lease failed and the reserve is
	// short; a call after retryAt (UnixNano) starts another.
	retry   atomic.Bool
	retryAt atomic.Int64

	mu       sync.Mutex
	pending  *fetch    // the lease under way, foreground or background
	ask      int64     // numbers the next lease is to hold at least (WithDemand)
	leasing  int64     // numbers the lease under way was asked to hold at least
	spares   []*window // the reserve, in lease order
	closed   bool
	restored bool // the journal was consulted

	// jmu orders journal writes; it is taken before mu, never after.
	jmu  sync.Mutex
	jcur *window // the window the journal names as Current; under jmu
	// jstep is the step of the last mark written and jat when; under jmu.
	jstep int64
	jat   time.Time

	ctx    context.Context // background leases; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Options tune a HiLo beyond RavenDB's behaviour. The zero value is
// RavenDB's: lease when a range runs out, keep nothing.
type Options struct {
	// Prefetch, between 0 and 1, leases the next range in the background
	// when that fraction of the current range is left, so that callers do
	// not wait for a lease while online. Without a Reserve it holds one
	// range in reserve; with one, the reserve is kept full anyway and
	// Prefetch only adds an earlier top-up. 0 turns it off.
	Prefetch float64
	// Reserve is how many whole ranges to hold leased beyond the current
	// one, for working offline. They are leased in the background as soon
	// as the generator has fewer (after its first lease and whenever a
	// reserved range is swapped in), and again on a later call after a
	// failed lease. When the current range runs out, the next reserved one
	// takes its place without a round trip. 0 holds none (one with
	// Prefetch).
	Reserve int
	// Journal, when set, keeps the current range with a high-water mark
	// and every reserved range durable, so a generator made after a reload
	// goes on from the journal without a lease and never hands out a
	// number twice. A journaled generator keeps its ranges at Close for the
	// next session instead of returning them.
	Journal Journal
	// JournalStep is how many numbers one journal write covers when
	// numbers are taken now and then. Default 64. Under a steady demand
	// (a journal write within busyWithin of the last) each write covers
	// twice as many as the last, up to a quarter of the range in use, so a
	// bulk write of n documents costs a few journal writes, not n/step.
	// A crash loses at most one step of numbers (they are skipped, never
	// reused).
	JournalStep int64
	// JournalAhead writes the next journal step in the background once
	// half of the current one is taken, so that a caller taking numbers
	// one after another rarely waits for the journal (and a NoWait caller
	// rarely meets ErrWouldWait). A crash then skips at most the rest of
	// the current step and the whole next one; nothing is ever reused.
	JournalAhead bool
}

// NewHiLo returns a generator for tag (the collection's id prefix, e.g.
// "orders") that leases its ranges from src.
func NewHiLo(tag string, src RangeSource) *HiLo {
	return NewHiLoWith(tag, src, Options{})
}

// NewHiLoWith returns a generator for tag with options beyond RavenDB's
// behaviour: prefetching, a reserve of ranges and a durable journal.
func NewHiLoWith(tag string, src RangeSource, opts Options) *HiLo {
	if opts.JournalStep <= 0 {
		opts.JournalStep = 64
	}
	if opts.Prefetch < 0 || opts.Prefetch >= 1 {
		opts.Prefetch = 0
	}
	opts.Reserve = max(opts.Reserve, 0)
	want := opts.Reserve
	if want == 0 && opts.Prefetch > 0 {
		want = 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &HiLo{tag: tag, src: src, opts: opts, want: want, retryDelay: reserveRetry, ctx: ctx, cancel: cancel}
}

// Tag returns the HiLo tag this generator leases ranges for.
func (h *HiLo) Tag() string { return h.tag }

// NextID returns the next id, e.g. "orders/1-A". It leases a new range only
// when the current one is spent and no reserved range is left; that lease's
// error (wrapping the RangeSource's) is returned when it fails.
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
	return h.takeWith(ctx, takeOptsOf(ctx)) // one look-up of the context per take
}

// takeWith is take with what ctx tells it already looked up.
func (h *HiLo) takeWith(ctx context.Context, o takeOpts) (*window, int64, error) {
	quick, d := o.noWait, o.demand
	left := d.left() // numbers a bulk write has yet to take, this one included
	for {
		w := h.cur.Load()
		if quick {
			// Only a number the current range (or the reserved range that
			// takes its place) holds, already journaled.
			if w == nil {
				return nil, 0, ErrWouldWait
			}
			next := w.next.Load() + 1
			if next > w.r.High {
				if !h.swapSpare(w) {
					return nil, 0, ErrWouldWait
				}
				continue
			}
			if h.opts.Journal != nil && next > w.mark.Load() {
				return nil, 0, ErrWouldWait
			}
		}
		if w != nil {
			if n := w.next.Add(1); n <= w.r.High {
				if n == w.prefetchAt {
					h.prefetch(w, left-1-(w.r.High-n))
				}
				if h.retry.Load() {
					h.retryTopUp()
				}
				if h.opts.Journal != nil && n > w.mark.Load() {
					if quick {
						return nil, 0, ErrWouldWait // n is skipped, never reused
					}
					// A bulk write's demand past w journals the range after
					// it instead, once for both (journalPast).
					if left-1 <= w.r.High-n || !h.journalPast(ctx, w, n, left) {
						if err := h.journal(w, n, left); err != nil {
							return nil, 0, err
						}
					}
				}
				// Not for a demand past w: its first number past the mark
				// journals the range after w (journalPast), and a write of
				// w's next step meanwhile would only delay that one.
				if at := w.aheadAt.Load(); n >= at && left-1 <= w.r.High-n && w.aheadAt.CompareAndSwap(at, noAhead) {
					h.journalAhead(w)
				}
				d.took()
				return w, n, nil
			}
		}
		if quick {
			if !h.swapSpare(w) {
				return nil, 0, ErrWouldWait
			}
			continue
		}
		if err := h.refill(ctx, w, left); err != nil {
			return nil, 0, err
		}
	}
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

// Reserved returns the ranges held in reserve behind the current one, in
// the order they will be used. With a Journal, each was journaled when it
// was added (unless that write failed).
func (h *HiLo) Reserved() []Range {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reserveLocked()
}

// Close stops the generator and waits for a background lease under way.
// Calls to NextID after Close fail with ErrClosed, except that numbers still
// left in the current range may be handed out by calls already under way.
//
// With a Journal, Close keeps every range for the next session: it journals
// the current range at the last number taken (the next session goes on
// right after it) and the reserve, and returns nothing to the source, since
// the journal still holds those numbers.
//
// Without one, when the source can take them back, Close returns the
// reserved ranges, newest first, then the numbers of the current range
// after the last one taken (the server takes a range back only while it is
// the last one it leased). A number that may have been handed out is never
// returned.
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
	spares := h.spares
	h.spares = nil
	restored := h.restored
	h.mu.Unlock()
	if h.opts.Journal != nil {
		return h.closeJournaled(spares, restored)
	}
	w := h.cur.Swap(nil)
	rr, ok := h.src.(RangeReturner)
	if !ok {
		return nil
	}
	var errs []error
	for i := len(spares) - 1; i >= 0; i-- {
		r := spares[i].r
		if err := rr.ReturnRange(ctx, h.tag, r.High, r.Low-1); err != nil {
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
	if err := rr.ReturnRange(ctx, h.tag, w.r.High, last); err != nil {
		errs = append(errs, fmt.Errorf("return range: %w", err))
	}
	return errors.Join(errs...)
}
