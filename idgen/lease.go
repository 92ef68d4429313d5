package idgen

import (
	"context"
	"fmt"
	"time"
)

// fetch is one in-flight lease that every caller who found the range empty
// waits on.
type fetch struct {
	done chan struct{}
	err  error
}

// reserveRetry is how long a generator waits after a failed background
// lease before it tries again on a later call, so that an offline client
// does not dial the server for every id.
var reserveRetry = time.Second

// lease asks the source for the range after old (nil for the first) and
// checks it.
func (h *HiLo) lease(ctx context.Context, old *window, want int64) (*window, error) {
	var last Range
	if old != nil {
		last = old.r
	}
	var r Range
	var err error
	if s, ok := h.src.(SizedRangeSource); ok && want > 0 {
		r, err = s.NextRangeFor(ctx, h.tag, last, want)
	} else {
		r, err = h.src.NextRange(ctx, h.tag, last)
	}
	if err == nil && !r.valid() {
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

// refill replaces the spent window old with the next reserved range or a
// new lease, or waits for the lease already under way. left is how many
// numbers the caller has yet to take (WithDemand, 0 without): what the
// reserve is short of is asked for by the next lease.
func (h *HiLo) refill(ctx context.Context, old *window, left int64) error {
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
	h.askLocked(left - h.spareNumbersLocked())
	if len(h.spares) > 0 {
		w := h.spares[0]
		h.spares[0] = nil
		h.spares = h.spares[1:]
		h.installLocked(w)
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
	// A bulk write (WithDemand) asks for a range that holds the rest of it,
	// rather than growing range by range, a round trip each.
	nw, err := h.leaseLocked(ctx, old)
	if err == nil && !h.closed {
		h.installLocked(nw)
	}
	h.mu.Unlock()
	return err
}

// leaseLocked leases the range after old, for at least what was asked
// (askLocked), as the fetch under way that other callers wait for. Called
// with h.mu held; it lets go of it during the lease and holds it again
// when it returns.
func (h *HiLo) leaseLocked(ctx context.Context, old *window) (*window, error) {
	f := &fetch{done: make(chan struct{})}
	h.pending = f
	want := h.takeAskLocked()
	h.mu.Unlock()
	nw, err := h.lease(ctx, old, want)
	h.mu.Lock()
	f.err = err
	h.pending, h.leasing = nil, 0
	close(f.done)
	return nw, err
}
