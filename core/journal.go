package core

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hilodb/hilodb/core/keygen"
	"github.com/hilodb/hilodb/core/loaded"
	"github.com/tidwall/buntdb"
)

// Change is one key a write transaction set or deleted, as a Journal
// receives it. Keys and values are the store's internal layout: replay them
// with Store.Replay, in order, and nothing else.
type Change struct {
	Key     string
	Value   string
	Deleted bool
}

// Journal makes a store's writes durable. Commit receives the changes of
// each write transaction, in commit order, while the store still holds its
// write lock, so it must not wait (queue the changes, or write them at once
// where that needs no waiting, and return); the write
// returns to its caller only once the returned wait function does, and fails
// with its error. A Journal is how "acknowledged means durable" reaches the
// storage of a browser, a worker or a file.
type Journal interface {
	Commit(changes []Change) (wait func() error)
}

// txn is a buntdb transaction that records what it changes for the
// store's Journal.
type txn struct {
	bt       *buntdb.Tx
	loaded   *loaded.List  // the items the store was loaded with, and the write's undo of them (items.go)
	marks    *pendingMarks // the store's pending marks (pending.go)
	record   bool
	changes  []Change
	undo     []markUndo // the marks changed, put back if the transaction fails
	loading  bool       // loading into an empty store: no undo, a failure empties the marks
	sizeHint int        // about how many changes the transaction makes
	wallMs   int64      // the wall clock for the transaction's revisions, once read (Store.nextRev)
	markBuf  []byte     // the chunk journaled marks are cut from (markBytes)
	docBuf   []byte     // the chunk stored documents are cut from (docRoom)
	tick     uint64     // the next of the clock values reserved for revisions (Store.nextTick)
	tickEnd  uint64     // past the last of them

	ixs       *indexSet // the secondary indexes its document writes keep (index.go)
	ixBuf     []byte    // an index entry's key, reused
	ixUndo    []ixUndo  // the index entries changed, put back if the transaction fails
	ixDefs    bool      // an index definition changed: see resolveIndexes
	live      bool      // live queries watch: touched collects the ids written
	touched   []string  // the ids of the documents written, for live queries
	noIndexes bool      // a load: the indexes are built once at its end
	restored  bool      // a load took saved index entries: ixs holds them (savedindex.go)
	blindSets bool      // the transaction called DeleteAll, after which buntdb's Set reports no replaced value
}

// Set sets key and records the change. A set of the key the last change
// set replaces that change: replaying either gives the same store.
func (t *txn) Set(key, value string, opts *buntdb.SetOptions) (string, bool, error) {
	var before string
	var had, readBefore bool
	if t.blindSets && t.ixs != nil && strings.HasPrefix(key, docPrefix) {
		// After a DeleteAll buntdb's Set reports no value it replaced: the
		// indexes need it to take the document's old entries out.
		readBefore = true
		if v, err := t.getItem(key); err == nil {
			before, had = v, true
		}
	}
	prev, replaced, err := t.setItem(key, value, opts)
	if readBefore {
		prev, replaced = before, had
	}
	if err == nil && (t.ixs != nil || t.live || t.noIndexes || strings.HasPrefix(key, ixdefPrefix)) {
		err = t.keyChanged(key, prev, replaced, value, true)
	}
	if err == nil && t.record {
		if n := len(t.changes); n > 0 && !t.changes[n-1].Deleted && t.changes[n-1].Key == key {
			t.changes[n-1].Value = value
		} else {
			t.changes = append(t.changes, Change{Key: key, Value: value})
		}
	}
	return prev, replaced, err
}

// changeMark is where a txn's record of changes stood: see mark.
type changeMark struct {
	n    int
	last Change
}

// mark returns where the record of changes stands, for undoSet.
func (t *txn) mark() changeMark {
	m := changeMark{n: len(t.changes)}
	if m.n > 0 {
		m.last = t.changes[m.n-1]
	}
	return m
}

// undoSet puts back prev, the value a Set of key made since m replaced,
// and forgets that Set: the store and its record of changes are as they
// were at m.
func (t *txn) undoSet(m changeMark, key, prev string) error {
	undone, _, err := t.setItem(key, prev, nil)
	if err != nil {
		return err
	}
	if t.ixs != nil || t.live {
		if err := t.keyChanged(key, undone, true, prev, true); err != nil {
			return err
		}
	}
	if t.record {
		t.changes = t.changes[:m.n]
		if m.n > 0 {
			t.changes[m.n-1] = m.last
		}
	}
	return nil
}

