package syncserver

import (
	"github.com/hilodb/hilodb/auth"
	"github.com/hilodb/hilodb/syncserver/storage"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/buntdb"

	"github.com/hilodb/hilodb/errcode"
)

// Writes made by the server itself for the HTTP doors: unlike a push, whose
// revisions the client made, the server makes the revision, and a document
// may be computed from the stored one inside the same transaction (an
// update merges into what is there), so no other write can come between
// the read and the write.

// docWrite is one write of a batch.
type docWrite struct {
	ID string
	// Err, when set, refuses the write before it reaches the store.
	Err *docError
	// Make returns the new document (an object; _id and _rev are set), nil
	// with del set to delete it, or nil alone to leave it as it is. cur is the stored document, nil when
	// there is none (or a tombstone). It may fail with a *docError.
	Make func(cur *storedDoc) (doc json.RawMessage, del bool, err error)
	// Mint, when set ("prefix|" or "prefix/", checked by mintable), has
	// the server make the id inside the write's transaction; Build then
	// returns Make for it.
	Mint  string
	Build func(id string) func(cur *storedDoc) (json.RawMessage, bool, error)
}

// storedDoc is a live document as a write sees it.
type storedDoc struct {
	Rev string
	Doc json.RawMessage
}

// docError is a write refused for one document.
type docError struct {
	code errcode.Code
	msg  string
	rev  string // the stored _rev, for conflicts
	id   string // the document's id, for a failed precondition
}

func (e *docError) Error() string { return e.msg }

// docResult is what became of one docWrite.
type docResult struct {
	ID      string
	Rev     string          // the new _rev ("" when nothing was written)
	OldRev  string          // the _rev before ("" when there was none)
	Old     json.RawMessage // the document before, nil when there was none
	New     json.RawMessage // the document written, nil for a delete
	Deleted bool
	// Unchanged is set when Make left the document as it was: Rev and New
	// are the stored ones.
	Unchanged bool
	Err       *docError
}

