// Package gcfloor keeps Go's garbage collector from running more often than
// a small heap needs.
//
// With GOGC=100 the collector runs each time the heap doubles: a store of a
// few megabytes is collected every few megabytes it allocates, and a bulk
// write or a pull allocates tens of megabytes. Under WebAssembly a cycle is
// dear: there is one thread, so the collector's work and its write barriers
// fall on the caller. Start sets, after every cycle, the percentage so that
// the next goal is at least the live heap plus a floor of headroom; once
// the live heap is past the floor, the percentage is the one the program
// had (GOGC), so a large store costs no more memory than before.
//
// # Wasm
//
// A WebAssembly module's memory never shrinks, so the floor is also what
// the module may keep beyond its largest live heap. Keep it modest (tens of
// megabytes).
package gcfloor

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// maxPercent bounds the percentage Start sets, whatever the floor: a heap of
// a few hundred kilobytes is not given a goal hundreds of times its size.
const maxPercent = 1000

// Start sets the heap goal to at least the heap in use plus floor bytes,
// and makes every garbage-collection cycle set the next goal to at least
// the live heap plus floor bytes, never below the percentage in force when
// Start was called. It returns a function that stops it and restores
// that percentage. Only one Start is in force at a time: a second stops the
// first.
func Start(floor uint64) (stop func()) {
	mu.Lock()
	defer mu.Unlock()
	if current != nil {
		current.stop() // replaced: current is t below
	}
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	t := &tuner{floor: floor, base: base, percent: base}
	current = t
	// The first goal too, from the heap so far: left at GOGC, a new
	// process's first collection comes at 4 MiB, in the middle of its
	// first bulk write or push (and, on a busy machine, with a
	// stop-the-world phase that waits for every thread to be scheduled).
	t.percent = Percent(t.liveHeap(), t.floor, t.base)
	debug.SetGCPercent(t.percent)
	t.arm()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if current == t {
			t.stop()
			current = nil
		}
	}
}

var (
	mu      sync.Mutex
	current *tuner
)

// tuner is one Start in force.
type tuner struct {
	floor   uint64
	base    int // the percentage before Start; negative: collection off
	percent int // the percentage in force, set by the last cycle
	stats   runtime.MemStats
}

// sentinel is garbage made for each cycle: its finalizer runs once the
// cycle that found it unreachable is over.
type sentinel struct{ t *tuner }

func (t *tuner) arm() {
	s := &sentinel{t: t}
	runtime.SetFinalizer(s, func(s *sentinel) { s.t.cycle() })
}

// stop restores the percentage; the caller makes t no longer current, so
// its next cycle does nothing.
func (t *tuner) stop() {
	debug.SetGCPercent(t.base)
}

// cycle runs after each collection (in the finalizer goroutine): it sets
// the percentage for the next goal and arms itself for the next cycle.
func (t *tuner) cycle() {
	mu.Lock()
	defer mu.Unlock()
	if current != t { // stopped, or replaced by a later Start
		return
	}
	t.percent = Percent(t.liveHeap(), t.floor, t.base)
	debug.SetGCPercent(t.percent)
	t.arm()
}

// liveHeap is about what the last cycle found live, worked back from the
// goal it set: Go sets the next goal to the marked heap (and a share of
// the stacks and globals) times 1 + GOGC/100, with the percentage in force.
// It overestimates by about that share, which is small against the floor.
//
// runtime/metrics has the marked heap exactly, but its first read builds
// the runtime's table of every metric: 5 ms under WebAssembly in Node and
// 14 ms in Chromium, in baseline code, during a new page's first bulk
// write. ReadMemStats costs a few hundred microseconds the first time and
// tens after (it stops the world, once a cycle: a short pause beside the
// cycle's own).
func (t *tuner) liveHeap() uint64 {
	if t.percent < 0 {
		return 0 // collection off: no goal to work back from
	}
	runtime.ReadMemStats(&t.stats)
	return t.stats.NextGC * 100 / uint64(100+t.percent)
}

// Percent is the GOGC percentage that gives a live heap of live bytes a
// goal of at least live+floor bytes, never below base nor above 1000.
// A negative base (collection off) is kept as it is.
func Percent(live, floor uint64, base int) int {
	if base < 0 {
		return base
	}
	if live == 0 {
		return max(base, maxPercent)
	}
	p := floor * 100 / live
	if p > maxPercent {
		p = maxPercent
	}
	return max(base, int(p))
}
