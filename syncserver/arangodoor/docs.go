package arangodoor

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/keygen"
	"github.com/hilodb/hilodb/core/uuid"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/syncserver"
)

// ArangoDB's document semantics over the server's documents: keys made by
// the collection's keyOptions (numbers from the collection's HiLo counter,
// the one clients lease from), overwrite modes, preconditions, update with
// keepNull and mergeObjects. A document keeps @metadata.@collection, as the
// core's documents do, but ArangoDB's clients never see @metadata.

// arangoOpts are the options of one document call.
type arangoOpts struct {
	returnNew, returnOld, silent bool
	keepNull, mergeObjects       bool
	ignoreRevs                   bool
	overwriteMode                string // "", ignore, replace, update, conflict
	ifMatch                      string // If-Match: a precondition on the stored _rev
}

// arangoKey makes a key for a new document of coll by its definition;
// want is how many keys the batch may still need, this one included.
func (s *door) arangoKey(ctx context.Context, db, coll string, def syncserver.CollectionDef, want int) (string, error) {
	ko := def.KeyOptions
	if ko.Type == keygen.UUID {
		return uuid.New(), nil
	}
	n, err := s.NextNumber(ctx, db, coll, want)
	if err != nil {
		return "", err
	}
	switch ko.Type {
	case keygen.Traditional:
		return strconv.FormatInt(n, 10), nil
	case keygen.Padded:
		return keygen.PaddedKey(uint64(n)), nil
	case keygen.Autoincrement:
		inc, off := uint64(1), uint64(0)
		if ko.Increment != nil {
			inc = uint64(*ko.Increment)
		}
		if ko.Offset != nil {
			off = uint64(*ko.Offset)
		}
		v, ok := keygen.AutoincrementKey(n, off, inc)
		if !ok {
			return "", &syncserver.DocError{Code: errcode.OutOfKeys, Msg: "collection " + syncserver.Quote(coll) + " has no keys left"}
		}
		return strconv.FormatUint(v, 10), nil
	}
	return strconv.FormatInt(n, 10) + "-" + s.Tag(), nil
}

// arangoBody is a document a caller sent: its members and its _key or
// _rev, if it has them.
type arangoBody struct {
	m    map[string]json.RawMessage
	key  string
	rev  string
	raw  json.RawMessage
	bad  *syncserver.DocError
	keyd bool // _key was given
}

func parseArangoBody(raw json.RawMessage) arangoBody {
	b := arangoBody{raw: raw}
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		b.bad = &syncserver.DocError{Code: errcode.BadDocument, Msg: "document must be a JSON object"}
		return b
	}
	if name, ok := syncserver.RepeatedMember(t); ok {
		b.bad = &syncserver.DocError{Code: errcode.BadDocument, Msg: "document has the member " + syncserver.Quote(syncserver.Truncate(name, 100)) + " more than once"}
		return b
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.UseNumber()
	if err := dec.Decode(&b.m); err != nil {
		b.bad = &syncserver.DocError{Code: errcode.BadDocument, Msg: "document must be a JSON object: " + err.Error()}
		return b
	}
	if v, ok := b.m["_key"]; ok {
		if json.Unmarshal(v, &b.key) != nil {
			b.bad = &syncserver.DocError{Code: errcode.IllegalKey, Msg: "illegal document key: _key must be a string"}
			return b
		}
		b.keyd = true
	}
	if v, ok := b.m["_rev"]; ok {
		_ = json.Unmarshal(v, &b.rev)
	}
	return b
}

// storedForm is body as stored for id in coll: _key set, _id/_rev left to
// the store, @metadata kept from old (the stored document) with @collection.
func storedForm(body map[string]json.RawMessage, coll, key string, old json.RawMessage) (json.RawMessage, error) {
	m := make(map[string]json.RawMessage, len(body)+2)
	for k, v := range body {
		if k == "_id" || k == "_rev" || k == "@metadata" {
			continue
		}
		m[k] = v
	}
	m["_key"], _ = json.Marshal(key)
	meta := map[string]json.RawMessage{}
	if old != nil {
		var o struct {
			Meta map[string]json.RawMessage `json:"@metadata"`
		}
		if json.Unmarshal(old, &o) == nil && o.Meta != nil {
			meta = o.Meta
		}
	}
	meta["@collection"], _ = json.Marshal(coll)
	m["@metadata"], _ = json.Marshal(meta)
	return json.Marshal(m)
}

// checkRev applies a precondition on the document id: want is an If-Match
// value or a _rev the caller holds ("" for none).
func checkRev(want, id string, cur *syncserver.StoredDoc) error {
	if want != "" && cur != nil && cur.Rev != want {
		return &syncserver.DocError{Code: errcode.Conflict, Msg: "conflict, _rev values do not match", Rev: cur.Rev, ID: id}
	}
	return nil
}

