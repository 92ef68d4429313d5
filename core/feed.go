package core

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/buntdb"
)

// The local change feed (Options.ChangeFeed): every document written in
// this store, by a local write or a remote change applied, gets the next
// local sequence number, in the same transaction, so an app can read what
// changed since a point (Changes) to build its views on. Each document is
// in the feed once, at its latest write, as in the server's feed.
const (
	feedSeqKey    = "sys/lseq" // the last local sequence number
	feedPrefix    = "lseq/"    // lseq/<20 digits> → document id
	feedIDsPrefix = "lseqid/"  // lseqid/<id> → its sequence number
)

func feedKey(seq int64) string { return feedPrefix + fmt.Sprintf("%020d", seq) }

// recordFeed gives every document tx changed the next local sequence
// number. It runs inside the writing transaction, after its writes.
func recordFeed(tx *txn) error {
	var ids []string
	seen := map[string]bool{}
	for _, c := range tx.changes {
		if id, ok := strings.CutPrefix(c.Key, docPrefix); ok && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	seq := readInt(tx, feedSeqKey)
	for _, id := range ids {
		if old, err := tx.Get(feedIDsPrefix + id); err == nil {
			if n, err := strconv.ParseInt(old, 10, 64); err == nil {
				if err := deleteKey(tx, feedKey(n)); err != nil {
					return err
				}
			}
		} else if !errors.Is(err, buntdb.ErrNotFound) {
			return err
		}
		seq++
		if _, _, err := tx.Set(feedKey(seq), id, nil); err != nil {
			return err
		}
		if _, _, err := tx.Set(feedIDsPrefix+id, strconv.FormatInt(seq, 10), nil); err != nil {
			return err
		}
	}
	_, _, err := tx.Set(feedSeqKey, strconv.FormatInt(seq, 10), nil)
	return err
}

func readInt(tx *txn, key string) int64 {
	v, err := tx.Get(key)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// FeedEntry is one document in the local change feed: its latest version,
// or Deleted.
type FeedEntry struct {
	Seq     int64
	ID      string
	Rev     string
	Doc     []byte // nil when Deleted
	Deleted bool
}

// MaxChangesLimit bounds one call of Changes.
const MaxChangesLimit = 10000

// Changes returns up to limit documents written after the local sequence
// number since (0 for all), in the order of their latest writes, and the
// sequence number to pass next time. limit is 1 to MaxChangesLimit; 0
// means 1000. It needs Options.ChangeFeed (ErrBadParameter otherwise).
func (s *Store) Changes(since int64, limit int) ([]FeedEntry, int64, error) {
	if !s.feed {
		return nil, since, newError(ErrBadParameter, "", "", "changes: this store keeps no change feed (open it with the change feed on)")
	}
	switch {
	case limit == 0:
		limit = 1000
	case limit < 0 || limit > MaxChangesLimit:
		return nil, since, newError(ErrBadParameter, "", "", "changes: limit must be 1 to %d", MaxChangesLimit)
	}
	if since < 0 {
		return nil, since, newError(ErrBadParameter, "", "", "changes: since must be 0 or more")
	}
	var out []FeedEntry
	last := since
	err := s.view(func(tx *txn) error {
		var err error
		tx.AscendRange("", feedKey(since+1), feedPrefix+"\xff", func(key, id string) bool {
			if len(out) == limit {
				return false
			}
			seq, perr := strconv.ParseInt(key[len(feedPrefix):], 10, 64)
			if perr != nil {
				err = fmt.Errorf("feed key %q: %w", key, perr)
				return false
			}
			e := FeedEntry{Seq: seq, ID: id}
			doc, gerr := tx.Get(docPrefix + id)
			switch {
			case errors.Is(gerr, buntdb.ErrNotFound):
				e.Deleted = true
				if m, found, merr := getMeta(tx, id); merr == nil && found {
					e.Rev = m.Rev
				}
			case gerr != nil:
				err = gerr
				return false
			default:
				e.Doc, e.Rev = []byte(doc), readHeader(doc).Rev
			}
			out = append(out, e)
			last = seq
			return true
		})
		return err
	})
	if err != nil {
		return nil, since, fmt.Errorf("read changes: %w", err)
	}
	return out, last, nil
}

// FeedHead returns the newest local sequence number of the change feed: 0
// for an empty feed. It needs Options.ChangeFeed (ErrBadParameter
// otherwise).
func (s *Store) FeedHead() (int64, error) {
	if !s.feed {
		return 0, newError(ErrBadParameter, "", "", "changes: this store keeps no change feed (open it with the change feed on)")
	}
	var head int64
	err := s.view(func(tx *txn) error {
		head = readInt(tx, feedSeqKey)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("read feed head: %w", err)
	}
	return head, nil
}

// FeedHeadOf returns the change feed's newest sequence number after the
// write transaction whose changes a Journal received, and whether that
// transaction moved it (it wrote documents of a store with a change feed).
func FeedHeadOf(changes []Change) (int64, bool) {
	for i := len(changes) - 1; i >= 0; i-- {
		if changes[i].Key == feedSeqKey && !changes[i].Deleted {
			n, err := strconv.ParseInt(changes[i].Value, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// DocIDOf returns the document id a Journal change is about, and whether it
// is about a document's body at all.
func DocIDOf(c Change) (string, bool) {
	return strings.CutPrefix(c.Key, docPrefix)
}
