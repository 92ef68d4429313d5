package idgen

import (
	"fmt"
	"time"
)

// reserveLocked returns a copy of the reserved ranges. Called with h.mu held.
func (h *HiLo) reserveLocked() []Range {
	if len(h.spares) == 0 {
		return nil
	}
	rs := make([]Range, len(h.spares))
	for i, s := range h.spares {
		rs[i] = s.r
	}
	return rs
}

// restore installs the journaled ranges that have numbers left. Called with
// h.mu held, before the first lease.
func (h *HiLo) restore() error {
	h.restored = true
	if h.opts.Journal == nil {
		return nil
	}
	rs, ok, err := h.opts.Journal.LoadRanges(h.tag)
	if err != nil {
		return fmt.Errorf("read range journal for %q: %w", h.tag, err)
	}
	if !ok {
		return nil
	}
	var ws []*window
	if c := rs.Current; c.valid() && rs.Mark < c.High {
		ws = append(ws, newWindow(c, max(rs.Mark, c.Low-1), h.opts.Prefetch))
	}
	for _, r := range rs.Reserve {
		if r.valid() {
			ws = append(ws, newWindow(r, r.Low-1, h.opts.Prefetch))
		}
	}
	if len(ws) == 0 {
		return nil
	}
	h.spares = ws[1:]
	h.installLocked(ws[0])
	return nil
}

// installLocked makes w the current window and, with a Reserve, tops the
// reserve up. Called with h.mu held.
func (h *HiLo) installLocked(w *window) {
	h.cur.Store(w)
	if h.opts.Reserve > 0 {
		h.topUpLocked()
	}
}

// swapSpare replaces the spent window old with the first reserved range,
// for a NoWait caller: true when it did, or when another caller already
// replaced old (take again); false when that would mean waiting (no range
// reserved, the lock held, or the generator closed).
func (h *HiLo) swapSpare(old *window) bool {
	if !h.mu.TryLock() {
		return false
	}
	defer h.mu.Unlock()
	if h.closed || !h.restored {
		return false
	}
	if h.cur.Load() != old {
		return true
	}
	if len(h.spares) == 0 {
		return false
	}
	w := h.spares[0]
	h.spares[0] = nil
	h.spares = h.spares[1:]
	h.installLocked(w)
	return true
}

// prefetch starts the background lease that Prefetch asks for when w, the
// current window, reaches its threshold. short is how many numbers a bulk
// write (WithDemand) needs beyond what w has left: that lease asks for what
// the reserve does not hold of them.
func (h *HiLo) prefetch(w *window, short int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur.Load() == w {
		h.askLocked(short - h.spareNumbersLocked())
		h.topUpLocked()
	}
}

// spareNumbersLocked is how many numbers the reserve holds. Called with
// h.mu held.
func (h *HiLo) spareNumbersLocked() int64 {
	var n int64
	for _, s := range h.spares {
		n += s.r.High - s.r.Low + 1
	}
	return n
}

// askLocked makes the next lease hold at least n numbers (a SizedRangeSource
// honours it). Called with h.mu held.
func (h *HiLo) askLocked(n int64) {
	h.ask = max(h.ask, n-h.leasing)
}

// takeAskLocked returns what the next lease is to hold at least, and
// forgets it: the lease about to start takes it. Called with h.mu held.
func (h *HiLo) takeAskLocked() int64 {
	n := h.ask
	h.ask, h.leasing = 0, n
	return n
}

// retryTopUp starts a background lease again once retryDelay has passed
// since the last one failed.
func (h *HiLo) retryTopUp() {
	if time.Now().UnixNano() < h.retryAt.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.topUpLocked()
}

// topUpLocked starts the background goroutine that leases ranges until the
// reserve is full, unless a lease is already under way. Called with h.mu
// held.
func (h *HiLo) topUpLocked() {
	h.retry.Store(false)
	if h.closed || h.pending != nil || h.cur.Load() == nil || len(h.spares) >= h.want {
		return
	}
	f := &fetch{done: make(chan struct{})}
	h.pending = f
	last := h.lastLocked()
	h.wg.Add(1)
	go h.fill(f, last, h.takeAskLocked())
}

// lastLocked returns the window leased last: the newest reserved range, or
// the current one. Called with h.mu held.
func (h *HiLo) lastLocked() *window {
	if n := len(h.spares); n > 0 {
		return h.spares[n-1]
	}
	return h.cur.Load()
}

// fill leases ranges after last, one at a time, until the reserve is full,
// Close is called or a lease fails; the first holds at least want numbers,
// each later one what was asked for meanwhile (askLocked). Each lease is a
// fetch of its own, so callers waiting for a range go on as soon as one
// arrives.
func (h *HiLo) fill(f *fetch, last *window, want int64) {
	defer h.wg.Done()
	for {
		nw, err := h.lease(h.ctx, last, want)
		if err == nil {
			h.reserve(nw)
		}
		h.mu.Lock()
		f.err = err
		h.pending, h.leasing = nil, 0
		close(f.done)
		if err != nil {
			if !h.closed {
				h.retryAt.Store(time.Now().Add(h.retryDelay).UnixNano())
				h.retry.Store(true)
			}
			h.mu.Unlock()
			return
		}
		if h.closed || len(h.spares) >= h.want {
			h.mu.Unlock()
			return
		}
		f = &fetch{done: make(chan struct{})}
		h.pending = f
		last = h.lastLocked()
		want = h.takeAskLocked()
		h.mu.Unlock()
	}
}

// reserve journals nw as the newest reserved range, then adds it to the
// reserve. A failed write does not lose nw: it is journaled as current
// before any number of it is handed out, and a reload without it leases
// anew.
func (h *HiLo) reserve(nw *window) {
	h.jmu.Lock()
	defer h.jmu.Unlock()
	if h.opts.Journal != nil {
		h.mu.Lock()
		cur := h.cur.Load()
		named := cur // the range the journal is to name as current
		reserve := append(h.reserveLocked(), nw.r)
		if h.successorJournaledLocked(cur) {
			// The journal names the first reserved range as current
			// already: it must go on doing so, or a reload could hand out
			// its numbers again.
			named, reserve = h.jcur, reserve[1:]
		}
		h.mu.Unlock()
		if named != nil && h.save(Ranges{Current: named.r, Mark: named.mark.Load(), Reserve: reserve}) == nil {
			h.jcur = named
		}
	}
	h.mu.Lock()
	h.spares = append(h.spares, nw)
	h.mu.Unlock()
}
