package core

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/hilodb/hilodb/core/revision"
	"github.com/hilodb/hilodb/core/uuid"
)

// Applying a prepared write inside a write transaction: the checks against
// the stored document, then the document, its pending state and the
// change record.

// header is the part of a stored document the write path reads.
type header struct {
	Rev  string `json:"_rev"`
	Meta struct {
		Collection string `json:"@collection"`
	} `json:"@metadata"`
}

// nodeSeqID makes the id of a document stored with an id ending in the
// separator (prefix includes it): this node's next sequence number and its
// node tag. A node with no tag from the server yet (a device that never
// reached it) makes prefix and a time-ordered UUID instead, unique without
// one (docs/ids.md).
func (s *Store) nodeSeqID(tx *txn, prefix string) (string, *Error) {
	node := s.clock.Node()
	if !revision.IsNodeTag(node) {
		return prefix + uuid.NewV7(), nil
	}
	n := readUint(tx, nodeSeqKey) + 1
	if _, _, err := tx.Set(nodeSeqKey, strconv.FormatUint(n, 10), nil); err != nil {
		return "", newError(ErrInternal, "", "", "advance node sequence: %v", err)
	}
	return FormatNodeSeqID(prefix, n, node), nil
}

// apply performs w inside tx. It checks everything before it writes, so a
// failed item leaves tx as it was (except for the node sequence, which only
// has to increase).
func (s *Store) apply(tx *txn, w *write) (Result, *Error) {
	if w.err != nil {
		return Result{}, w.err
	}
	if w.id == "" && w.seqPrefix != "" {
		id, err := s.nodeSeqID(tx, w.seqPrefix)
		if err != nil {
			return Result{}, err
		}
		w.id = id
	}
	_, key, err := ParseID(w.id, s.sep)
	if err != nil {
		return Result{}, err.(*Error)
	}
	docKey := docPrefix + w.id
	if w.kind == opInsert && w.fresh && w.ifRev == "" && !w.mustBeNew {
		if res, e, done := s.applyFresh(tx, w, key, docKey); done {
			return res, e
		}
	}
	curRaw, getErr := tx.Get(docKey)
	exists := getErr == nil
	var cur header
	if exists {
		cur = readHeader(curRaw)
	}
	res := Result{ID: w.id, Key: key}
	kind := w.kind
	if kind == opInsert {
		if w.mustBeNew && exists {
			return res, newError(ErrConflict, key, cur.Rev, "conflict, _rev values do not match: %q was stored meanwhile", w.id)
		}
		if exists && w.opts.madeIDsNew() && (w.fresh || w.seqPrefix != "" || w.identity != "") {
			return res, newError(ErrUniqueConstraint, key, cur.Rev, "unique constraint violated: the id made for this document, %q, names a document that exists; insert again for the next", w.id)
		}
		if exists {
			mode, e := w.opts.overwrite()
			if e != nil {
				return res, e
			}
			// A document without @collection (written by another kind of
			// client and replicated here) belongs to whoever writes it.
			if cur.Meta.Collection != "" && cur.Meta.Collection != w.coll {
				return res, newError(ErrUniqueConstraint, key, cur.Rev, "unique constraint violated: %q exists in collection %q; a document cannot move to %q", w.id, cur.Meta.Collection, w.coll)
			}
			switch mode {
			case OverwriteConflict:
				return res, newError(ErrUniqueConstraint, key, cur.Rev, "unique constraint violated: document %q exists", w.id)
			case OverwriteIgnore:
				res.Rev = cur.Rev
				if w.opts != nil && w.opts.Silent {
					res.Silent = true
				}
				return res, nil
			case OverwriteReplace:
				kind = opReplace
			case OverwriteUpdate:
				kind = opUpdate
			}
		}
	} else if !exists && w.missingOK {
		return res, nil
	} else if !exists || cur.Meta.Collection != "" && cur.Meta.Collection != w.coll && !w.anyColl {
		return res, newError(ErrNotFound, key, "", "document %q not found in collection %q", w.id, w.coll)
	}
	if exists {
		expect := w.ifRev
		if kind != opInsert && w.opts != nil && w.opts.IfMatch != "" {
			expect = w.opts.IfMatch
		}
		if expect != "" && expect != cur.Rev {
			return res, newError(ErrConflict, key, cur.Rev, "conflict, _rev values do not match: %q has _rev %q, not %q", w.id, cur.Rev, expect)
		}
		res.OldRev = cur.Rev
		if w.opts != nil && w.opts.ReturnOld {
			res.Old = json.RawMessage(curRaw)
		}
	}
	if kind == opRemove {
		if _, err := tx.Delete(docKey); err != nil {
			return res, newError(ErrInternal, key, "", "remove %q: %v", w.id, err)
		}
		// The deletion travels to the server as a tombstone with a new _rev.
		if err := trackWrite(tx, docKey, cur.Rev, s.nextRev(tx), true); err != nil {
			return res, newError(ErrInternal, key, "", "track removal of %q: %v", w.id, err)
		}
		res.Rev = cur.Rev
		res.OldRev = ""
		if w.opts != nil && w.opts.Silent {
			res = Result{Silent: true}
		}
		return res, nil
	}
	body, plain := w.body, w.plain
	if kind == opUpdate {
		var old, patch map[string]json.RawMessage
		if err := json.Unmarshal([]byte(curRaw), &old); err != nil {
			return res, newError(ErrInternal, key, "", "stored document %q is corrupt: %v", w.id, err)
		}
		if err := json.Unmarshal(w.body, &patch); err != nil {
			return res, newError(ErrBadJSON, key, "", "malformed JSON: %v", err)
		}
		merged, err := json.Marshal(mergeFields(old, patch, w.opts.keepNull(), w.opts.mergeObjects()))
		if err != nil {
			return res, newError(ErrBadJSON, key, "", "malformed JSON: %v", err)
		}
		body, plain = merged, false
	}
	rev := s.nextRev(tx)
	out, e := encodeDoc(body, plain, w.id, key, rev, w.coll, w.meta)
	if e != nil {
		return res, e
	}
	if _, _, err := tx.Set(docKey, docString(out, w.opts.newCopied()), nil); err != nil {
		return res, newError(ErrInternal, key, "", "write %q: %v", w.id, err)
	}
	if err := trackWrite(tx, docKey, cur.Rev, rev, false); err != nil {
		return res, newError(ErrInternal, key, "", "track write of %q: %v", w.id, err)
	}
	res.Rev = rev
	if w.opts != nil && w.opts.ReturnNew {
		res.New = out
	}
	if w.opts != nil && w.opts.Silent {
		res = Result{Silent: true}
	}
	return res, nil
}

