package idgen

import (
	"context"
	"runtime"
	"time"
)

// journalPast journals a demand that goes past w in one write: the caller
// is about to take n and want-1 numbers after it, more than w holds from n
// on. Journaling w to its end, leasing the next range and journaling that
// one would be two journal writes, each a flushed write to the disk in a
// browser, one after the other. Instead, the range after w (the first
// reserved one, leased now when none is) is journaled as current, marked
// for the numbers of the demand it is to give. A reload then goes on in
// that range, past every number of w, so w needs no journal write of its
// own (as after journalSuccessor). It reports false when it did not (w is
// no longer current, or the lease or the write failed): the caller
// journals w as before.
func (h *HiLo) journalPast(ctx context.Context, w *window, n, want int64) bool {
	short := want - (w.r.High - n + 1) // what the demand takes after w
	nw, ok := h.successor(ctx, w, short)
	if !ok {
		return false
	}
	h.jmu.Lock()
	defer h.jmu.Unlock()
	if w.mark.Load() >= w.r.High {
		return true // w is journaled to its end, or past it, meanwhile
	}
	h.mu.Lock()
	if h.closed || h.cur.Load() != w || len(h.spares) == 0 || h.spares[0] != nw {
		h.mu.Unlock()
		return false
	}
	if h.jcur == nw {
		// Named as current already (journalSuccessor): past w too.
		h.mu.Unlock()
		w.mark.Store(w.r.High)
		return true
	}
	rest := h.reserveLocked()[1:]
	h.mu.Unlock()
	step := h.nextStep(time.Now(), nw.r.High-nw.r.Low+1)
	mark := min(nw.r.Low-1+max(step, short), nw.r.High)
	if h.save(Ranges{Current: nw.r, Mark: mark, Reserve: rest}) != nil {
		return false
	}
	nw.mark.Store(mark)
	if h.opts.JournalAhead {
		nw.aheadAt.Store(nw.r.Low + (mark-nw.r.Low+1)/2)
	}
	// The journal is past every number of w: none needs a write now.
	w.mark.Store(w.r.High)
	h.jcur = nw
	h.jstep, h.jat = step, time.Now()
	return true
}

// successor returns the first reserved range, the one to follow w,
// leasing it now (for at least short numbers) when none is reserved, or
// waiting for the lease under way. The range it leases is reserved
// without a journal write: it is journaled as current before any of its
// numbers is handed out (journalPast, or the take that swaps it in), and
// Close journals it with the rest of the reserve. ok is false when w is no
// longer current, the generator is closed or the lease failed.
func (h *HiLo) successor(ctx context.Context, w *window, short int64) (*window, bool) {
	for {
		h.mu.Lock()
		if h.closed || h.cur.Load() != w {
			h.mu.Unlock()
			return nil, false
		}
		if len(h.spares) > 0 {
			s := h.spares[0]
			h.mu.Unlock()
			return s, true
		}
		if f := h.pending; f != nil {
			h.mu.Unlock()
			select {
			case <-f.done:
				if f.err != nil {
					return nil, false
				}
				continue
			case <-ctx.Done():
				return nil, false
			}
		}
		h.askLocked(short)
		nw, err := h.leaseLocked(ctx, w)
		if err != nil || h.closed || h.cur.Load() != w {
			h.mu.Unlock()
			return nil, false
		}
		h.spares = append(h.spares, nw)
		h.mu.Unlock()
	}
}

// Prepare readies the HiLo, in the background, for a bulk write about to
// take about want numbers: when they go past the current range, the range
// after it is leased and journaled for them now (journalPast); in a new
// generator the first range is leased, and a current range the demand
// fits is journaled for it. The bulk write's takes then find that done, or
// wait for it rather than start it. Prepare takes no number; an error is
// left for the takes to meet. Close waits for it. It lets the work run
// (runtime.Gosched) until it waits for the source or the journal, so that
// under WebAssembly, where goroutines take turns on one thread, the lease
// is on its way before the caller goes on.
func (h *HiLo) Prepare(want int) {
	if want < 2 {
		return
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.wg.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.wg.Done()
		h.prepare(h.ctx, int64(want))
	}()
	runtime.Gosched()
}

func (h *HiLo) prepare(ctx context.Context, want int64) {
	w := h.cur.Load()
	for i := 0; w == nil && i < 2; i++ {
		// The first restores what the journal holds; a second leases.
		if h.refill(ctx, nil, want) != nil {
			return
		}
		w = h.cur.Load()
	}
	if w == nil {
		return
	}
	n := w.next.Load() + 1
	switch {
	case n > w.r.High:
		// Spent: the first take swaps in the next range or leases it.
	case want-1 > w.r.High-n:
		if h.opts.Journal != nil {
			h.journalPast(ctx, w, n, want)
		} else {
			h.successor(ctx, w, want-(w.r.High-n+1))
		}
	case h.opts.Journal != nil && n > w.mark.Load():
		_ = h.journal(w, n, want)
	}
}

// NextIDs fills ids with the next len(ids) ids, in order: what as many
// NextID calls would give, with one look-up of the context for all of
// them. Without a demand in ctx (WithDemand), the batch is one of
// len(ids). It returns how many it filled, fewer only with an error.
func (h *HiLo) NextIDs(ctx context.Context, ids []string) (int, error) {
	o := takeOptsOf(ctx)
	if o.demand == nil {
		o.demand = &demandLeft{}
		o.demand.n.Store(int64(len(ids)))
	}
	for i := range ids {
		w, n, err := h.takeWith(ctx, o)
		if err != nil {
			return i, err
		}
		ids[i] = w.format(n)
	}
	return len(ids), nil
}

// NextIDs fills ids with the next HiLo ids for tag (HiLo.NextIDs).
func (g *Generator) NextIDs(ctx context.Context, tag string, ids []string) (int, error) {
	return g.For(tag).NextIDs(ctx, ids)
}

// Prepare readies tag's HiLo for a bulk write about to take about want
// numbers (HiLo.Prepare).
func (g *Generator) Prepare(tag string, want int) { g.For(tag).Prepare(want) }
