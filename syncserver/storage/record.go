package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/tidwall/buntdb"
	"github.com/tidwall/gjson"

	"github.com/hilodb/hilodb/internal/jsontext"
	"github.com/hilodb/hilodb/internal/wire"
)

// Record is the server's state of one replicated document. A tombstone
// has Deleted set and no Doc; At (Unix milliseconds) dates it for compaction.
// On etcd Seq is not stored (it is written as 0): it is the key's mod
// revision, filled in when the record is read.
type Record struct {
	Rev     string          `json:"rev"`
	Seq     int64           `json:"seq"`
	Deleted bool            `json:"deleted,omitempty"`
	At      int64           `json:"at,omitempty"`
	Doc     json.RawMessage `json:"doc,omitempty"`
	// Lost are the pushed writes refused as conflicts against this
	// version (noted by the push op); a new version starts with none.
	Lost []wire.LostWrite `json:"lost,omitempty"`
}

// Encode writes the record as compact JSON by hand: the document is copied
// as it is (already compact), not decoded and encoded again.
func (r *Record) Encode() string {
	b := make([]byte, 0, len(r.Doc)+len(r.Rev)+64)
	b = append(b, `{"rev":`...)
	b = jsontext.AppendString(b, r.Rev)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	if r.Deleted {
		b = append(b, `,"deleted":true`...)
	}
	if r.At != 0 {
		b = append(b, `,"at":`...)
		b = strconv.AppendInt(b, r.At, 10)
	}
	if len(r.Doc) > 0 {
		b = append(b, `,"doc":`...)
		b = append(b, r.Doc...)
	}
	if len(r.Lost) > 0 {
		lost, _ := json.Marshal(r.Lost) // rare: a version a conflict was refused against
		b = append(b, `,"lost":`...)
		b = append(b, lost...)
	}
	return string(append(b, '}'))
}

// GetRecord reads the record of id; found is false when there is none.
func GetRecord(tx Tx, db, id string) (rec Record, found bool, err error) {
	v, err := tx.Get(DocKey(db, id))
	if errors.Is(err, buntdb.ErrNotFound) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, err
	}
	if rec, err = DecodeStored(DocKey(db, id), v); err != nil {
		return rec, false, err
	}
	if rt, ok := tx.(RevTx); ok {
		// On etcd the sequence is the key's mod revision (0 for a record
		// this transaction wrote: its revision comes with the commit).
		rec.Seq = rt.ModRev(DocKey(db, id))
	}
	return rec, true, nil
}

// DecodeStored reads the record v stored at key, checking that it is JSON.
func DecodeStored(key, v string) (Record, error) {
	if !gjson.Valid(v) {
		return Record{}, fmt.Errorf("decode stored %s: not JSON", key)
	}
	return decodeRecord(v), nil
}

// decodeRecord reads a stored record (valid JSON) in one walk; a member
// given twice counts as first given, as gjson's Get reads it.
func decodeRecord(v string) (rec Record) {
	var rev, seq, deleted, at, doc, lost gjson.Result
	gjson.Parse(v).ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "rev":
			wire.FirstOf(&rev, f)
		case "seq":
			wire.FirstOf(&seq, f)
		case "deleted":
			wire.FirstOf(&deleted, f)
		case "at":
			wire.FirstOf(&at, f)
		case "doc":
			wire.FirstOf(&doc, f)
		case "lost":
			wire.FirstOf(&lost, f)
		}
		return true
	})
	rec = Record{Rev: rev.String(), Seq: seq.Int(), Deleted: deleted.Bool(), At: at.Int()}
	if doc.Exists() {
		rec.Doc = json.RawMessage(doc.Raw)
	}
	if lost.IsArray() {
		rec.Lost = decodeLost(lost)
	}
	return rec
}

// decodeLost reads a record's lost writes.
func decodeLost(arr gjson.Result) []wire.LostWrite {
	var out []wire.LostWrite
	arr.ForEach(func(_, v gjson.Result) bool {
		l := wire.LostWrite{Rev: v.Get("rev").String(), Deleted: v.Get("deleted").Bool()}
		if d := v.Get("doc"); d.IsObject() {
			l.Doc = json.RawMessage(d.Raw)
		}
		out = append(out, l)
		return true
	})
	return out
}

// Change is the record as a change of the feed (or a get's answer) for id.
func (r *Record) Change(id string) wire.Change {
	return wire.Change{Seq: r.Seq, ID: id, Rev: r.Rev, Doc: r.Doc, Deleted: r.Deleted, Lost: r.Lost}
}
