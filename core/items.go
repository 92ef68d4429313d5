package core

import (
	"errors"

	"github.com/tidwall/buntdb"

	"github.com/hilodb/hilodb/core/loaded"
)

// A store's items are buntdb's tree and the items of its last load
// (package loaded), read in place beside it: the txn methods below merge
// the two, so the rest of the store sees one tree. A key buntdb holds
// hides a loaded item of the same key; an item written or deleted since
// the load is marked gone in the list.

// ItemRow is where one of a snapshot's items is in the text handed with
// it (Fill's Table): its key text[KeyOff:KeyEnd], its value
// text[ValOff:ValEnd].
type ItemRow = loaded.Row

// errIndexName is a range read of one of buntdb's own indexes, which the
// store does not make.
var errIndexName = errors.New("the store reads its key order only")

// getItem returns key's value: buntdb's, else the loaded item's.
func (t *txn) getItem(key string) (string, error) {
	v, err := t.bt.Get(key)
	if err == nil || t.loaded == nil || !errors.Is(err, buntdb.ErrNotFound) {
		return v, err
	}
	if i, ok := t.loaded.Find(key); ok {
		return t.loaded.Val(i), nil
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
	if i, ok := t.loaded.Find(key); ok {
		if !replaced {
			prev, replaced = t.loaded.Val(i), true
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
	if i, ok := t.loaded.Find(key); ok {
		if err != nil {
			prev, err = t.loaded.Val(i), nil
		}
		t.dropLoaded(i)
	}
	return prev, err
}

// dropLoaded marks loaded item i gone, to be put back if the transaction
// fails.
func (t *txn) dropLoaded(i int) { t.loaded.Drop(i) }

// undoLoaded puts back the loaded items the failed transaction marked
// gone, and those a DeleteAll in it let go.
func (t *txn) undoLoaded() {
	if t.loaded != nil {
		t.loaded.Undo()
	}
}

// endLoaded forgets the undo of the write transaction that succeeded.
func (t *txn) endLoaded() {
	if t.loaded != nil {
		t.loaded.Commit()
	}
}

// hideLoaded marks gone every loaded item whose key buntdb's tree holds
// too (set there by buntdb's own Load, which does not look here).
func (t *txn) hideLoaded() error {
	if t.loaded == nil || t.loaded.Live() == 0 {
		return nil
	}
	return t.bt.Ascend("", func(k, _ string) bool {
		if i, ok := t.loaded.Find(k); ok {
			t.dropLoaded(i)
		}
		return true
	})
}

// Len returns how many keys the store holds, the pending marks aside.
func (t *txn) Len() (int, error) {
	n, err := t.bt.Len()
	if t.loaded != nil {
		n += t.loaded.Live()
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
	if l == nil || l.Live() == 0 {
		if bounded {
			return t.bt.AscendRange("", lo, hi, fn)
		}
		return t.bt.AscendGreaterOrEqual("", lo, fn)
	}
	i, end := l.From(lo), l.Len()
	if bounded {
		end = max(i, l.From(hi))
	}
	more := true
	each := func(k, v string) bool {
		for ; i < end && l.Key(i) <= k; i++ {
			if l.Key(i) == k {
				continue // hidden by buntdb's
			}
			if !l.IsGone(i) && !fn(l.Key(i), l.Val(i)) {
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
		if !l.IsGone(i) && !fn(l.Key(i), l.Val(i)) {
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
	if t.loaded != nil && t.loaded.Len() > 0 {
		t.loaded.Keep()
		t.loaded.Reset()
	}
	return nil
}
