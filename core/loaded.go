package core

import (
	"errors"
	"slices"

	"github.com/tidwall/buntdb"

	"github.com/hilodb/hilodb/core/query"
)

// loaded holds the items a store was loaded with (a snapshot's, handed in
// key order to LoadSaved one by one, or as one table of where each is in
// the snapshot's bytes), read in place instead of inserted into buntdb's
// tree one by one: a reopen of 100,000 documents spent about a third of
// its time on those inserts, and, in a browser, about half of what was
// left on adding the items one by one. buntdb holds what is written after; an item
// written or deleted since is marked gone here, and a key buntdb holds
// hides a loaded one of the same key. Reads merge the two (txn's Get, Len
// and Ascend methods), so the rest of the store sees one tree.
//
// It is changed only in write transactions and read in any, so buntdb's
// lock guards it as it guards the tree; a failed transaction puts back the
// items it marked gone (txn.undoLoaded).
type loaded struct {
	keys, vals []string   // in key order, added one by one (add)
	table      *itemTable // or a snapshot's table read in place (useTable)
	gone       []uint64   // bit i: item i was written or deleted since
	live       int        // the items not gone

	// The write transaction's undo (one runs at a time, under buntdb's
	// write lock): the items it marked gone, and what the list held before
	// it let the whole list go (nil: it did not). Kept here rather than in
	// each txn, which every read allocates.
	undo []int
	was  *loaded
}

// keep keeps what the list holds for a failure of the write transaction
// to put back, once per transaction: before it lets the list go.
func (l *loaded) keep() {
	if l.was != nil {
		return
	}
	l.undoGone() // what a failure puts back is what the transaction found
	was := *l
	was.undo, was.was = nil, nil
	l.was = &was
}

// reset empties the list (keep first, to be able to put it back).
func (l *loaded) reset() {
	undo, was := l.undo[:0], l.was
	*l = loaded{undo: undo, was: was}
}

// undoGone puts back the items marked gone since the transaction began.
func (l *loaded) undoGone() {
	for _, i := range slices.Backward(l.undo) {
		l.setGone(i, false)
	}
	l.undo = l.undo[:0]
}

// ItemRow is where one of a snapshot's items is in the text handed with
// it (Fill's Table): its key text[KeyOff:KeyEnd], its value
// text[ValOff:ValEnd].
type ItemRow struct {
	KeyOff, KeyEnd, ValOff, ValEnd uint32
}

// len returns how many items the list holds, gone ones included.
func (l *loaded) len() int {
	if l.table != nil {
		return l.table.Len()
	}
	return len(l.keys)
}

// key returns item i's key.
func (l *loaded) key(i int) string {
	if l.table != nil {
		return l.table.Key(i)
	}
	return l.keys[i]
}

// val returns item i's value.
func (l *loaded) val(i int) string {
	if l.table != nil {
		return l.table.Doc(i)
	}
	return l.vals[i]
}

// useTable makes a snapshot's table, its rows in ascending key order and
// within text, the whole list (which must be empty): nothing is read of
// it until it is asked for.
func (l *loaded) useTable(text string, rows []ItemRow) {
	l.table = &itemTable{text, rows}
	l.gone, l.live = make([]uint64, (len(rows)+63)/64), len(rows)
}

// docs returns the list's items as a restored index reads its documents:
// as the list holds them now, whatever it holds later.
func (l *loaded) docs() query.Docs {
	if l.table != nil {
		return l.table
	}
	return listDocs{l.keys, l.vals}
}

// itemTable is a snapshot's table of items (Fill's Table), in key order:
// item i's key is text[rows[i].KeyOff:rows[i].KeyEnd]. It is query.Docs
// as it is, its values the documents.
type itemTable struct {
	text string
	rows []ItemRow
}

// Len returns how many items the table holds.
func (t *itemTable) Len() int { return len(t.rows) }

// Doc returns item i's value.
func (t *itemTable) Doc(i int) string {
	r := &t.rows[i]
	return t.text[r.ValOff:r.ValEnd]
}

// Key returns item i's key.
func (t *itemTable) Key(i int) string {
	r := &t.rows[i]
	return t.text[r.KeyOff:r.KeyEnd]
}

// listDocs is query.Docs of items added one by one.
type listDocs struct{ keys, vals []string }

