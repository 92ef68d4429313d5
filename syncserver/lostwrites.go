package syncserver

// Lost writes: a pushed write refused as a conflict is noted on the stored
// version that won, which is written again under a new sequence, so that
// the change feed brings the version with its "lost" list to every
// replica; the one whose write won learns of the conflict from it (the
// one whose write lost learns of it from the push's reply). A version
// carries at most maxLost notes, and a losing document of at most
// maxLostDoc bytes; a later version of the document starts with none.

import (
	"encoding/json"
	"errors"

	"github.com/tidwall/buntdb"

	"github.com/hilodb/hilodb/internal/wire"
	"github.com/hilodb/hilodb/syncserver/storage"
)

const (
	// maxLost bounds the refused writes noted on one version: a client
	// that pushes the same stale write under new revisions cannot grow a
	// record, nor the feed, without bound.
	maxLost = 8
	// maxLostDoc bounds a losing document kept in a note; a larger one is
	// noted by its revision alone.
	maxLostDoc = 64 << 10
)

// withLost returns cur with the refused write it noted, and whether that
// is new: a retry of a push refused before is noted already.
func withLost(cur *storage.Record, it wire.PushItem, doc json.RawMessage) (*storage.Record, bool) {
	if len(cur.Lost) >= maxLost {
		return cur, false
	}
	for _, l := range cur.Lost {
		if l.Rev == it.Rev {
			return cur, false
		}
	}
	l := wire.LostWrite{Rev: it.Rev, Deleted: it.Deleted}
	if !it.Deleted && len(doc) <= maxLostDoc {
		l.Doc = doc
	}
	noted := *cur
	noted.Lost = append(append(make([]wire.LostWrite, 0, len(cur.Lost)+1), cur.Lost...), l)
	return &noted, true
}

// restamp stores noted, the version cur with a refused write noted, under
// sequence seq (buntdb; on etcd, byRev, the commit's revision).
func restamp(tx storage.Tx, db, id string, cur, noted *storage.Record, seq int64, byRev bool) error {
	if byRev {
		noted.Seq = 0 // the commit's revision, filled in on reading
		_, _, err := tx.Set(storage.DocKey(db, id), noted.Encode(), nil)
		return err
	}
	if _, err := tx.Delete(storage.SeqKey(db, cur.Seq)); err != nil && !errors.Is(err, buntdb.ErrNotFound) {
		return err
	}
	noted.Seq = seq
	if _, _, err := tx.Set(storage.DocKey(db, id), noted.Encode(), nil); err != nil {
		return err
	}
	return setSeq(tx, db, seq, id)
}
