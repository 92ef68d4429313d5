package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/buntdb"
)

// A document's replication state: kept under its dirty key while a local
// write awaits the server, derived from the document itself once in sync.

// syncMeta is a document's replication state.
type syncMeta struct {
	Base    string `json:"b,omitempty"` // last rev the server acknowledged
	Rev     string `json:"r"`           // current local rev
	Deleted bool   `json:"d,omitempty"` // the local write is a deletion
	Dirty   bool   `json:"p,omitempty"` // a local write awaits the server
}

// encode writes m compactly, as it is read and written for every document
// replicated: a flags digit ('0' + 1 for Deleted + 2 for Dirty), the length
// of Base in decimal, ':', Base, then Rev.
func (m syncMeta) encode() string {
	flags := byte('0')
	if m.Deleted {
		flags++
	}
	if m.Dirty {
		flags += 2
	}
	var buf [64]byte // revisions are short: one allocation, the string
	b := buf[:0]
	if need := 22 + len(m.Base) + len(m.Rev); need > len(buf) {
		b = make([]byte, 0, need)
	}
	b = append(b, flags)
	b = strconv.AppendInt(b, int64(len(m.Base)), 10)
	b = append(b, ':')
	b = append(b, m.Base...)
	b = append(b, m.Rev...)
	return string(b)
}

// decodeMeta reads what encode wrote (or the JSON of earlier versions).
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

// getMeta returns id's replication state: from its dirty key while a local
// write is pending, else derived from the stored document (in sync: base and
// rev are its _rev). found is false when there is neither.
func getMeta(tx *txn, id string) (syncMeta, bool, error) {
	return getMetaAt(tx, id, docPrefix+id, true)
}

// getMetaAt is getMeta for the document stored at docKey; without
// anyDirty (the store holds no pending write) it skips the dirty key.
func getMetaAt(tx *txn, id, docKey string, anyDirty bool) (syncMeta, bool, error) {
	if anyDirty {
		v, err := tx.Get(dirtyPrefix + id)
		if err == nil {
			m, err := decodeMeta(v)
			if err != nil {
				return m, false, fmt.Errorf("decode sync state of %q: %w", id, err)
			}
			m.Dirty = true
			return m, true, nil
		}
		if !errors.Is(err, buntdb.ErrNotFound) {
			return syncMeta{}, false, err
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
		_, _, err := tx.Set(dirtyPrefix+id, m.encode(), nil)
		return err
	}
	return deleteKey(tx, dirtyPrefix+id)
}

func deleteKey(tx *txn, key string) error {
	if _, err := tx.Delete(key); err != nil && !errors.Is(err, buntdb.ErrNotFound) {
		return err
	}
	return nil
}

// trackWrite records a local write of id at rev inside the writing
// transaction, so it is pushed on the next sync. prevRev is the _rev the
// document had before this write ("" if there was none).
//
// It writes the pending state first and reads what that replaced: most
// writes are of documents with nothing pending, and a lookup saved per
// document counts under WebAssembly. A write on top of a pending one keeps
// that one's base, so its state is written again (the journal gets the
// last one only, see txn.Set).
func trackWrite(tx *txn, id, prevRev, rev string, deleted bool) error {
	// A deletion is pushed even when no write of the document was ever
	// acknowledged: one may have reached the server with its reply lost.
	// The server takes a deletion of what it does not have as a no-op.
	m := syncMeta{Base: prevRev, Rev: rev, Deleted: deleted, Dirty: true}
	key := dirtyPrefix + id
	prev, replaced, err := tx.Set(key, m.encode(), nil)
	if err != nil || !replaced {
		return err
	}
	old, err := decodeMeta(prev)
	if err != nil {
		return fmt.Errorf("decode sync state of %q: %w", id, err)
	}
	if old.Base == m.Base {
		return nil
	}
	m.Base = old.Base
	_, _, err = tx.Set(key, m.encode(), nil)
	return err
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

// hasPrefix reports whether any key starts with prefix.
func hasPrefix(tx *txn, prefix string) bool {
	found := false
	_ = tx.AscendGreaterOrEqual("", prefix, func(k, _ string) bool {
		found = strings.HasPrefix(k, prefix)
		return false
	})
	return found
}