func (d listDocs) Len() int         { return len(d.keys) }
func (d listDocs) Doc(i int) string { return d.vals[i] }
func (d listDocs) Key(i int) string { return d.keys[i] }

// find returns where key's live item is, if there is one.
func (l *loaded) find(key string) (int, bool) {
	if l.live == 0 {
		return 0, false
	}
	i := l.from(key)
	if i == l.len() || l.key(i) != key || l.isGone(i) {
		return 0, false
	}
	return i, true
}

// from returns where the items of keys at or after key start.
func (l *loaded) from(key string) int {
	lo, hi := 0, l.len()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l.key(m) < key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// isGone reports whether item i was written or deleted since the load.
func (l *loaded) isGone(i int) bool { return l.gone[i>>6]&(1<<(i&63)) != 0 }

// setGone marks item i gone (or live again, for an undo).
func (l *loaded) setGone(i int, gone bool) {
	if gone {
		l.gone[i>>6] |= 1 << (i & 63)
		l.live--
	} else {
		l.gone[i>>6] &^= 1 << (i & 63)
		l.live++
	}
}

// add appends an item whose key is after every key held; it reports false
// (and adds nothing) when the key is not.
func (l *loaded) add(key, value string) bool {
	n := len(l.keys)
	if l.table != nil || (n > 0 && key <= l.keys[n-1]) {
		return false
	}
	// Element by element into room made ahead (reserve sizes it for a
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

// reserve makes room for n more items.
func (l *loaded) reserve(n int) {
	n = min(n, 1<<24)
	l.keys = slices.Grow(l.keys, n)
	l.vals = slices.Grow(l.vals, n)
	l.gone = slices.Grow(l.gone, (len(l.keys)+n+63)/64-len(l.gone))
}

// errIndexName is a range read of one of buntdb's own indexes, which the
// store does not make.
var errIndexName = errors.New("the store reads its key order only")

// getItem returns key's value: buntdb's, else the loaded item's.
func (t *txn) getItem(key string) (string, error) {
	v, err := t.bt.Get(key)
	if err == nil || t.loaded == nil || !errors.Is(err, buntdb.ErrNotFound) {
		return v, err
	}
	if i, ok := t.loaded.find(key); ok {
		return t.loaded.val(i), nil
	}
	return "", err
}

// setItem sets key in buntdb and reports the value it replaced, buntdb's
// or a loaded item's, which it marks gone.
func (t *txn) setItem(key, value string, opts *buntdb.SetOptions) (string, bool, error) {
	prev, replaced, err := t.bt.Set(key, value, opts)
	if err != nil || t.loaded == nil {
		return prev, replaced, err
	}
	if i, ok := t.loaded.find(key); ok {
		if !replaced {
			prev, replaced = t.loaded.val(i), true
		}
		t.dropLoaded(i)
	}
	return prev, replaced, nil
}

// deleteItem deletes key, from buntdb or as a loaded item.
func (t *txn) deleteItem(key string) (string, error) {
	prev, err := t.bt.Delete(key)
	if t.loaded == nil || (err != nil && !errors.Is(err, buntdb.ErrNotFound)) {
		return prev, err
	}
	if i, ok := t.loaded.find(key); ok {
		if err != nil {
			prev, err = t.loaded.val(i), nil
		}
		t.dropLoaded(i)
	}
	return prev, err
}

// dropLoaded marks loaded item i gone, to be put back if the transaction
// fails.
func (t *txn) dropLoaded(i int) {
	t.loaded.setGone(i, true)
	t.loaded.undo = append(t.loaded.undo, i)
}

// undoLoaded puts back the loaded items the failed transaction marked
// gone, and those a DeleteAll in it let go.
func (t *txn) undoLoaded() {
	l := t.loaded
	if l == nil {
		return
	}
	l.undoGone()
	if l.was != nil {
		undo := l.undo
		*l = *l.was
		l.undo = undo
	}
}

// endLoaded forgets the undo of the write transaction that succeeded.
func (t *txn) endLoaded() {
	if l := t.loaded; l != nil {
		l.undo, l.was = l.undo[:0], nil
	}
}

// hideLoaded marks gone every loaded item whose key buntdb's tree holds
// too (set there by buntdb's own Load, which does not look here).
func (t *txn) hideLoaded() error {
	if t.loaded == nil || t.loaded.live == 0 {
		return nil
	}
	return t.bt.Ascend("", func(k, _ string) bool {
		if i, ok := t.loaded.find(k); ok {
			t.dropLoaded(i)
		}
		return true
	})
}

// Len returns how many keys the store holds, the pending marks aside.
func (t *txn) Len() (int, error) {
	n, err := t.bt.Len()
	if t.loaded != nil {
		n += t.loaded.live
	}
	return n, err
}

// AscendRange calls fn with the keys in [lo, hi), in order, until it
// returns false. index must be "": the store reads its key order only.
func (t *txn) AscendRange(index, lo, hi string, fn func(key, value string) bool) error {
	if index != "" {
		return errIndexName
	}
	return t.ascend(lo, hi, true, fn)
}

// AscendGreaterOrEqual calls fn with the keys from pivot on, in order,
// until it returns false. index must be "".
func (t *txn) AscendGreaterOrEqual(index, pivot string, fn func(key, value string) bool) error {
	if index != "" {
		return errIndexName
	}
	return t.ascend(pivot, "", false, fn)
}

// AscendLessThan calls fn with the keys before pivot, in order, until it
// returns false. index must be "".
func (t *txn) AscendLessThan(index, pivot string, fn func(key, value string) bool) error {
	if index != "" {
		return errIndexName
	}
	return t.ascend("", pivot, true, fn)
}

// ascend calls fn with the keys from lo on (before hi when bounded), in
// order, buntdb's and the live loaded items merged, until it returns false.
func (t *txn) ascend(lo, hi string, bounded bool, fn func(key, value string) bool) error {
	l := t.loaded
	if l == nil || l.live == 0 {
		if bounded {
			return t.bt.AscendRange("", lo, hi, fn)
		}
		return t.bt.AscendGreaterOrEqual("", lo, fn)
	}
	i, end := l.from(lo), l.len()
	if bounded {
		end = max(i, l.from(hi))
	}
	more := true
	each := func(k, v string) bool {
		for ; i < end && l.key(i) <= k; i++ {
			if l.key(i) == k {
				continue // hidden by buntdb's
			}
			if !l.isGone(i) && !fn(l.key(i), l.val(i)) {
				more = false
				return false
			}
		}
		more = fn(k, v)
		return more
	}
	var err error
	if bounded {
		err = t.bt.AscendRange("", lo, hi, each)
	} else {
		err = t.bt.AscendGreaterOrEqual("", lo, each)
	}
	if err != nil || !more {
		return err
	}
	for ; i < end; i++ {
		if !l.isGone(i) && !fn(l.key(i), l.val(i)) {
			return nil
		}
	}
	return nil
}

// Get returns key's value, or buntdb.ErrNotFound.
func (t *txn) Get(key string) (string, error) { return t.getItem(key) }

// DeleteAll deletes every key, the loaded items with buntdb's; a failed
// transaction puts them back.
func (t *txn) DeleteAll() error {
	if err := t.bt.DeleteAll(); err != nil {
		return err
	}
	if t.loaded != nil && t.loaded.len() > 0 {
		t.loaded.keep()
		t.loaded.reset()
	}
	return nil
}

// itemOrder is which loaded item each change a load handed became: the
// number of an item a saved index entry names is the number of the change
// (from 0), as the snapshot handed its items. Until a change does not
// become the next loaded item (a pending mark, a key out of order) the
// two are the same and nothing is kept.
type itemOrder struct {
	n  int     // the changes handed
	at []int32 // the loaded item of each change (-1: none), once they differ
}

// next records that the next change became loaded item i (-1: none).
func (o *itemOrder) next(i int) {
	if o.at == nil && i == o.n {
		o.n++
		return
	}
	o.differ(i)
}

// differ is next once the changes and the loaded items differ.
func (o *itemOrder) differ(i int) {
	if o.at == nil {
		o.at = make([]int32, o.n, o.n+1024)
		for j := range o.at {
			o.at[j] = int32(j)
		}
	}
	o.at = append(o.at, int32(i))
	o.n++
}

// item returns the loaded item change n became, or -1.
func (o *itemOrder) item(n int32) int32 {
	switch {
	case n < 0 || int(n) >= o.n:
		return -1
	case o.at == nil:
		return n
	}
	return o.at[n]
}
