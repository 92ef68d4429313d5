package core

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"unsafe"
)

// The pending marks: the replication state (syncMeta) of every document
// with a local write the server has not acknowledged. They are held in a
// map beside buntdb's tree, not as keys in it: a push of 10,000 documents
// drops 10,000 marks when the server answers, and a bulk write sets as
// many, where under WebAssembly a buntdb delete or set costs about 3 µs
// and a map's a tenth of that. They reach the journal and the snapshots as
// before, as keys dirtyPrefix+id with the encoded syncMeta, so a store's
// stored form is what it was; Replay, LoadChanges and Load take such keys
// into the map.
//
// The marks are read and written only inside the store's transactions:
// written under buntdb's write lock, which excludes every reader, and read
// under its read or write lock; readers that sort the list of ids do so
// under pendingMarks.mu. A write transaction that fails puts back what it
// changed (txn.undo).

// pendingEntry is one document's pending mark.
type pendingEntry struct {
	id   string
	meta syncMeta
	live bool // still marked: the map holds this entry for id
}

// pendingMarks holds a store's pending marks.
type pendingMarks struct {
	m map[string]*pendingEntry // by document id

	// mu guards order, added and dead while a reader sorts them.
	mu sync.Mutex
	// order holds the entries in ascending id order, and perhaps some no
	// longer live (a dropped mark stays until the next merge). A merge
	// makes a new slice: a reader walks the one it was given.
	order []*pendingEntry
	// added holds the entries made since order was last merged, unsorted.
	added []*pendingEntry
	dead  int // about how many entries of order and added are not live

	room int            // the size m was last made for (grow)
	slab []pendingEntry // entries made ahead, 16 to 1,024 at a time
}

func newPendingMarks() *pendingMarks {
	return &pendingMarks{m: make(map[string]*pendingEntry)}
}

// sorted returns the entries in ascending id order, perhaps with some no
// longer live (skip those). The caller holds the store's read or write
// lock, so no mark changes meanwhile.
func (p *pendingMarks) sorted() []*pendingEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.added) == 0 && p.dead <= len(p.m)+64 {
		return p.order
	}
	slices.SortFunc(p.added, func(a, b *pendingEntry) int { return strings.Compare(a.id, b.id) })
	merged := make([]*pendingEntry, 0, len(p.m))
	i, j := 0, 0
	for i < len(p.order) || j < len(p.added) {
		var e *pendingEntry
		if j == len(p.added) || i < len(p.order) && p.order[i].id < p.added[j].id {
			e, i = p.order[i], i+1
		} else {
			e, j = p.added[j], j+1
		}
		if !e.live {
			continue
		}
		if n := len(merged); n > 0 && merged[n-1].id == e.id {
			continue // listed twice (see undoMarks): one live entry an id
		}
		merged = append(merged, e)
	}
	// The added list's array would keep the entries it pointed to (and
	// their allocations) alive: cleared, or let go when it is large.
	if cap(p.added) > 1024 {
		p.added = nil
	} else {
		clear(p.added)
		p.added = p.added[:0]
	}
	p.order, p.dead = merged, 0
	return merged
}

// release lets go of what the marks hold for entries no longer live once
// none is (a push has been acknowledged whole): the sorted list, the
// entries made since, and a map grown for many. Called by a write
// transaction that changed marks, before it commits.
func (p *pendingMarks) release() {
	if len(p.m) > 0 || len(p.order)+len(p.added) == 0 && p.room == 0 {
		return
	}
	p.clearLists()
	if p.room > 0 {
		p.m, p.room = make(map[string]*pendingEntry), 0
	}
}

// reset empties the marks: a load into an empty store failed.
func (p *pendingMarks) reset() {
	p.m, p.room, p.slab = make(map[string]*pendingEntry), 0, nil
	p.clearLists()
}

// clearLists lets go of the sorted and added lists.
func (p *pendingMarks) clearLists() {
	p.mu.Lock()
	p.order, p.added, p.dead = nil, nil, 0
	p.mu.Unlock()
}

// markUndo is what a write transaction changed of one mark: what to put
// back if it fails.
type markUndo struct {
	e    *pendingEntry
	prev syncMeta
	op   uint8 // markChanged, markAdded or markDropped
}

const (
	markChanged = iota
	markAdded
	markDropped
)