// Delete deletes key and records the change.
func (t *txn) Delete(key string) (string, error) {
	prev, err := t.deleteItem(key)
	if err == nil && (t.ixs != nil || t.live || t.noIndexes || strings.HasPrefix(key, ixdefPrefix)) {
		err = t.keyChanged(key, prev, true, "", false)
	}
	if err == nil && t.record {
		t.changes = append(t.changes, Change{Key: key, Deleted: true})
	}
	return prev, err
}

// deferKey is the context key of a *Deferred.
type deferKey struct{}

// Deferred is the durability of a write made under DeferDurable.
type Deferred struct{ wait func() error }

// DeferDurable returns a context under which a write (Insert, Put and the
// other single and batch writes) returns once it is applied, without waiting
// for the journal: d.Pending reports whether its changes are still to be
// made durable, and d.Wait waits for that. For a caller that must not wait
// (a JavaScript call answered at once) and can answer later instead.
func DeferDurable(ctx context.Context) (_ context.Context, d *Deferred) {
	d = new(Deferred)
	return context.WithValue(ctx, deferKey{}, d), d
}

// Pending reports whether the write still waits for its journal.
func (d *Deferred) Pending() bool { return d.wait != nil }

// Wait returns once the write is durable, or why it cannot be.
func (d *Deferred) Wait() error {
	if d.wait == nil {
		return nil
	}
	if err := d.wait(); err != nil {
		return fmt.Errorf("make write durable: %w", err)
	}
	return nil
}

// update runs fn in a write transaction and, once it has committed, waits
// for the journal to make its changes durable.
func (s *Store) update(fn func(tx *txn) error) error { return s.updateN(context.Background(), 0, fn) }

// updateN is update for a transaction expected to make about n changes:
// their record is allocated once. Under DeferDurable, ctx's Deferred takes
// the wait.
func (s *Store) updateN(ctx context.Context, n int, fn func(tx *txn) error) error {
	var wait func() error
	var touched []string
	err := s.db.Update(func(btx *buntdb.Tx) (err error) {
		tx := &txn{bt: btx, loaded: &s.loaded, marks: s.marks, record: s.journal != nil || s.feed, sizeHint: n}
		s.beginIndexes(tx)
		if tx.record && n > 0 {
			tx.changes = make([]Change, 0, n)
		}
		defer tx.undoOnError(&err) // buntdb rolls back its keys
		if err := fn(tx); err != nil {
			return err
		}
		if s.feed {
			if err := recordFeed(tx); err != nil {
				return err
			}
		}
		if err := s.endIndexes(tx, false); err != nil {
			return err
		}
		touched = tx.touched
		if len(tx.undo) > 0 {
			s.marks.release()
		}
		if len(tx.changes) > 0 && s.journal != nil {
			// Under the write lock: the journal sees commits in their order.
			wait = s.journal.Commit(tx.changes)
		}
		return nil
	})
	if err == nil && len(touched) > 0 {
		s.live.written(touched)
	}
	if err != nil || wait == nil {
		return err
	}
	if d, ok := ctx.Value(deferKey{}).(*Deferred); ok {
		d.wait = wait
		return nil
	}
	if err := wait(); err != nil {
		return fmt.Errorf("make write durable: %w", err)
	}
	return nil
}

// view runs fn in a read transaction.
func (s *Store) view(fn func(tx *txn) error) error {
	return s.db.View(func(btx *buntdb.Tx) error {
		return fn(&txn{bt: btx, loaded: &s.loaded, marks: s.marks, ixs: s.ixs.Load()})
	})
}

// SetJournal makes every later write transaction wait for j (nil: none).
// Set it before the store is shared.
func (s *Store) SetJournal(j Journal) { s.journal = j }

