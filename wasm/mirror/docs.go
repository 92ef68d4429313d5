package mirror

import (
	"sync"

	"github.com/hilodb/hilodb/core"
)

// MaxDocs bounds how many documents a mirror holds (about 52 bytes each
// beyond the text, which it shares with the store): once full it takes no
// new ones, and reads of those take the ordinary path.
const MaxDocs = 200_000

// Docs is a copy of one store's documents by id: their JSON text as the
// store holds it. It holds the documents written since it was installed and
// those read through Fill (up to MaxDocs), never a version older than the
// store's.
type Docs struct {
	mu     sync.RWMutex
	docs   map[string]string
	gen    uint64 // counts Apply calls: a Fill read before one is dropped
	closed bool
}

// NewDocs returns an empty mirror.
func NewDocs() *Docs { return &Docs{docs: make(map[string]string)} }

// Apply records a write transaction's changes: documents set and deleted.
// Call it for every write transaction of the store, before the transaction
// commits or while it still holds the store's write lock, and not from a
// read that must not wait (it may allocate and wait for the lock).
func (d *Docs) Apply(changes []core.Change) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen++
	if d.closed {
		return
	}
	d.reserve(len(changes))
	for _, ch := range changes {
		id, ok := core.DocIDOf(ch)
		if !ok {
			continue
		}
		if ch.Deleted {
			delete(d.docs, id)
		} else {
			d.put(id, ch.Value)
		}
	}
}

// Gen returns the mirror's generation: pass it to Fill with a document read
// from the store after Gen returned.
func (d *Docs) Gen() uint64 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.gen
}

// Fill records id's text, read from the store after Gen returned gen,
// unless a write transaction was applied since: the text could be older
// than that write.
func (d *Docs) Fill(gen uint64, id, text string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.gen != gen {
		return
	}
	d.put(id, text)
}

// reserve makes room for n more documents at once when n is large beside
// what the mirror holds (a pull or bulk write of thousands into a new
// store): the map is then built at its size instead of growing a doubling
// at a time, each growth hashing every id again.
func (d *Docs) reserve(n int) {
	held := len(d.docs)
	if n < 1024 || n <= held || held >= MaxDocs {
		return
	}
	m := make(map[string]string, min(held+n, MaxDocs))
	for id, text := range d.docs {
		m[id] = text
	}
	d.docs = m
}

// put sets id's text: always when id is held already (it must not stay
// behind the store), else only below MaxDocs.
func (d *Docs) put(id, text string) {
	if len(d.docs) < MaxDocs {
		d.docs[id] = text // one hash of id: a bulk write puts thousands
		return
	}
	if _, held := d.docs[id]; held {
		d.docs[id] = text
	}
}

// Seed fills the mirror, up to MaxDocs, with the documents scan passes to
// its function. scan must pass the store's documents while no write can
// commit and apply (core.Store.EachDocument: one read transaction), so the
// mirror starts in step with a store loaded before Apply was installed.
func (d *Docs) Seed(scan func(fn func(id, text string) bool) error) error {
	// The lock is taken inside the scan, after the store's read lock, the
	// order Apply takes them in (the store's write lock, then this one).
	locked := false
	defer func() {
		if locked {
			d.mu.Unlock()
		}
	}()
	return scan(func(id, text string) bool {
		if !locked {
			d.mu.Lock()
			locked = true
		}
		if d.closed || len(d.docs) >= MaxDocs {
			return false
		}
		d.docs[id] = text
		return true
	})
}

// Close empties the mirror; reads from it miss from now on.
func (d *Docs) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	d.docs = nil
}

// Len returns how many documents the mirror holds.
func (d *Docs) Len() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return len(d.docs)
}

// copyTo copies id's text into dst without waiting and without allocating.
// It returns the text's length and Hit, or a negative code: Miss, Busy, or
// TooBig (n is then the length that would fit it).
func (d *Docs) copyTo(dst, id []byte) (n int, code int32) {
	if !d.mu.TryRLock() {
		return 0, Busy
	}
	// Indexing with string(id) does not allocate (the compiler reads the
	// bytes in place).
	text, ok := d.docs[string(id)]
	switch {
	case !ok:
		code = Miss
	case len(text) > len(dst):
		n, code = len(text), TooBig
	default:
		n, code = copy(dst, text), Hit
	}
	d.mu.RUnlock()
	return n, code
}