// pending returns id's pending mark.
func (t *txn) pending(id string) (syncMeta, bool) {
	if e := t.marks.m[id]; e != nil {
		return e.meta, true
	}
	return syncMeta{}, false
}

// anyPending reports whether any document has a pending mark.
func (t *txn) anyPending() bool { return len(t.marks.m) > 0 }

// setPending marks id pending with state m and records the change. clone
// says whether a new mark copies id: true when it may be a slice of a
// larger text (a request's), false when the mark may keep it as it is.
func (t *txn) setPending(id string, m syncMeta, clone bool) {
	if e := t.marks.m[id]; e != nil {
		t.setEntry(e, m)
		return
	}
	if clone {
		id = strings.Clone(id)
	}
	t.addEntry(id, m)
}

// addEntry marks id, which has no mark and is the caller's to give (not a
// slice of a larger text), pending with state m and records the change.
func (t *txn) addEntry(id string, m syncMeta) {
	p := t.marks
	m = ownRevs(m)
	if len(p.slab) == 0 {
		p.slab = make([]pendingEntry, min(max(t.sizeHint, 16), 1024))
	}
	e := &p.slab[0]
	p.slab = p.slab[1:]
	*e = pendingEntry{id: id, meta: m, live: true}
	p.grow(t.sizeHint)
	p.m[id] = e
	p.added = append(p.added, e)
	t.noteUndo(markUndo{e: e, op: markAdded})
	t.recordMark(e)
}

// grow makes room in m for n more marks at once when it is full, n is
// many and m holds few: a bulk write of 10,000 new documents otherwise
// splits and rehashes the map's tables as it fills, a tenth of the write's
// time under WebAssembly. A map holding many is left to grow as Go grows
// it: copying it would cost more than the splits.
func (p *pendingMarks) grow(n int) {
	if n < 64 || len(p.m) < p.room || len(p.m) > n/8 {
		return
	}
	grown := make(map[string]*pendingEntry, len(p.m)+n)
	for id, e := range p.m {
		grown[id] = e
	}
	p.m, p.room = grown, len(p.m)+n
}

// setEntry gives a live entry the state m and records the change.
func (t *txn) setEntry(e *pendingEntry, m syncMeta) {
	m = ownRevs(m)
	t.noteUndo(markUndo{e: e, prev: e.meta, op: markChanged})
	e.meta = m
	t.recordMark(e)
}

// ownRevs returns m, marked dirty, with its revisions in one string of
// their own: a base is often a slice of something larger (a stored
// document since replaced, a server's reply of thousands), which a mark
// would otherwise keep alive until the server acknowledges it. Without a
// base the revision is kept as it is (Go's concatenation returns a lone
// string uncopied): a new document's, made by nextRev, or one loaded from
// a snapshot or log whose copy the documents loaded with it hold anyway.
func ownRevs(m syncMeta) syncMeta {
	m.Dirty = true
	both := m.Base + m.Rev
	m.Base, m.Rev = both[:len(m.Base)], both[len(m.Base):]
	return m
}

// dropPending forgets id's pending mark, if any, and records the change.
func (t *txn) dropPending(id string) {
	if e := t.marks.m[id]; e != nil {
		t.dropEntry(e)
	}
}

// dropEntry forgets a live entry and records the change.
func (t *txn) dropEntry(e *pendingEntry) {
	t.noteUndo(markUndo{e: e, prev: e.meta, op: markDropped})
	delete(t.marks.m, e.id)
	e.live = false
	t.marks.dead++
	if t.record {
		t.changes = append(t.changes, Change{Key: dirtyPrefix + e.id, Deleted: true})
	}
}

// recordMark records e's state for the journal, as its dirty key: key
// and value made in one allocation.
func (t *txn) recordMark(e *pendingEntry) {
	if !t.record {
		return
	}
	k := len(dirtyPrefix) + len(e.id)
	b := t.markBytes(k + metaOverhead + len(e.meta.Base) + len(e.meta.Rev))
	b = append(append(b, dirtyPrefix...), e.id...)
	b = e.meta.appendTo(b)
	kv := unsafe.String(&b[0], len(b)) // b is not written again
	t.changes = append(t.changes, Change{Key: kv[:k], Value: kv[k:]})
}