// Replay applies journaled changes, in order, without journaling them
// again: how a store is rebuilt from its snapshot and journal.
func (s *Store) Replay(changes []Change) error {
	err := s.db.Update(func(btx *buntdb.Tx) (err error) {
		tx := &txn{bt: btx, loaded: &s.loaded, marks: s.marks, noIndexes: true}
		defer tx.undoOnError(&err)
		defer func() {
			if err == nil {
				err = s.endIndexes(tx, true)
			}
		}()
		for _, c := range changes {
			if strings.HasPrefix(c.Key, dirtyPrefix) {
				if err := tx.applyPendingChange(c, true); err != nil {
					return err
				}
				continue
			}
			if c.Deleted {
				if _, err := tx.Delete(c.Key); err != nil && !errors.Is(err, buntdb.ErrNotFound) {
					return err
				}
				continue
			}
			if _, _, err := tx.Set(c.Key, c.Value, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("replay journal: %w", err)
	}
	s.live.reloaded()
	s.colMu.Lock()
	s.cols = make(map[string]keygen.Generator)
	s.colMu.Unlock()
	return nil
}

// SaveAt writes the whole store to w, as Save does, and calls at while no
// write can commit: a journal records there which of its commits the
// snapshot holds.
func (s *Store) SaveAt(w io.Writer, at func()) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	err := s.Items(at, func(key, value string) error { return writeSetCommand(bw, key, value) })
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return fmt.Errorf("save store: %w", err)
	}
	return nil
}

// Items calls fn with every key and value of the store in one read
// transaction, and calls at first, while no write can commit: a journal
// writes its snapshots with it, in a format of its own, and records in at
// which of its commits the snapshot holds. The keys come in key order but
// for the pending marks (the dirty keys), which come together in no order
// where their keys would be. A key and value are valid only during the
// call: copy what is kept. fn must not call into the store; its first
// error ends the walk and is returned.
func (s *Store) Items(at func(), fn func(key, value string) error) error {
	var told func(bool)
	if at != nil {
		told = func(bool) { at() }
	}
	return s.ItemsAndIndexes(told, fn, nil)
}

// LoadChanges applies the changes fill hands to apply (a snapshot's items
// as Items walked them, then journaled changes after it, in order) in one
// transaction, as Load and Replay do, without journaling them again; the
// node sequence never moves backwards. Into an empty store nothing is kept
// for a rollback of each change (a failed fill leaves the store empty), and
// the changes that come in ascending key order from the first on (a
// snapshot's items) are kept as they are handed, in one sorted list
// beside buntdb's tree (package loaded), not inserted into it: their strings
// must not change for as long as the store holds them.
func (s *Store) LoadChanges(fill func(apply func(Change) error) error) error {
	return s.LoadSaved(0, func(f Fill) error { return fill(f.Apply) })
}

// Fill is where a load's fill hands what it read (LoadSaved).
type Fill struct {
	// Apply applies one change.
	Apply func(Change) error
	// Table applies a snapshot's items at once, as Apply of each would
	// (none deleted): item i has the key and the value of text that
	// rows[i] says. The rows must be within text and in ascending key
	// order, and neither may change for as long as the store holds them:
	// into an empty store they are kept as they are and read when asked
	// for, so a load costs nothing per item.
	Table func(text string, rows []ItemRow) error
	// Restore hands the indexes saved with the snapshot (ItemsAndIndexes),
	// once, between its items and the changes after.
	Restore func([]SavedIndex)
}

// LoadSaved is LoadChanges whose fill may also hand a snapshot's items as
// one table (Fill's Table) and, once, between a snapshot's items and the
// changes after it, the indexes saved with the snapshot (Fill's Restore): in a load into an empty store the indexes
// they fit start built, and the changes after keep them; the others are
// built when a query first needs them. items is about how many changes
// fill hands (0: not known), for the room they take.
func (s *Store) LoadSaved(items int, fill func(Fill) error) error {
	err := s.db.Update(func(btx *buntdb.Tx) (err error) {
		tx := &txn{bt: btx, loaded: &s.loaded, marks: s.marks, noIndexes: true}
		defer tx.undoOnError(&err)
		defer func() {
			if err == nil {
				err = s.endIndexes(tx, true)
			}
		}()
		before := readUint(tx, nodeSeqKey)
		empty := false
		if n, err := tx.Len(); err == nil && n == 0 {
			empty = true
			// Nothing to restore on a rollback but the empty trees:
			// buntdb then keeps no per-key rollback record, and the
			// marks none either when there are none.
			if err := tx.DeleteAll(); err != nil {
				return err
			}
			tx.blindSets = true
			if len(s.marks.m) == 0 {
				tx.loading, tx.sizeHint = true, 1024
			}
		}
		var restoreErr error
		var order loaded.Order // which loaded item each change handed became
		restore := func(saved []SavedIndex) {
			if !empty || tx.restored || restoreErr != nil {
				return
			}
			set, err := s.restoreIndexes(tx, saved, &order)
			if err != nil {
				restoreErr = err
				return
			}
			// From here on the documents' writes keep the indexes.
			tx.ixs, tx.noIndexes, tx.restored = set, false, true
		}
		// Into an empty store, the changes in ascending key order from the
		// first on are kept in place (package loaded) until one is not.
		inPlace := empty
		if inPlace {
			// Kept whole for a failure to put back: it may hold items
			// all gone.
			tx.loaded.Keep()
			tx.loaded.Reset()
			tx.loaded.Reserve(items)
		}
		apply := func(c Change) error {
			if inPlace && !c.Deleted && !strings.HasPrefix(c.Key, dirtyPrefix) {
				if tx.loaded.Add(c.Key, c.Value) {
					if strings.HasPrefix(c.Key, ixdefPrefix) {
						tx.ixDefs = true
					}
					order.Next(tx.loaded.Len() - 1)
					return nil
				}
				inPlace = false
			}
			order.Next(-1)
			if strings.HasPrefix(c.Key, dirtyPrefix) {
				// Ids are slices of the load's copy, which the documents
				// loaded with them keep alive anyway: not copied again.
				return tx.applyPendingChange(c, false)
			}
			if c.Deleted {
				if _, err := tx.Delete(c.Key); err != nil && !errors.Is(err, buntdb.ErrNotFound) {
					return err
				}
				return nil
			}
			_, _, err := tx.Set(c.Key, c.Value, nil)
			return err
		}
		table := func(text string, rows []ItemRow) error {
			if !inPlace || tx.loaded.Len() > 0 || order.Handed() > 0 {
				for _, r := range rows { // not the first: item by item
					if err := apply(Change{Key: text[r.KeyOff:r.KeyEnd], Value: text[r.ValOff:r.ValEnd]}); err != nil {
						return err
					}
				}
				return nil
			}
			// Kept as it is, each item the one of its number; the pending
			// marks among them (together: they share their prefix) go to
			// the marks and are hidden here.
			l := tx.loaded
			l.UseTable(text, rows)
			order.Skip(len(rows))
			for i := l.From(dirtyPrefix); i < len(rows) && strings.HasPrefix(l.Key(i), dirtyPrefix); i++ {
				if err := tx.applyPendingChange(Change{Key: l.Key(i), Value: l.Val(i)}, false); err != nil {
					return err
				}
				l.Hide(i)
			}
			inPlace = false // the changes after go to buntdb
			return nil
		}
		err = fill(Fill{Apply: apply, Table: table, Restore: restore})
		if err == nil {
			err = restoreErr
		}
		if err != nil {
			return err
		}
		return keepNodeSeq(tx, before)
	})
	if err != nil {
		return fmt.Errorf("load store: %w", err)
	}
	s.forgetCollections()
	s.live.reloaded()
	return nil
}

// ascendAll calls fn with every key and value of the store, buntdb's in
// key order and the pending marks (stored as dirty keys) where their keys
// would be, in no order among themselves, until fn returns false. A mark's
// key and value are valid only during the call.
func ascendAll(tx *txn, fn func(key, value string) bool) error {
	more := true
	err := tx.AscendLessThan("", dirtyPrefix, func(k, v string) bool {
		more = fn(k, v)
		return more
	})
	if err != nil || !more {
		return err
	}
	tx.walkPending(func(k, v string) bool {
		more = fn(k, v)
		return more
	})
	if !more {
		return nil
	}
	return tx.AscendGreaterOrEqual("", dirtyPrefix, fn)
}

// writeSetCommand writes one set in buntdb's file format, which Load reads.
// The command's framing is put together in the writer's own buffer
// (AvailableBuffer): a snapshot writes one per key, and the lengths
// formatted apart cost two allocations each.
func writeSetCommand(w *bufio.Writer, key, value string) error {
	b := append(w.AvailableBuffer(), "*3\r\n$3\r\nset\r\n$"...)
	b = strconv.AppendInt(b, int64(len(key)), 10)
	b = append(b, "\r\n"...)
	w.Write(b)
	w.WriteString(key)
	b = append(w.AvailableBuffer(), "\r\n$"...)
	b = strconv.AppendInt(b, int64(len(value)), 10)
	b = append(b, "\r\n"...)
	w.Write(b)
	w.WriteString(value)
	_, err := w.WriteString("\r\n")
	return err
}
