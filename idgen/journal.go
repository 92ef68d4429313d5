package idgen

import (
	"fmt"
	"time"
)

// Ranges is what a HiLo holds leased for one tag, as a Journal keeps it:
// the range in use with its high-water mark, and the ranges held in reserve
// behind it.
type Ranges struct {
	// Current is the range numbers are being taken from; the zero Range
	// when there is none.
	Current Range
	// Mark is the high-water mark of Current: no number of Current above
	// Mark has been handed out. Mark >= Current.High means Current is spent.
	Mark int64
	// Reserve holds ranges leased after Current, in lease order, none of
	// whose numbers has been handed out.
	Reserve []Range
}

// Journal keeps what a HiLo holds leased durable on the client (for
// example in IndexedDB beside the store), so that a generator made after a
// reload goes on from it without a lease, offline as well, and never hands
// out a number twice.
//
// SaveRanges replaces what was saved for tag. It must not return nil before
// rs is durable: a generator hands out a number only once a SaveRanges
// naming it (in Current, at or below Mark) has returned nil, and it swaps a
// reserved range in only through such a call. When SaveRanges fails, the
// previous record must still be there (a write is all or nothing), so that
// the journal never names fewer numbers as handed out than were. The
// generator may keep the Reserve slice it passes; the Journal may too.
//
// A HiLo calls SaveRanges for its tag from one goroutine at a time: at most
// once every JournalStep numbers, when a reserved range is leased, and at
// Close. Generators of different tags sharing a Journal call it
// concurrently. LoadRanges is called once per tag, before the first number;
// ok is false when nothing was saved for tag.
type Journal interface {
	SaveRanges(tag string, rs Ranges) error
	LoadRanges(tag string) (rs Ranges, ok bool, err error)
}

// journal makes the journal cover n, taken from w, before n is handed out,
// and at least the want numbers after it that the caller is about to take
// (WithDemand), as far as w goes.
func (h *HiLo) journal(w *window, n, want int64) error {
	h.jmu.Lock()
	defer h.jmu.Unlock()
	if n <= w.mark.Load() {
		return nil
	}
	h.mu.Lock()
	cur := h.cur.Load()
	reserve := h.reserveLocked()
	// The journal names the range after cur as current already: past
	// every number of cur and of the ranges before it.
	ahead := h.successorJournaledLocked(cur)
	h.mu.Unlock()
	if cur == nil {
		return ErrClosed
	}
	if ahead {
		return nil
	}
	mark := cur.mark.Load()
	step := h.jstep
	if cur == w {
		// A step of at most a quarter of the range, so a reload skips only
		// part of a small range instead of all of it.
		step = h.nextStep(time.Now(), w.r.High-w.r.Low+1)
		mark = min(n+max(step, want)-1, w.r.High)
	} else if h.jcur == cur {
		// w was spent and replaced, and the journal already names its
		// successor as current: a reload starts there, past every number
		// of w.
		return nil
	}
	if err := h.save(Ranges{Current: cur.r, Mark: mark, Reserve: reserve}); err != nil {
		return err
	}
	cur.mark.Store(mark)
	if h.opts.JournalAhead && cur == w {
		// Half-way through what this write covers, the next is written in
		// the background: the next step of w, or, once w is journaled to
		// its end, the range that follows it (journalSuccessor).
		w.aheadAt.Store(n + (mark-n+1)/2)
	}
	h.jcur = cur
	h.jstep, h.jat = step, time.Now()
	return nil
}

// noAhead is a window's aheadAt when no background journal write is due.
const noAhead = int64(1<<63 - 1)

// journalAhead writes w's next journal step in a background goroutine
// (JournalAhead), which Close waits for. Its failure is left for the caller
// that reaches the mark to meet: that caller writes the step itself.
func (h *HiLo) journalAhead(w *window) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		if w.mark.Load() < w.r.High {
			_ = h.journal(w, w.mark.Load()+1, 0)
		} else {
			h.journalSuccessor(w)
		}
	}()
}