// chunkSize is the size of the chunks a transaction of many changes cuts
// small byte slices from (chunked).
const chunkSize = 32 << 10

// chunked returns an empty slice with room for n bytes. A transaction of
// many changes cuts it from the shared chunk *buf, one allocation per few
// hundred slices instead of one each; others, and slices of more than an
// eighth of a chunk, get their own. A chunk lives as long as any slice cut
// from it.
func (t *txn) chunked(buf *[]byte, n int) []byte {
	if t.sizeHint < 64 || n > chunkSize/8 {
		return make([]byte, 0, n)
	}
	if cap(*buf)-len(*buf) < n {
		*buf = make([]byte, 0, chunkSize)
	}
	at := len(*buf)
	*buf = (*buf)[:at+n]
	return (*buf)[at : at : at+n]
}

// markBytes returns room for n bytes of one journaled mark (chunked: a
// bulk write journals a mark per document). The journal copies them into
// its frame at the commit, after which nothing refers to the chunks.
func (t *txn) markBytes(n int) []byte { return t.chunked(&t.markBuf, n) }

// docRoom returns room for n bytes of a document the transaction stores as
// the slice's own bytes (chunked). A chunk then lives as long as any
// document cut from it is stored: at most the size of the write that made
// them.
func (t *txn) docRoom(n int) []byte { return t.chunked(&t.docBuf, n) }

func (t *txn) noteUndo(u markUndo) {
	if t.loading {
		return // a failure empties the marks instead (reset)
	}
	if t.undo == nil && t.sizeHint > 0 {
		t.undo = make([]markUndo, 0, t.sizeHint)
	}
	t.undo = append(t.undo, u)
}

// undoOnError puts the marks back as they were before the transaction
// when it ends with *err set (buntdb rolls back its keys then): from the
// undo log, or, for a load into an empty store, by emptying them.
func (t *txn) undoOnError(err *error) {
	if *err != nil {
		t.undoIndexes()
		t.undoLoaded()
	} else {
		t.endLoaded()
	}
	switch {
	case *err == nil:
	case t.loading:
		t.marks.reset()
	default:
		t.undoMarks()
	}
}

// undoMarks puts back the marks the transaction changed: it failed, and
// buntdb rolls back its keys.
func (t *txn) undoMarks() {
	p := t.marks
	for i := len(t.undo) - 1; i >= 0; i-- {
		u := t.undo[i]
		switch u.op {
		case markChanged:
			u.e.meta = u.prev
		case markAdded:
			delete(p.m, u.e.id)
			u.e.live = false
			p.dead++
		case markDropped:
			u.e.meta, u.e.live = u.prev, true
			p.m[u.e.id] = u.e
			// Listed again, in case a merge has let it go since.
			p.added = append(p.added, u.e)
		}
	}
	t.undo = t.undo[:0]
}

// applyPendingChange applies a stored change of a dirty key (from a
// journal, a snapshot or buntdb's file format) to the marks; clone is
// setPending's.
func (t *txn) applyPendingChange(c Change, clone bool) error {
	id := c.Key[len(dirtyPrefix):]
	if c.Deleted {
		t.dropPending(id)
		return nil
	}
	m, err := decodeMeta(c.Value)
	if err != nil {
		return fmt.Errorf("decode sync state of %q: %w", id, err)
	}
	t.setPending(id, m, clone)
	return nil
}

// walkPending calls fn with each pending mark as the key and value it is
// stored under, in no order (none is needed: loading puts them in the
// map), until fn returns false. The key and value are valid only during
// the call: they are made in one buffer, not one allocation each.
func (t *txn) walkPending(fn func(key, value string) bool) {
	var buf []byte
	for id, e := range t.marks.m {
		buf = append(append(buf[:0], dirtyPrefix...), id...)
		buf = e.meta.appendTo(buf)
		k := len(dirtyPrefix) + len(id)
		if !fn(unsafe.String(&buf[0], k), unsafe.String(&buf[k], len(buf)-k)) {
			return
		}
	}
}

// pendingAfter returns the entries in ascending id order and the index of
// the first whose id is after after (0 for ""); skip those not live.
func (t *txn) pendingAfter(after string) ([]*pendingEntry, int) {
	es := t.marks.sorted()
	if after == "" {
		return es, 0
	}
	return es, sort.Search(len(es), func(i int) bool { return es[i].id > after })
}
