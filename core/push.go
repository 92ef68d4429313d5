package core

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unsafe"

	"github.com/hilodb/hilodb/core/revision"
)

// PendingWrite is a local write the server has not acknowledged: Rev made on
// top of BaseRev, the last revision the server acknowledged ("" for a
// document the server has never had).
type PendingWrite struct {
	ID, BaseRev, Rev string
	// Doc is the document as stored, not a copy (a push reads thousands):
	// read it, never write to it.
	Doc     json.RawMessage
	Deleted bool
}

// PendingWrites returns up to limit local writes the server has not
// acknowledged, in id order.
func (s *Store) PendingWrites(limit int) ([]PendingWrite, error) {
	return s.PendingWritesAfter("", limit)
}

// PendingWritesAfter returns up to limit local writes the server has not
// acknowledged whose ids sort after after, in id order: the next batch of
// a push that already sent those up to after and has not yet heard back.
func (s *Store) PendingWritesAfter(after string, limit int) ([]PendingWrite, error) {
	var out []PendingWrite
	err := s.view(func(tx *txn) error {
		es, i := tx.pendingAfter(after)
		if limit > 0 {
			out = make([]PendingWrite, 0, min(limit, len(es)-i))
		}
		for ; i < len(es); i++ {
			e := es[i]
			if !e.live {
				continue // dropped since es was sorted
			}
			out = append(out, PendingWrite{ID: e.id, BaseRev: e.meta.Base, Rev: e.meta.Rev, Deleted: e.meta.Deleted})
			if len(out) >= limit {
				break
			}
		}
		return pendingDocs(tx, out)
	})
	if err != nil {
		return nil, fmt.Errorf("list pending writes: %w", err)
	}
	return out, nil
}

// pendingDocs reads the document of each pending write not a deletion.
// Writes in id order that are most of the documents in their range (a
// bulk write's, say) are read walking the documents in order, one step of
// the B-tree each, where a look-up each costs a descent; the walk gives up
// for look-ups once it has passed more documents than it is given writes.
func pendingDocs(tx *txn, ws []PendingWrite) error {
	if len(ws) == 0 {
		return nil
	}
	j, passed := 0, 0
	err := tx.AscendGreaterOrEqual("", docPrefix+ws[0].ID, func(k, v string) bool {
		if !strings.HasPrefix(k, docPrefix) {
			return false
		}
		id := k[len(docPrefix):]
		for j < len(ws) && (ws[j].ID < id || ws[j].Deleted) {
			if !ws[j].Deleted {
				return false // no document: looked up below, which says so
			}
			j++
		}
		if j == len(ws) {
			return false
		}
		if ws[j].ID == id {
			ws[j].Doc = storedBytes(v)
			j++
			return j < len(ws)
		}
		passed++
		return passed <= len(ws)
	})
	if err != nil {
		return err
	}
	for ; j < len(ws); j++ {
		if ws[j].Deleted || ws[j].Doc != nil {
			continue
		}
		doc, err := tx.Get(docPrefix + ws[j].ID)
		if err != nil {
			return fmt.Errorf("read pending %q: %w", ws[j].ID, err)
		}
		ws[j].Doc = storedBytes(doc)
	}
	return nil
}

// storedBytes returns a stored value's bytes without copying them: buntdb
// keeps values as strings, which nothing writes to, and the caller only
// reads them (PendingWrite.Doc).
func storedBytes(v string) json.RawMessage {
	return json.RawMessage(unsafe.Slice(unsafe.StringData(v), len(v)))
}

// PendingCount returns how many documents have writes awaiting the server.
func (s *Store) PendingCount() (int, error) {
	n := 0
	err := s.view(func(tx *txn) error {
		n = len(tx.marks.m)
		return nil
	})
	return n, err
}

// Ack says the server accepted revision Rev of document ID.
type Ack struct{ ID, Rev string }

// Acknowledge records, in one transaction, that the server accepted these
// revisions. A document written again meanwhile stays pending, now on top of
// the acknowledged revision.
func (s *Store) Acknowledge(acks ...Ack) error {
	err := s.updateN(context.Background(), len(acks), func(tx *txn) error {
		for _, a := range acks {
			e := tx.marks.m[a.ID]
			switch {
			case e == nil:
				// In sync already (an acknowledgement repeated), or gone.
			case e.meta.Rev == a.Rev:
				tx.dropEntry(e) // in sync: the document's _rev is a.Rev
			default:
				// Written again meanwhile: still pending, now on top of a.Rev.
				m := e.meta
				m.Base = a.Rev
				tx.setEntry(e, m)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("acknowledge writes: %w", err)
	}
	return nil
}

// Rebase marks id's pending write as based on nothing: the server has no
// version of it (its base was compacted away, say), so the next push creates
// it afresh.
func (s *Store) Rebase(id string) error {
	return s.update(func(tx *txn) error {
		m, found, err := getMeta(tx, id)
		if err != nil || !found {
			return err
		}
		m.Base = ""
		return putMeta(tx, id, m)
	})
}

// Rerev gives id's pending write, if it still has revision rev, a new
// revision, made after seen (the revision the server holds for id) and
// after rev. The server refused rev as not newer than seen (stale_rev): a
// document's revisions only grow there, and this store's clock ran behind,
// e.g. after the wall clock stepped back between two runs. The write keeps
// its base and content, and goes out again with the next push.
func (s *Store) Rerev(id, rev, seen string) error {
	for _, r := range []string{rev, seen} {
		if v, _, err := revision.Decode(r); err == nil {
			s.clock.Observe(v)
		}
	}
	return s.update(func(tx *txn) error {
		m, ok := tx.pending(id)
		if !ok || m.Rev != rev {
			return nil // written again since, or acknowledged
		}
		m.Rev = s.clock.NextRev()
		if !m.Deleted {
			doc, err := tx.Get(docPrefix + id)
			if err != nil {
				return fmt.Errorf("read pending write %q: %w", id, err)
			}
			d, err := withFields(json.RawMessage(doc), id, m.Rev)
			if err != nil {
				return err
			}
			if _, _, err := tx.Set(docPrefix+id, string(d), nil); err != nil {
				return err
			}
		}
		return putMeta(tx, id, m)
	})
}

// OnWrite registers fn to be called after every local write is committed
// (the replicator uses it to push at once). fn must not block.
func (s *Store) OnWrite(fn func()) {
	s.watchMu.Lock()
	s.watchers = append(s.watchers, fn)
	s.watchMu.Unlock()
}

func (s *Store) notifyWrite() {
	s.watchMu.Lock()
	ws := s.watchers
	s.watchMu.Unlock()
	for _, fn := range ws {
		fn()
	}
}

// Forget removes id from this store without recording a deletion: the
// document, any pending write of it and any conflicts kept for it. Nothing
// is pushed; a cache uses it to drop a copy it may no longer serve.
func (s *Store) Forget(id string) error {
	if err := s.ClearConflicts(id); err != nil {
		return err
	}
	err := s.update(func(tx *txn) error {
		tx.dropPending(id)
		return deleteKey(tx, docPrefix+id)
	})
	if err != nil {
		return fmt.Errorf("forget %q: %w", id, err)
	}
	return nil
}