// successorJournaledLocked reports whether the journal names the first
// reserved range as current while cur is still in use (journalSuccessor).
// Called with h.jmu and h.mu held.
func (h *HiLo) successorJournaledLocked(cur *window) bool {
	return cur != nil && h.jcur != nil && h.jcur != cur && len(h.spares) > 0 && h.jcur == h.spares[0]
}

// journalSuccessor journals the first reserved range as current, with a
// first step, while w, journaled to its end, is still in use: when w is
// spent and that range swapped in, its first numbers need no journal write.
// From then on the journal no longer names w: a reload goes on in the
// successor, past every number w handed out. Nothing is done when the
// journal does not name w as current or no range is reserved yet (the swap
// journals it then, as without JournalAhead). A failed write changes
// nothing. Called in the background (journalAhead).
func (h *HiLo) journalSuccessor(w *window) {
	h.jmu.Lock()
	defer h.jmu.Unlock()
	h.mu.Lock()
	if h.cur.Load() != w || h.jcur != w || w.mark.Load() < w.r.High || len(h.spares) == 0 {
		h.mu.Unlock()
		return
	}
	next := h.spares[0]
	rest := h.reserveLocked()[1:]
	h.mu.Unlock()
	step := h.nextStep(time.Now(), next.r.High-next.r.Low+1)
	mark := min(next.r.Low-1+step, next.r.High)
	if h.save(Ranges{Current: next.r, Mark: mark, Reserve: rest}) != nil {
		return
	}
	next.mark.Store(mark)
	next.aheadAt.Store(next.r.Low + (mark-next.r.Low+1)/2)
	h.jcur = next
	h.jstep, h.jat = step, time.Now()
}

// busyWithin is how soon after the last journal write the next one must
// come for its step to double.
const busyWithin = 100 * time.Millisecond

// nextStep returns how many numbers the next journal write covers, in a
// range of size numbers: JournalStep after a quiet spell, twice the last
// step while numbers go fast, never over a quarter of the range. Called
// with h.jmu held.
func (h *HiLo) nextStep(now time.Time, size int64) int64 {
	step := h.opts.JournalStep
	if h.jstep > 0 && now.Sub(h.jat) < busyWithin {
		step = max(step, 2*h.jstep)
	}
	return min(step, max(1, size/4))
}

// save writes rs to the journal. Called with h.jmu held.
func (h *HiLo) save(rs Ranges) error {
	if err := h.opts.Journal.SaveRanges(h.tag, rs); err != nil {
		return fmt.Errorf("journal ranges for %q: %w", h.tag, err)
	}
	return nil
}

// closeJournaled journals the ranges a closing generator keeps: the current
// one, closed to further numbers, and spares.
func (h *HiLo) closeJournaled(spares []*window, restored bool) error {
	h.jmu.Lock()
	defer h.jmu.Unlock()
	w := h.cur.Load()
	if w == nil && len(spares) == 0 && !restored {
		return nil // never used: what the journal holds stays for the next session
	}
	var rs Ranges
	if w != nil {
		// Push next past High so no caller can take another number from w.
		// Numbers up to last may be handed out, none after it; a caller
		// still waiting to journal its number is covered as well. So the
		// mark comes down to last: the next session goes on right after the
		// last number taken, skipping none of those journaled ahead. (Should
		// this write fail, the record before it, with the higher mark,
		// stays: safe too.)
		last := min(w.next.Swap(w.r.High+1), w.r.High)
		rs.Current, rs.Mark = w.r, last
	}
	for _, s := range spares {
		rs.Reserve = append(rs.Reserve, s.r)
	}
	if err := h.save(rs); err != nil {
		return err // the journal still holds an earlier, safe record
	}
	if w != nil {
		w.mark.Store(rs.Mark)
	}
	h.cur.Store(nil)
	h.jcur = nil
	return nil
}
