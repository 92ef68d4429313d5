// Package loaded holds the items a store was loaded with (a snapshot's,
// handed in key order one by one, or as one table of where each is in the
// snapshot's bytes), read in place instead of inserted into buntdb's tree
// one by one: a reopen of 100,000 documents spent about a third of its
// time on those inserts, and, in a browser, about half of what was left on
// adding the items one by one.
//
// The store (package core) keeps what is written after the load in
// buntdb's tree; an item written or deleted since is marked gone here, and
// a key buntdb holds hides a loaded one of the same key. Its reads merge
// the two, so the rest of the store sees one tree. A List is changed only
// in the store's write transactions and read in any, so buntdb's lock
// guards it as it guards the tree; a failed transaction puts back what it
// changed (Undo).
package loaded

import (
	"slices"

	"github.com/hilodb/hilodb/core/query"
)

// List is the items of the last load, in key order.
type List struct {
	keys, vals []string // in key order, added one by one (Add)
	table      *Table   // or a snapshot's table read in place (UseTable)
	gone       []uint64 // bit i: item i was written or deleted since
	live       int      // the items not gone

	// The write transaction's undo (one runs at a time, under the store's
	// write lock): the items it marked gone, and what the list held before
	// it let the whole list go (nil: it did not). Kept here rather than in
	// each transaction, which every read allocates.
	undo []int
	was  *List
}

// Keep keeps what the list holds for a failure of the write transaction
// to put back, once per transaction: before it lets the list go (Reset).
func (l *List) Keep() {
	if l.was != nil {
		return
	}
	l.undoGone() // what a failure puts back is what the transaction found
	was := *l
	was.undo, was.was = nil, nil
	l.was = &was
}

// Reset empties the list (Keep first, to be able to put it back).
func (l *List) Reset() {
	undo, was := l.undo[:0], l.was
	*l = List{undo: undo, was: was}
}

// Drop marks item i gone, to be put back if the write transaction fails.
func (l *List) Drop(i int) {
	l.setGone(i, true)
	l.undo = append(l.undo, i)
}

// Hide marks item i gone for good: a load's, which has no undo.
func (l *List) Hide(i int) { l.setGone(i, true) }

// Undo puts back what the failed write transaction changed: the items it
// marked gone, and the list a Reset in it let go.
func (l *List) Undo() {
	l.undoGone()
	if l.was != nil {
		undo := l.undo
		*l = *l.was
		l.undo = undo
	}
}

// Commit forgets the undo of the write transaction that succeeded.
func (l *List) Commit() {
	l.undo, l.was = l.undo[:0], nil
}

// undoGone puts back the items marked gone since the transaction began.
func (l *List) undoGone() {
	for _, i := range slices.Backward(l.undo) {
		l.setGone(i, false)
	}
	l.undo = l.undo[:0]
}

// Len returns how many items the list holds, gone ones included.
func (l *List) Len() int {
	if l.table != nil {
		return l.table.Len()
	}
	return len(l.keys)
}

// Live returns how many items are not gone.
func (l *List) Live() int { return l.live }

// Key returns item i's key.
func (l *List) Key(i int) string {
	if l.table != nil {
		return l.table.Key(i)
	}
	return l.keys[i]
}

// Val returns item i's value.
func (l *List) Val(i int) string {
	if l.table != nil {
		return l.table.Doc(i)
	}
	return l.vals[i]
}

// UseTable makes a snapshot's table, its rows in ascending key order and
// within text, the whole list (which must be empty): nothing is read of
// it until it is asked for.
func (l *List) UseTable(text string, rows []Row) {
	l.table = &Table{text, rows}
	l.gone, l.live = make([]uint64, (len(rows)+63)/64), len(rows)
}

// Docs returns the list's items as a restored index reads its documents:
// as the list holds them now, whatever it holds later.
func (l *List) Docs() query.Docs {
	if l.table != nil {
		return l.table
	}
	return listDocs{l.keys, l.vals}
}

// Find returns where key's live item is, if there is one.
func (l *List) Find(key string) (int, bool) {
	if l.live == 0 {
		return 0, false
	}
	i := l.From(key)
	if i == l.Len() || l.Key(i) != key || l.IsGone(i) {
		return 0, false
	}
	return i, true
}

// From returns where the items of keys at or after key start.
func (l *List) From(key string) int {
	lo, hi := 0, l.Len()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l.Key(m) < key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// IsGone reports whether item i was written or deleted since the load.
func (l *List) IsGone(i int) bool { return l.gone[i>>6]&(1<<(i&63)) != 0 }

// setGone marks item i gone (or live again, for an undo).
func (l *List) setGone(i int, gone bool) {
	if gone {
		l.gone[i>>6] |= 1 << (i & 63)
		l.live--
	} else {
		l.gone[i>>6] &^= 1 << (i & 63)
		l.live++
	}
}

// Add appends an item whose key is after every key held; it reports false
// (and adds nothing) when the key is not, or the list is a table.
func (l *List) Add(key, value string) bool {
	n := len(l.keys)
	if l.table != nil || (n > 0 && key <= l.keys[n-1]) {
		return false
	}
	// Element by element into room made ahead (Reserve sizes it for a
	// snapshot's count): no struct is copied in, and the slices move
	// only when a load hands more than it said.
	if n == cap(l.keys) {
		l.keys = slices.Grow(l.keys, max(n, 1024))
		l.vals = slices.Grow(l.vals, max(n, 1024))
	}
	l.keys, l.vals = l.keys[:n+1], l.vals[:n+1]
	l.keys[n], l.vals[n] = key, value
	if n>>6 == len(l.gone) {
		l.gone = append(l.gone, 0)
	}
	l.live++
	return true
}

// Reserve makes room for n more items.
func (l *List) Reserve(n int) {
	n = min(n, 1<<24)
	l.keys = slices.Grow(l.keys, n)
	l.vals = slices.Grow(l.vals, n)
	l.gone = slices.Grow(l.gone, (len(l.keys)+n+63)/64-len(l.gone))
}

// Row is where one of a snapshot's items is in the text handed with it:
// its key text[KeyOff:KeyEnd], its value text[ValOff:ValEnd]. A snapshot
// stores its rows as these four little-endian numbers, read in place.
type Row struct {
	KeyOff, KeyEnd, ValOff, ValEnd uint32
}

// Table is a snapshot's table of items, in key order: item i's key is
// text[rows[i].KeyOff:rows[i].KeyEnd]. It is query.Docs as it is, its
// values the documents.
type Table struct {
	text string
	rows []Row
}

// Len returns how many items the table holds.
func (t *Table) Len() int { return len(t.rows) }

// Doc returns item i's value.
func (t *Table) Doc(i int) string {
	r := &t.rows[i]
	return t.text[r.ValOff:r.ValEnd]
}

// Key returns item i's key.
func (t *Table) Key(i int) string {
	r := &t.rows[i]
	return t.text[r.KeyOff:r.KeyEnd]
}

// listDocs is query.Docs of items added one by one.
type listDocs struct{ keys, vals []string }

func (d listDocs) Len() int         { return len(d.keys) }
func (d listDocs) Doc(i int) string { return d.vals[i] }
func (d listDocs) Key(i int) string { return d.keys[i] }

// FromTable reports whether the list is a snapshot's table (UseTable).
func (l *List) FromTable() bool { return l.table != nil }
