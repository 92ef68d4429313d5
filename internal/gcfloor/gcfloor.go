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
	"runtime/metrics"
	"sync"
)

// maxPercent bounds the percentage Start sets, whatever the floor: a heap of
// a few hundred kilobytes is not given a goal hundreds of times its size.
const maxPercent = 1000

// Start makes every garbage-collection cycle set the next heap goal to at
// least the live heap plus floor bytes, never below the percentage in force
// when Start was called. It returns a function that stops it and restores
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
	t := &tuner{floor: floor, base: base}
	current = t
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
	floor  uint64
	base   int // the percentage before Start; negative: collection off
	sample [1]metrics.Sample
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
	debug.SetGCPercent(Percent(t.liveHeap(), t.floor, t.base))
	t.arm()
}

func (t *tuner) liveHeap() uint64 {
	t.sample[0].Name = "/gc/heap/live:bytes"
	metrics.Read(t.sample[:])
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return t.sample[0].Value.Uint64()
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
