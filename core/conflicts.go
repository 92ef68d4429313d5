package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hilodb/hilodb/core/revision"
	"github.com/tidwall/buntdb"
)

// Conflicts returns the losing versions kept for id, oldest revision first.
func (s *Store) Conflicts(id string) ([]Version, error) {
	var out []Version
	err := s.view(func(tx *txn) error {
		prefix := conflictPrefix + id + "\x00"
		return tx.AscendGreaterOrEqual("", prefix, func(k, v string) bool {
			if !strings.HasPrefix(k, prefix) {
				return false
			}
			var ver Version
			if json.Unmarshal([]byte(v), &ver) == nil {
				out = append(out, ver)
			}
			return true
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list conflicts of %q: %w", id, err)
	}
	return out, nil
}

// ConflictIDs returns the ids of the documents with losing versions kept
// (unresolved conflicts), in id order.
func (s *Store) ConflictIDs() ([]string, error) {
	var out []string
	err := s.view(func(tx *txn) error {
		return tx.AscendGreaterOrEqual("", conflictPrefix, func(k, _ string) bool {
			rest, ok := strings.CutPrefix(k, conflictPrefix)
			if !ok {
				return false
			}
			id, _, _ := strings.Cut(rest, "\x00")
			if len(out) == 0 || out[len(out)-1] != id {
				out = append(out, id)
			}
			return true
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list conflicts: %w", err)
	}
	return out, nil
}

// ClearConflicts forgets the losing versions kept for id.
func (s *Store) ClearConflicts(id string) error {
	var keys []string
	prefix := conflictPrefix + id + "\x00"
	err := s.update(func(tx *txn) error {
		err := tx.AscendGreaterOrEqual("", prefix, func(k, _ string) bool {
			if !strings.HasPrefix(k, prefix) {
				return false
			}
			keys = append(keys, k)
			return true
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := deleteKey(tx, k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("clear conflicts of %q: %w", id, err)
	}
	return nil
}

// noteWon keeps the writes the server refused against ch's version, when
// this store made that version, as conflicts its write won, and returns
// them; a write kept already (the change came again) is left out.
func (s *Store) noteWon(tx *txn, ch RemoteChange) ([]Conflict, error) {
	node := s.clock.Node()
	if _, n, err := revision.Decode(ch.Rev); err != nil || n != node || node == "" {
		return nil, nil
	}
	var out []Conflict
	for _, l := range ch.Lost {
		if l.Rev == "" {
			continue
		}
		key := conflictPrefix + ch.ID + "\x00" + l.Rev
		if _, err := tx.Get(key); err == nil {
			continue
		} else if !errors.Is(err, buntdb.ErrNotFound) {
			return nil, err
		}
		lost := Version{ID: ch.ID, Rev: l.Rev, Doc: l.Doc, Deleted: l.Deleted, Won: true}
		if err := keepConflict(tx, lost); err != nil {
			return nil, err
		}
		out = append(out, Conflict{ID: ch.ID, Local: ch.Version, Remote: lost, Kept: "local", Won: true})
	}
	return out, nil
}

// keepLostWrite keeps w, a local write that lost to a version of the feed
// before it was pushed, to be pushed once (LostWrites).
func keepLostWrite(tx *txn, w PendingWrite) error {
	b, err := json.Marshal(w)
	if err != nil {
		return err
	}
	_, _, err = tx.Set(lostPushPrefix+w.ID+"\x00"+w.Rev, string(b), nil)
	return err
}

// LostWrites returns up to limit local writes that lost to a version the
// change feed brought before they were pushed (the default policy kept the
// server's version). The server never saw them, so the client whose write
// won would not hear of the conflict: each is pushed once as it was, on its
// old base, for the server to refuse and note against the winning version
// (docs/protocol.md, push). DropLostWrites forgets them once pushed.
func (s *Store) LostWrites(limit int) ([]PendingWrite, error) {
	var out []PendingWrite
	err := s.view(func(tx *txn) error {
		return tx.AscendGreaterOrEqual("", lostPushPrefix, func(k, v string) bool {
			if !strings.HasPrefix(k, lostPushPrefix) {
				return false
			}
			var w PendingWrite
			if json.Unmarshal([]byte(v), &w) == nil {
				out = append(out, w)
			}
			return len(out) < limit
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list lost writes: %w", err)
	}
	return out, nil
}

// DropLostWrites forgets lost writes LostWrites returned.
func (s *Store) DropLostWrites(ws []PendingWrite) error {
	err := s.update(func(tx *txn) error {
		for _, w := range ws {
			if err := deleteKey(tx, lostPushPrefix+w.ID+"\x00"+w.Rev); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("drop lost writes: %w", err)
	}
	return nil
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

func keepConflict(tx *txn, v Version) error {
	if v.Rev == "" {
		return nil
	}
	b, _ := json.Marshal(v)
	_, _, err := tx.Set(conflictPrefix+v.ID+"\x00"+v.Rev, string(b), nil)
	return err
}
