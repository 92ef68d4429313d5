package core

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/tidwall/buntdb"
)

// A document's replication state: kept as its pending mark (pending.go)
// while a local write awaits the server, derived from the document itself
// once in sync.

// metaOverhead bounds what appendTo writes beside Base and Rev: the flags
// digit, a length of up to 20 digits and the colon.
const metaOverhead = 22

// syncMeta is a document's replication state.
type syncMeta struct {
	Base    string `json:"b,omitempty"` // last rev the server acknowledged
	Rev     string `json:"r"`           // current local rev
	Deleted bool   `json:"d,omitempty"` // the local write is a deletion
	Dirty   bool   `json:"p,omitempty"` // a local write awaits the server
}

// appendTo appends m's stored form to b, compact, as it is read and
// written for every document replicated: a flags digit ('0' + 1 for
// Deleted + 2 for Dirty), the length of Base in decimal, ':', Base, then
// Rev. At most metaOverhead bytes beside Base and Rev.
func (m syncMeta) appendTo(b []byte) []byte {
	flags := byte('0')
	if m.Deleted {
		flags++
	}
	if m.Dirty {
		flags += 2
	}
	b = append(b, flags)
	b = strconv.AppendInt(b, int64(len(m.Base)), 10)
	b = append(b, ':')
	b = append(b, m.Base...)
	return append(b, m.Rev...)
}

// decodeMeta reads what appendTo wrote (or the JSON of earlier versions).
func decodeMeta(v string) (syncMeta, error) {
	if strings.HasPrefix(v, "{") {
		return decodeMetaJSON(v)
	}
	var m syncMeta // on the stack: decodeMetaJSON's m escapes, this one does not
	if len(v) < 3 || v[0] < '0' || v[0] > '3' {
		return m, errors.New("malformed sync state")
	}
	colon := strings.IndexByte(v, ':')
	if colon < 2 {
		return m, errors.New("malformed sync state")
	}
	n, err := strconv.Atoi(v[1:colon])
	if err != nil || n < 0 || colon+1+n > len(v) {
		return m, errors.New("malformed sync state")
	}
	m.Deleted = (v[0]-'0')&1 != 0
	m.Dirty = (v[0]-'0')&2 != 0
	m.Base = v[colon+1 : colon+1+n]
	m.Rev = v[colon+1+n:]
	return m, nil
}

// decodeMetaJSON reads the sync state as earlier versions wrote it.
func decodeMetaJSON(v string) (syncMeta, error) {
	var m syncMeta
	err := json.Unmarshal([]byte(v), &m)
	return m, err
}

// getMeta returns id's replication state: from its pending mark while a local
// write is pending, else derived from the stored document (in sync: base and
// rev are its _rev). found is false when there is neither.
func getMeta(tx *txn, id string) (syncMeta, bool, error) {
	return getMetaAt(tx, id, docPrefix+id, true)
}

// getMetaAt is getMeta for the document stored at docKey; without
// anyDirty (the store holds no pending write) it skips the pending marks.
func getMetaAt(tx *txn, id, docKey string, anyDirty bool) (syncMeta, bool, error) {
	if anyDirty {
		if m, ok := tx.pending(id); ok {
			return m, true, nil
		}
	}
	doc, err := tx.Get(docKey)
	if errors.Is(err, buntdb.ErrNotFound) {
		return syncMeta{}, false, nil
	}
	if err != nil {
		return syncMeta{}, false, err
	}
	rev := readHeader(doc).Rev
	return syncMeta{Base: rev, Rev: rev}, true, nil
}

// putMeta stores a pending state, or forgets it once the document is in
// sync (its stored _rev must then be m.Base).
func putMeta(tx *txn, id string, m syncMeta) error {
	if m.Dirty {
		tx.setPending(id, m, true)
	} else {
		tx.dropPending(id)
	}
	return nil
}

func deleteKey(tx *txn, key string) error {
	if _, err := tx.Delete(key); err != nil && !errors.Is(err, buntdb.ErrNotFound) {
		return err
	}
	return nil
}

// trackWrite records a local write of the document stored at docKey
// (docPrefix and its id, a string of its own) at rev inside the writing
// transaction, so it is pushed on the next sync. prevRev is the _rev the
// document had before this write ("" if there was none); a write on top of
// a pending one keeps that one's base.
func trackWrite(tx *txn, docKey, prevRev, rev string, deleted bool) error {
	// A deletion is pushed even when no write of the document was ever
	// acknowledged: one may have reached the server with its reply lost.
	// The server takes a deletion of what it does not have as a no-op.
	m := syncMeta{Base: prevRev, Rev: rev, Deleted: deleted, Dirty: true}
	id := docKey[len(docPrefix):] // shares docKey's bytes: no copy
	if e := tx.marks.m[id]; e != nil {
		m.Base = e.meta.Base
		tx.setEntry(e, m)
		return nil
	}
	tx.addEntry(id, m)
	return nil
}

// ascendPrefix calls fn with every key that starts with prefix, in order,
// until fn returns false. buntdb's AscendKeys(prefix+"*") visits the same
// keys, but matches each against the pattern: about a twentieth of a push's
// CPU time under WebAssembly.
func ascendPrefix(tx *txn, prefix string, fn func(k, v string) bool) error {
	return tx.AscendGreaterOrEqual("", prefix, func(k, v string) bool {
		return strings.HasPrefix(k, prefix) && fn(k, v)
	})
}

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
