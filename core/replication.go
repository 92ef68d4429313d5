package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/hilodb/hilodb/core/revision"
	"github.com/tidwall/buntdb"
	"github.com/tidwall/gjson"
)

// Keys of the replication bookkeeping, beside docPrefix. A document with no
// pending mark is in sync with the server: its base is its own _rev. So a
// synced store holds nothing but its documents, and the hot paths (a put,
// an acknowledgement, a remote change) touch one mark at most.
const (
	// dirty/<id> → syncMeta while a local write awaits the server: the
	// key a pending mark (pending.go) has in the journal and snapshots.
	dirtyPrefix    = "dirty/"
	conflictPrefix = "conflict/" // conflict/<id>\x00<rev> → a losing version
	// lostpush/<id>\x00<rev> → a PendingWrite that lost to a version of
	// the feed before it was pushed (conflicts.go, LostWrites).
	lostPushPrefix = "lostpush/"
	checkpointKey  = "sys/checkpoint"
)

// Version is one version of a document: its body (with _id and _rev inside)
// or a deletion.
type Version struct {
	ID      string          `json:"id"`
	Rev     string          `json:"rev"`
	Doc     json.RawMessage `json:"doc,omitempty"`
	Deleted bool            `json:"deleted,omitempty"`
	// Won, in a version Conflicts keeps, says this store's write won over
	// it: it is another client's write the server refused (Doc is nil when
	// the server left a large one out). Otherwise the kept version is this
	// store's write that lost, or the server's it set aside.
	Won bool `json:"won,omitempty"`
}

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

// Resolver settles a conflict between the local version and the server's.
// Returning remote (same Rev) keeps the server's version; returning anything
// else makes it a new local write on top of the server's revision, pushed on
// the next sync. A Resolver must be deterministic in what it keeps.
type Resolver func(local, remote Version) (Version, error)

// ServerWins keeps the server's version; the local one stays readable as a
// conflict. It is the default policy.
func ServerWins(local, remote Version) (Version, error) { return remote, nil }

// LocalWins keeps the local version, pushed on top of the server's.
func LocalWins(local, remote Version) (Version, error) { return local, nil }

// Conflict reports a conflict that was resolved: the two versions and which
// one the store kept ("remote", "local" or "merged").
//
// Won says this store's write won: the server took it and refused Remote,
// another client's write (which that client sees as a conflict it lost);
// Local is the version that won and Kept is "local".
type Conflict struct {
	ID     string
	Local  Version
	Remote Version
	Kept   string
	Won    bool
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

func keepConflict(tx *txn, v Version) error {
	if v.Rev == "" {
		return nil
	}
	b, _ := json.Marshal(v)
	_, _, err := tx.Set(conflictPrefix+v.ID+"\x00"+v.Rev, string(b), nil)
	return err
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

// ForEach calls fn with every document, in id order, until fn returns an
// error.
func (s *Store) ForEach(fn func(id string, doc []byte) error) error {
	var ferr error
	err := s.view(func(tx *txn) error {
		return ascendPrefix(tx, docPrefix, func(k, v string) bool {
			ferr = fn(k[len(docPrefix):], []byte(v))
			return ferr == nil
		})
	})
	if ferr != nil {
		return ferr
	}
	return err
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