// storedRev returns the revision tmp as it is written in the stored
// document, from revAt on: a revision that shares the document's bytes
// rather than its own. Should the document hold it escaped, it returns a
// copy of tmp.
func storedRev(stored string, revAt int, tmp string) string {
	if end := revAt + len(tmp); end <= len(stored) && stored[revAt:end] == tmp {
		return stored[revAt:end]
	}
	return strings.Clone(tmp)
}

// applyFresh inserts a document whose id was generated here without
// looking it up first: no document has such an id (ids are unique), so the
// lookup only ever finds nothing, and under WebAssembly it costs as much as
// encoding the document. Should one exist after all, the write is undone
// and done reports false: apply then takes the general path, which checks
// everything against the existing document.
func (s *Store) applyFresh(tx *txn, w *write, key, docKey string) (res Result, e *Error, done bool) {
	var rb revBuf
	tmp := s.nextRevIn(tx, &rb) // the revision's bytes, until the stored document holds them
	copied := w.opts.newCopied()
	size := encodedSize(w.body, w.id, key, tmp, w.coll)
	var room []byte
	if copied {
		room = make([]byte, 0, size) // handed to the caller, who may write to it
	} else {
		room = tx.docRoom(size) // the stored document's own bytes
	}
	out, revAt, e := appendDoc(room, w.body, w.plain, w.id, key, tmp, w.coll, w.meta)
	if e != nil {
		return Result{}, nil, false // the general path reports it, after its checks
	}
	stored := docString(out, copied)
	rev := storedRev(stored, revAt, tmp)
	mark := tx.mark()
	prev, replaced, err := tx.Set(docKey, stored, nil)
	if err != nil {
		return Result{ID: w.id, Key: key}, newError(ErrInternal, key, "", "write %q: %v", w.id, err), true
	}
	if replaced {
		if err := tx.undoSet(mark, docKey, prev); err != nil {
			return Result{ID: w.id, Key: key}, newError(ErrInternal, key, "", "write %q: %v", w.id, err), true
		}
		return Result{}, nil, false
	}
	if err := trackWrite(tx, docKey, "", rev, false); err != nil {
		return Result{ID: w.id, Key: key}, newError(ErrInternal, key, "", "track write of %q: %v", w.id, err), true
	}
	res = Result{ID: w.id, Key: key, Rev: rev}
	if w.opts != nil && w.opts.ReturnNew {
		res.New = out
	}
	if w.opts != nil && w.opts.Silent {
		res = Result{Silent: true}
	}
	return res, nil, true
}