// writeDocs applies ws in one transaction and one fsync. With atomic, a
// refused write refuses them all and nothing is written (RavenDB's batches);
// otherwise each stands alone (ArangoDB's multi-document calls).
func (s *Server) writeDocs(ctx context.Context, db string, ws []docWrite, atomic bool) ([]docResult, error) {
	if err := needRole(ctx, auth.Write, "writing documents"); err != nil {
		return nil, err
	}
	if err := s.checkBatch(len(ws)); err != nil {
		return nil, err
	}
	var out []docResult
	wrote := false
	now := s.now().UnixMilli()
	err := s.store.Update(ctx, func(tx storage.Tx) error {
		out = make([]docResult, len(ws))
		wrote = false
		batch := map[string]*storage.Record{} // what this batch has made so far
		recs := make([]*storage.Record, len(ws))
		ids := make([]string, len(ws))
		mint := newMinter(s, tx, db, ws)
		for i, w := range ws {
			res := &out[i]
			res.ID = w.ID
			if w.Err != nil {
				res.Err = w.Err
				continue
			}
			if w.Mint != "" {
				id, err := mint.mint(w.Mint)
				var de *docError
				switch {
				case errors.As(err, &de):
					res.Err = de
					continue
				case err != nil:
					return err
				}
				w.ID, w.Make, res.ID = id, w.Build(id), id
			}
			ids[i] = w.ID
			if !validDocID(w.ID) {
				res.Err = &docError{code: errcode.IllegalKey, msg: "illegal document id " + quote(truncate(w.ID, 100))}
				continue
			}
			cur, seen := batch[w.ID]
			if !seen {
				rec, found, err := storage.GetRecord(tx, db, w.ID)
				if err != nil {
					return err
				}
				if found {
					cur = &rec
				}
			}
			var live *storedDoc
			if cur != nil && !cur.Deleted {
				live = &storedDoc{Rev: cur.Rev, Doc: cur.Doc}
				res.OldRev, res.Old = cur.Rev, cur.Doc
			}
			doc, del, err := w.Make(live)
			if err != nil {
				var de *docError
				if !errors.As(err, &de) {
					de = &docError{code: errcode.BadDocument, msg: err.Error()}
				}
				res.Err = de
				continue
			}
			if del && live == nil {
				res.Err = &docError{code: errcode.NotFound, msg: "document not found: " + quote(truncate(w.ID, 100))}
				continue
			}
			if doc == nil && !del {
				res.Unchanged = true // kept as it is (ArangoDB's overwriteMode ignore)
				if live != nil {
					res.Rev, res.New = live.Rev, live.Doc
				}
				continue
			}
			if cur != nil {
				// Past the stored revision, which a client may have made
				// with a clock ahead of this one (revorder.go).
				s.clock.Observe(revClock(cur.Rev))
			}
			rev := s.clock.NextRev()
			rec := &storage.Record{Rev: rev, Deleted: del}
			if del {
				rec.At = now
			} else {
				d, err := normalizeDoc(doc, w.ID, rev)
				if err != nil {
					res.Err = &docError{code: errcode.BadDocument, msg: err.Error()}
					continue
				}
				rec.Doc = d
				res.New = d
			}
			res.Rev, res.Deleted = rev, del
			batch[w.ID] = rec
			recs[i] = rec
		}
		failed := false
		for i := range out {
			if out[i].Err != nil {
				failed = true
			}
		}
		if atomic && failed {
			for i := range out {
				out[i].Rev, out[i].New, out[i].Deleted, out[i].Unchanged = "", nil, false, false
			}
			return nil // nothing written, no counter moved
		}
		if err := mint.done(); err != nil {
			return err
		}
		if _, byRev := tx.(storage.RevTx); byRev {
			// On etcd the sequence is the commit's revision: no counter.
			for i, rec := range recs {
				if rec == nil {
					continue
				}
				if _, _, err := tx.Set(storage.DocKey(db, ids[i]), rec.Encode(), nil); err != nil {
					return err
				}
				wrote = true
			}
			if wrote {
				// A blind write: no transaction compares it (see lastWriteKey).
				_, _, err := tx.Set(storage.LastWriteKey(db), "", nil)
				return err
			}
			return nil
		}
		seq, err := storage.GetInt(tx, storage.SeqCounterKey(db))
		if err != nil {
			return err
		}
		for i, rec := range recs {
			if rec == nil {
				continue
			}
			id := ids[i]
			if old, found, err := storage.GetRecord(tx, db, id); err != nil {
				return err
			} else if found {
				if _, err := tx.Delete(storage.SeqKey(db, old.Seq)); err != nil && !errors.Is(err, buntdb.ErrNotFound) {
					return err
				}
			}
			seq++
			rec.Seq = seq
			if _, _, err := tx.Set(storage.DocKey(db, id), rec.Encode(), nil); err != nil {
				return err
			}
			if _, _, err := tx.Set(storage.SeqKey(db, seq), id, nil); err != nil {
				return err
			}
			wrote = true
		}
		if wrote {
			return storage.SetInt(tx, storage.SeqCounterKey(db), seq)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("write documents: %w", err)
	}
	if mintedIdents := 0; wrote {
		for _, w := range ws {
			if strings.HasSuffix(w.Mint, "|") {
				mintedIdents++
			}
		}
		s.metrics.identities.Add(int64(mintedIdents))
		n := 0
		for _, r := range out {
			if r.Rev != "" && !r.Unchanged {
				n++
			}
		}
		s.metrics.docsPushed.Add(int64(n))
		s.hub.notify(db)
	}
	return out, nil
}

// readDocs returns the live documents of ids (nil for each one missing or
// deleted) with their _rev.
func (s *Server) readDocs(db string, ids []string) ([]*storedDoc, error) {
	out := make([]*storedDoc, len(ids))
	err := s.store.View(func(tx storage.Tx) error {
		for i, id := range ids {
			rec, found, err := storage.GetRecord(tx, db, id)
			if err != nil {
				return err
			}
			if found && !rec.Deleted {
				out[i] = &storedDoc{Rev: rec.Rev, Doc: rec.Doc}
			}
		}
		return nil
	})
	return out, err
}