// arangoInsert is a create of body in coll; left is how many documents
// of the batch are left, this one included (the most keys it may need).
func (s *door) arangoInsert(ctx context.Context, db, coll string, def syncserver.CollectionDef, raw json.RawMessage, o arangoOpts, left int) syncserver.DocWrite {
	b := parseArangoBody(raw)
	if b.bad != nil {
		return failedWrite(b.bad)
	}
	key := b.key
	if b.keyd {
		if err := core.ValidateKey(key); err != nil {
			return failedWrite(&syncserver.DocError{Code: errcode.IllegalKey, Msg: err.Error()})
		}
		if def.KeyOptions.AllowUserKeys != nil && !*def.KeyOptions.AllowUserKeys {
			return failedWrite(&syncserver.DocError{Code: errcode.UnexpectedKey, Msg: "must not specify _key for this collection"})
		}
	} else {
		k, err := s.arangoKey(ctx, db, coll, def, left)
		if err != nil {
			if de, ok := err.(*syncserver.DocError); ok {
				return failedWrite(de)
			}
			c, msg := s.ErrorOf(err)
			return failedWrite(&syncserver.DocError{Code: c, Msg: msg})
		}
		key = k
	}
	// Overwriting a document, a _rev in the body is a precondition with
	// ignoreRevs=false, as in a replace or update.
	want := o.ifMatch
	if want == "" && !o.ignoreRevs {
		want = b.rev
	}
	made := !b.keyd
	return syncserver.DocWrite{ID: coll + "/" + key, Make: func(cur *syncserver.StoredDoc) (json.RawMessage, bool, error) {
		if cur == nil {
			d, err := storedForm(b.m, coll, key, nil)
			return d, false, err
		}
		if made {
			// A key the server made names a new document, whatever the
			// overwrite mode: someone wrote this one with that key.
			return nil, false, &syncserver.DocError{Code: errcode.UniqueConstraint, Msg: "unique constraint violated - the key the server made, " + key + ", is taken; insert again for the next", Rev: cur.Rev}
		}
		switch o.overwriteMode {
		case "ignore":
			return nil, false, nil
		case "replace":
			if err := checkRev(want, coll+"/"+key, cur); err != nil {
				return nil, false, err
			}
			d, err := storedForm(b.m, coll, key, cur.Doc)
			return d, false, err
		case "update":
			if err := checkRev(want, coll+"/"+key, cur); err != nil {
				return nil, false, err
			}
			return mergeInto(cur, b.raw, coll, key, o)
		}
		return nil, false, &syncserver.DocError{Code: errcode.UniqueConstraint, Msg: "unique constraint violated - in index primary of type primary over '_key'; conflicting key: " + key, Rev: cur.Rev}
	}}
}

func mergeInto(cur *syncserver.StoredDoc, patch json.RawMessage, coll, key string, o arangoOpts) (json.RawMessage, bool, error) {
	merged, err := core.MergePatch(cur.Doc, patch, o.keepNull, o.mergeObjects)
	if err != nil {
		return nil, false, &syncserver.DocError{Code: errcode.BadDocument, Msg: err.Error()}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(merged, &m); err != nil {
		return nil, false, err
	}
	d, err := storedForm(m, coll, key, cur.Doc)
	return d, false, err
}

// arangoModify is a replace, update or remove of the document key of coll;
// body is nil for a remove.
func arangoModify(kind, coll, key string, body json.RawMessage, o arangoOpts) syncserver.DocWrite {
	var b arangoBody
	if kind != "remove" {
		b = parseArangoBody(body)
		if b.bad != nil {
			return failedWrite(b.bad)
		}
	}
	if err := core.ValidateKey(key); err != nil {
		return failedWrite(&syncserver.DocError{Code: errcode.IllegalKey, Msg: err.Error()})
	}
	want := o.ifMatch
	if want == "" && !o.ignoreRevs {
		want = b.rev
	}
	return syncserver.DocWrite{ID: coll + "/" + key, Make: func(cur *syncserver.StoredDoc) (json.RawMessage, bool, error) {
		if cur == nil {
			return nil, false, &syncserver.DocError{Code: errcode.NotFound, Msg: "document not found"}
		}
		if err := checkRev(want, coll+"/"+key, cur); err != nil {
			return nil, false, err
		}
		switch kind {
		case "remove":
			return nil, true, nil
		case "update":
			return mergeInto(cur, b.raw, coll, key, o)
		}
		d, err := storedForm(b.m, coll, key, cur.Doc)
		return d, false, err
	}}
}

// failedWrite is a write refused before it reaches the store.
func failedWrite(e *syncserver.DocError) syncserver.DocWrite {
	return syncserver.DocWrite{Err: e}
}

// arangoView renders a stored document for ArangoDB's clients: without
// @metadata.
func arangoView(doc json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(doc, &m) != nil {
		return doc
	}
	if _, ok := m["@metadata"]; !ok {
		return doc
	}
	delete(m, "@metadata")
	b, _ := json.Marshal(m)
	return b
}
