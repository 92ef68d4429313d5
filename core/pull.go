package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/hilodb/hilodb/core/revision"
	"github.com/tidwall/buntdb"
	"github.com/tidwall/gjson"
)

// RemoteChange is a version from the server's change feed.
type RemoteChange struct {
	Version
	Seq int64
	// DocHasRev says Doc's top-level _rev (its first) is Rev already, as
	// the caller's decoder found: ApplyRemote then stores Doc without
	// reading it again. False makes it look (and set _id and _rev when
	// they differ).
	DocHasRev bool
	// PushConflict marks the server's current version that refused a push
	// of the document's pending write. When the checkpoint is already past
	// its Seq, this store has applied it (or a later version), so the
	// pending write was made on top of it: it is set on top of Rev and
	// pushed again, instead of being skipped as an old change, which would
	// leave it refused on every push.
	PushConflict bool
	// Lost are writes the server refused as conflicts against this
	// version. When this store made the version (its node tag is Rev's),
	// its write won: ApplyRemote keeps each as a conflict and reports it.
	Lost []Version
}

// Checkpoint returns the sequence of the last server change applied.
func (s *Store) Checkpoint() (int64, error) {
	var n int64
	err := s.view(func(tx *txn) error {
		v, err := tx.Get(checkpointKey)
		if errors.Is(err, buntdb.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		n, err = strconv.ParseInt(v, 10, 64)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("read checkpoint: %w", err)
	}
	return n, nil
}

// ApplyResult tells what ApplyRemote did.
type ApplyResult struct {
	// Changed are the remote versions that changed the local store: not
	// those skipped below the checkpoint, already here, or this store's own
	// writes echoed back, nor a conflict settled by keeping the local
	// version.
	Changed []Version
	// Conflicts are the conflicts settled.
	Conflicts []Conflict
}

// ApplyRemote applies changes from the server's feed in one transaction and
// moves the checkpoint to last (when last is higher). Changes at or below
// the checkpoint are skipped: everything up to it is applied already or
// superseded by a later change. A document without pending local writes
// takes the server's version; one with pending writes that the server's
// version does not already include is a conflict, settled by resolve (nil
// means ServerWins). The losing version is kept readable through Conflicts.
func (s *Store) ApplyRemote(changes []RemoteChange, last int64, resolve Resolver) (ApplyResult, error) {
	if resolve == nil {
		resolve = ServerWins
	}
	var res ApplyResult
	err := s.update(func(tx *txn) error {
		res = ApplyResult{}
		ckpt, err := txInt(tx, checkpointKey)
		if err != nil {
			return err
		}
		// With no write pending (after a push, or in a store that only
		// reads), no document has a dirty key, and applying remote changes
		// makes none: each change is then a lookup shorter.
		anyDirty := tx.anyPending()
		for i, ch := range changes {
			if ch.Seq > 0 && ch.Seq <= ckpt {
				// Already applied, or superseded by a later change applied
				// from another batch (a pull and the live feed can overlap).
				if ch.PushConflict {
					if err := rebaseOnto(tx, ch.ID, ch.Rev); err != nil {
						return fmt.Errorf("rebase %q: %w", ch.ID, err)
					}
				}
				continue
			}
			changed, c, err := s.applyOne(tx, ch, resolve, anyDirty)
			if err != nil {
				return fmt.Errorf("apply %q: %w", ch.ID, err)
			}
			if changed {
				if res.Changed == nil {
					// Room for the rest of the batch: a pull into a new store
					// changes every document, and growing the slice a
					// doubling at a time moved each version again.
					res.Changed = make([]Version, 0, len(changes)-i)
				}
				res.Changed = append(res.Changed, ch.Version)
			}
			if c != nil {
				res.Conflicts = append(res.Conflicts, *c)
			}
			if len(ch.Lost) > 0 {
				won, err := s.noteWon(tx, ch)
				if err != nil {
					return fmt.Errorf("apply %q: %w", ch.ID, err)
				}
				res.Conflicts = append(res.Conflicts, won...)
			}
		}
		if last > ckpt {
			_, _, err = tx.Set(checkpointKey, strconv.FormatInt(last, 10), nil)
			return err
		}
		return nil
	})
	if err != nil {
		return ApplyResult{}, fmt.Errorf("apply remote changes: %w", err)
	}
	return res, nil
}

func txInt(tx *txn, key string) (int64, error) {
	v, err := tx.Get(key)
	if errors.Is(err, buntdb.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

// applyOne applies one remote version and reports whether the local store
// changed and the conflict it settled, if any.
func (s *Store) applyOne(tx *txn, ch RemoteChange, resolve Resolver, anyDirty bool) (bool, *Conflict, error) {
	remote := ch.Version
	if v, _, err := revision.Decode(remote.Rev); err == nil {
		s.clock.Observe(v)
	}
	docKey := docPrefix + remote.ID
	if !anyDirty && !remote.Deleted && remote.Rev != "" {
		return takeRemoteAtOnce(tx, docKey, remote, ch.DocHasRev)
	}
	m, found, err := getMetaAt(tx, remote.ID, docKey, anyDirty)
	if err != nil {
		return false, nil, err
	}
	if !m.Dirty {
		if m.Rev == remote.Rev && remote.Rev != "" {
			return false, nil, nil // already here
		}
		changed := found || !remote.Deleted // deleting nothing is no change
		return changed, nil, takeRemote(tx, docKey, remote, false)
	}
	switch {
	case m.Rev == remote.Rev:
		// Our own write, echoed back (its acknowledgement may have been lost).
		tx.dropPending(remote.ID)
		return false, nil, nil
	case remote.Rev == m.Base:
		return false, nil, nil // nothing the local write does not build on
	case s.ownEarlier(remote.Rev, m.Rev):
		// An earlier write of this node, pushed before a crash took its
		// acknowledgement: the pending write builds on it, so it is its
		// base now, not a conflict.
		m.Base = remote.Rev
		return false, nil, putMeta(tx, remote.ID, m)
	}
	local := Version{ID: remote.ID, Rev: m.Rev, Deleted: m.Deleted}
	if !m.Deleted {
		doc, err := tx.Get(docPrefix + remote.ID)
		if err != nil {
			return false, nil, fmt.Errorf("read local version: %w", err)
		}
		local.Doc = json.RawMessage(doc)
	}
	res, err := resolve(local, remote)
	if err != nil {
		return false, nil, fmt.Errorf("resolve conflict: %w", err)
	}
	c := &Conflict{ID: remote.ID, Local: local, Remote: remote}
	if res.Rev == remote.Rev && res.Deleted == remote.Deleted {
		c.Kept = "remote"
		if err := keepConflict(tx, local); err != nil {
			return false, nil, err
		}
		if !ch.PushConflict && m.Base != "" {
			// The server never saw this write: it goes out once, to be
			// refused, so that the client whose write won hears of it.
			lost := PendingWrite{ID: remote.ID, BaseRev: m.Base, Rev: m.Rev, Doc: local.Doc, Deleted: m.Deleted}
			if err := keepLostWrite(tx, lost); err != nil {
				return false, nil, err
			}
		}
		return true, c, takeRemote(tx, docKey, remote, true)
	}
	c.Kept = "merged"
	if res.Rev == local.Rev {
		c.Kept = "local"
	}
	if err := keepConflict(tx, remote); err != nil {
		return false, nil, err
	}
	rev := s.clock.NextRev()
	nm := syncMeta{Base: remote.Rev, Rev: rev, Deleted: res.Deleted, Dirty: true}
	changed := c.Kept == "merged"
	if res.Deleted {
		if err := deleteKey(tx, docPrefix+remote.ID); err != nil {
			return false, nil, err
		}
		return changed, c, putMeta(tx, remote.ID, nm)
	}
	doc, err := withFields(res.Doc, remote.ID, rev)
	if err != nil {
		return false, nil, fmt.Errorf("resolved document: %w", err)
	}
	if _, _, err := tx.Set(docPrefix+remote.ID, string(doc), nil); err != nil {
		return false, nil, err
	}
	return changed, c, putMeta(tx, remote.ID, nm)
}

// ownEarlier reports whether rev was made by this store's node before
// local, a revision of the same node: the node's clock only goes forward.
func (s *Store) ownEarlier(rev, local string) bool {
	node := s.clock.Node()
	if !revision.IsNodeTag(node) {
		return false
	}
	v, n, err := revision.Decode(rev)
	if err != nil || n != node {
		return false
	}
	lv, ln, err := revision.Decode(local)
	return err == nil && ln == node && v < lv
}

// takeRemote makes the server's version the local one, with nothing
// pending; dirty says whether a pending write's key is to be dropped.
func takeRemote(tx *txn, docKey string, remote Version, dirty bool) error {
	if dirty {
		tx.dropPending(remote.ID)
	}
	if remote.Deleted || remote.Rev == "" {
		return deleteKey(tx, docKey)
	}
	doc, err := remoteDoc(remote)
	if err != nil {
		return err
	}
	_, _, err = tx.Set(docKey, string(doc), nil)
	return err
}

// takeRemoteAtOnce is applyOne for a version of a document (not a
// deletion) when nothing is pending: the server's version is taken unless
// it is here already. It sets it at once and looks at what that replaced,
// one B-tree walk where a look-up and then a set took two (a pull into a
// new store sets every document); a version already here is put back.
func takeRemoteAtOnce(tx *txn, docKey string, remote Version, hasRev bool) (changed bool, _ *Conflict, _ error) {
	doc := remote.Doc
	if !hasRev {
		var err error
		if doc, err = remoteDoc(remote); err != nil {
			return false, nil, err
		}
	}
	mark := tx.mark()
	prev, replaced, err := tx.Set(docKey, string(doc), nil)
	if err != nil || !replaced {
		return err == nil, nil, err
	}
	if readHeader(prev).Rev == remote.Rev {
		return false, nil, tx.undoSet(mark, docKey, prev) // already here
	}
	return true, nil, nil
}

// remoteDoc returns the server's version of a document as it is stored
// here: with the server's _rev, the base of the next local write.
func remoteDoc(remote Version) (json.RawMessage, error) {
	if gjson.GetBytes(remote.Doc, "_rev").String() == remote.Rev {
		return remote.Doc, nil
	}
	return withFields(remote.Doc, remote.ID, remote.Rev)
}

// withFields returns doc with _id and _rev set.
func withFields(doc json.RawMessage, id, rev string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil || m == nil {
		return nil, newError(ErrBadJSON, id, "", "document must be a JSON object")
	}
	m["_id"], _ = json.Marshal(id)
	m["_rev"], _ = json.Marshal(rev)
	return json.Marshal(m)
}

// rebaseOnto sets id's pending write, if any, on top of the server's
// revision rev.
func rebaseOnto(tx *txn, id, rev string) error {
	m, ok := tx.pending(id)
	if !ok || m.Base == rev || m.Rev == rev {
		return nil
	}
	m.Base, m.Dirty = rev, true
	return putMeta(tx, id, m)
}

// ResetCheckpoint sets the checkpoint back to 0, so the next pull fetches
// the whole database again (a resync).
func (s *Store) ResetCheckpoint() error {
	err := s.update(func(tx *txn) error { return deleteKey(tx, checkpointKey) })
	if err != nil {
		return fmt.Errorf("reset checkpoint: %w", err)
	}
	return nil
}

// DropUnseen deletes the documents in sync with the server (no pending
// local write) that are not in seen: after a full resync, those are
// documents deleted on the server whose tombstones were compacted away. It
// returns how many it deleted.
func (s *Store) DropUnseen(seen map[string]bool) (int, error) {
	var drop []string
	err := s.update(func(tx *txn) error {
		err := ascendPrefix(tx, docPrefix, func(k, _ string) bool {
			if id := k[len(docPrefix):]; !seen[id] {
				drop = append(drop, id)
			}
			return true
		})
		if err != nil {
			return err
		}
		kept := drop[:0]
		for _, id := range drop {
			if _, ok := tx.pending(id); ok {
				continue // pending: the next push decides
			}
			if err := deleteKey(tx, docPrefix+id); err != nil {
				return err
			}
			kept = append(kept, id)
		}
		drop = kept
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("drop unseen documents: %w", err)
	}
	return len(drop), nil
}

// AdvanceCheckpoint moves the checkpoint from `from` to `to` if it is still
// at `from`: a push that found the server's change sequence at the
// checkpoint and left it at `to` made every change in between itself, and
// the store has all of them already.
func (s *Store) AdvanceCheckpoint(from, to int64) error {
	if to <= from {
		return nil
	}
	err := s.update(func(tx *txn) error {
		cur, err := txInt(tx, checkpointKey)
		if err != nil || cur != from {
			return err
		}
		_, _, err = tx.Set(checkpointKey, strconv.FormatInt(to, 10), nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("advance checkpoint: %w", err)
	}
	return nil
}
