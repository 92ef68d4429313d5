package mirror

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// The outcomes of Lookup.Get besides a length: every one of them means
// "take the ordinary path".
const (
	Hit    int32 = 0  // copied (Get returns the length instead)
	Miss   int32 = -1 // no such store, or the document is not in its mirror
	Busy   int32 = -2 // a lock is held: answering could wait
	TooBig int32 = -3 // the text does not fit the output buffer (Grow it)
	BadID  int32 = -4 // the id's length is not within the input buffer
)

const (
	// InSize is the input buffer's size: the longest id, in UTF-8 bytes,
	// the fast path reads (core's longest legal id is shorter).
	InSize = 2048
	// OutStart is the output buffer's first size; Grow raises it up to
	// OutMax for documents read on the ordinary path.
	OutStart = 16 << 10
	// OutMax bounds the output buffer: longer documents always take the
	// ordinary path.
	OutMax = 1 << 20
)

// Lookup is the fast path's state: the mirrors of the open stores by
// number, the input buffer an id is written into and the output buffer a
// document is copied to. Its buffers are allocated up front and replaced
// only by Grow, so Get never allocates.
type Lookup struct {
	in []byte // never replaced

	mu      sync.RWMutex
	stores  map[int32]*Docs
	out     []byte
	outAddr atomic.Uintptr // out's address, readable without the lock
}

// NewLookup returns a Lookup with no stores.
func NewLookup() *Lookup {
	l := &Lookup{stores: make(map[int32]*Docs), in: make([]byte, InSize)}
	l.setOut(make([]byte, OutStart))
	return l
}

func (l *Lookup) setOut(b []byte) {
	l.out = b
	l.outAddr.Store(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// Add makes the store numbered store readable through d.
func (l *Lookup) Add(store int32, d *Docs) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stores[store] = d
}

// Remove forgets the store numbered store.
func (l *Lookup) Remove(store int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.stores, store)
}

// Get looks up the id whose UTF-8 bytes are the first n of the input
// buffer in the mirror of the store numbered store, and copies its JSON
// text to the start of the output buffer. It returns the text's length, or
// a negative code (Miss, Busy, TooBig, BadID) when the ordinary path must
// answer instead. It never waits and never allocates.
func (l *Lookup) Get(store, n int32) int32 {
	if !l.mu.TryRLock() {
		return Busy
	}
	defer l.mu.RUnlock()
	if n < 0 || int(n) > len(l.in) {
		return BadID
	}
	d := l.stores[store]
	if d == nil {
		return Miss
	}
	size, code := d.copyTo(l.out, l.in[:n])
	if code != Hit {
		return code
	}
	return int32(size)
}

// Grow makes the output buffer hold at least size bytes, up to OutMax.
// Call it from the ordinary path when a document did not fit; it returns
// whether the buffer changed (its address then changes too).
func (l *Lookup) Grow(size int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if size <= len(l.out) || size > OutMax {
		return false
	}
	n := len(l.out)
	for n < size {
		n *= 2
	}
	l.setOut(make([]byte, min(n, OutMax)))
	return true
}

// InputAddr returns the input buffer's address in memory (under GOOS=js,
// its offset in the WebAssembly memory). It never changes, and reading it
// takes no lock.
func (l *Lookup) InputAddr() uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(l.in))) }

// OutputAddr returns the output buffer's address in memory. It changes
// when Grow replaces the buffer; reading it takes no lock.
func (l *Lookup) OutputAddr() uintptr { return l.outAddr.Load() }

// In returns the input buffer, for callers that write the id in Go.
func (l *Lookup) In() []byte { return l.in }

// Out returns the output buffer's first n bytes: the text of the last Get
// that returned n.
func (l *Lookup) Out(n int) []byte {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.out[:n]
}

// Put copies text to the start of the output buffer, for the ordinary
// path to answer through it as Get does, and returns its length; false when
// it does not fit (Grow first) and nothing was copied.
func (l *Lookup) Put(text []byte) (int, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(text) > len(l.out) {
		return 0, false
	}
	return copy(l.out, text), true
}
