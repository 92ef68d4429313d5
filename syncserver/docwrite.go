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

// DocWrite is one write of a batch.
type DocWrite struct {
	ID string
	// Err, when set, refuses the write before it reaches the store.
	Err *DocError
	// Make returns the new document (an object; _id and _rev are set), nil
	// with del set to delete it, or nil alone to leave it as it is. cur is the stored document, nil when
	// there is none (or a tombstone). It may fail with a *DocError.
	Make func(cur *StoredDoc) (doc json.RawMessage, del bool, err error)
	// Mint, when set ("prefix|" or "prefix/", checked by mintable), has
	// the server make the id inside the write's transaction; Build then
	// returns Make for it.
	Mint  string
	Build func(id string) func(cur *StoredDoc) (json.RawMessage, bool, error)
}

// StoredDoc is a live document as a write sees it.
type StoredDoc struct {
	Rev string
	Doc json.RawMessage
}

// DocError is a write refused for one document.
type DocError struct {
	Code errcode.Code
	Msg  string
	Rev  string // the stored _rev, for conflicts
	ID   string // the document's id, for a failed precondition
}

func (e *DocError) Error() string { return e.Msg }

// DocResult is what became of one DocWrite.
type DocResult struct {
	ID      string
	Rev     string          // the new _rev ("" when nothing was written)
	OldRev  string          // the _rev before ("" when there was none)
	Old     json.RawMessage // the document before, nil when there was none
	New     json.RawMessage // the document written, nil for a delete
	Deleted bool
	// Unchanged is set when Make left the document as it was: Rev and New
	// are the stored ones.
	Unchanged bool
	Err       *DocError
}

// WriteDocs applies ws in one transaction and one fsync. With atomic, a
// refused write refuses them all and nothing is written (RavenDB's batches);
// otherwise each stands alone (ArangoDB's multi-document calls).
func (s *Server) WriteDocs(ctx context.Context, db string, ws []DocWrite, atomic bool) ([]DocResult, error) {
	if err := NeedRole(ctx, auth.Write, "writing documents"); err != nil {
		return nil, err
	}
	if err := s.CheckBatch(len(ws)); err != nil {
		return nil, err
	}
	var out []DocResult
	wrote := false
	now := s.now().UnixMilli()
	err := s.store.Update(ctx, func(tx storage.Tx) error {
		out = make([]DocResult, len(ws))
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
				var de *DocError
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
				res.Err = &DocError{Code: errcode.IllegalKey, Msg: "illegal document id " + Quote(Truncate(w.ID, 100))}
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
			var live *StoredDoc
			if cur != nil && !cur.Deleted {
				live = &StoredDoc{Rev: cur.Rev, Doc: cur.Doc}
				res.OldRev, res.Old = cur.Rev, cur.Doc
			}
			doc, del, err := w.Make(live)
			if err != nil {
				var de *DocError
				if !errors.As(err, &de) {
					de = &DocError{Code: errcode.BadDocument, Msg: err.Error()}
				}
				res.Err = de
				continue
			}
			if del && live == nil {
				res.Err = &DocError{Code: errcode.NotFound, Msg: "document not found: " + Quote(Truncate(w.ID, 100))}
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
					res.Err = &DocError{Code: errcode.BadDocument, Msg: err.Error()}
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

// ReadDocs returns the live documents of ids (nil for each one missing or
// deleted) with their _rev.
func (s *Server) ReadDocs(db string, ids []string) ([]*StoredDoc, error) {
	out := make([]*StoredDoc, len(ids))
	err := s.store.View(func(tx storage.Tx) error {
		for i, id := range ids {
			rec, found, err := storage.GetRecord(tx, db, id)
			if err != nil {
				return err
			}
			if found && !rec.Deleted {
				out[i] = &StoredDoc{Rev: rec.Rev, Doc: rec.Doc}
			}
		}
		return nil
	})
	return out, err
}
