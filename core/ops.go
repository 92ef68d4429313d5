package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/hilodb/hilodb/core/keygen"
	"github.com/hilodb/hilodb/core/naming"
	"github.com/hilodb/hilodb/core/uuid"
	"github.com/hilodb/hilodb/idgen"
)

// Ptr returns a pointer to v, for the optional fields of WriteOptions and
// keygen.Options.
func Ptr[T any](v T) *T { return &v }

// OverwriteMode says what an insert does when the document exists already.
type OverwriteMode string

// Overwrite modes, as ArangoDB's overwriteMode.
const (
	// OverwriteConflict (the default) fails with 1210.
	OverwriteConflict OverwriteMode = "conflict"
	// OverwriteIgnore leaves the existing document and returns its header.
	OverwriteIgnore OverwriteMode = "ignore"
	// OverwriteReplace replaces the existing document.
	OverwriteReplace OverwriteMode = "replace"
	// OverwriteUpdate merges the new document into the existing one.
	OverwriteUpdate OverwriteMode = "update"
)

// WriteOptions are ArangoDB's document operation options. The zero value
// (and nil) gives ArangoDB's defaults.
type WriteOptions struct {
	// ReturnNew puts the stored document in Result.New.
	ReturnNew bool
	// ShareNew, with ReturnNew, lets Result.New hold the stored document's
	// own bytes instead of a copy of them, which saves a copy of every
	// document a bulk write stores. The caller must never write to
	// Result.New then.
	ShareNew bool
	// ReturnOld puts the previous document in Result.Old (replace, update,
	// remove, and insert that overwrites).
	ReturnOld bool
	// Silent returns no document header on success (Result.Silent is set);
	// errors are still reported.
	Silent bool
	// OverwriteMode is insert's behaviour for an existing document. Default
	// OverwriteConflict.
	OverwriteMode OverwriteMode
	// KeepNull, when false, makes an update remove the attributes it sets to
	// null instead of storing null. Default true.
	KeepNull *bool
	// MergeObjects, when false, makes an update replace nested objects
	// instead of merging them. Default true.
	MergeObjects *bool
	// IgnoreRevs, when false, makes a _rev in the document a precondition.
	// Default true, as ArangoDB.
	IgnoreRevs *bool
	// IfMatch, when set, is a precondition on the current _rev (ArangoDB's
	// If-Match header), checked whatever IgnoreRevs says. It applies to
	// single-document operations.
	IfMatch string
	// MadeIDsNew makes an insert whose id the store made (a HiLo id, a
	// generated key, a UUID, a node sequence or an identity) fail with
	// ErrUniqueConstraint when a document has that id, whatever
	// OverwriteMode says: a made id names a new document, never one another
	// client stored under it. The edge sets it, as the sync server's doors
	// refuse the same.
	MadeIDsNew bool
}

// newCopied reports whether Result.New is to hold a copy of the stored
// document: with ReturnNew, unless ShareNew.
func (o *WriteOptions) newCopied() bool { return o != nil && o.ReturnNew && !o.ShareNew }

func (o *WriteOptions) keepNull() bool { return o == nil || o.KeepNull == nil || *o.KeepNull }
func (o *WriteOptions) mergeObjects() bool {
	return o == nil || o.MergeObjects == nil || *o.MergeObjects
}
func (o *WriteOptions) ignoreRevs() bool { return o == nil || o.IgnoreRevs == nil || *o.IgnoreRevs }
func (o *WriteOptions) madeIDsNew() bool { return o != nil && o.MadeIDsNew }

func (o *WriteOptions) overwrite() (OverwriteMode, *Error) {
	if o == nil || o.OverwriteMode == "" {
		return OverwriteConflict, nil
	}
	switch o.OverwriteMode {
	case OverwriteConflict, OverwriteIgnore, OverwriteReplace, OverwriteUpdate:
		return o.OverwriteMode, nil
	}
	return "", newError(ErrBadParameter, "", "", "bad parameter: overwriteMode %q is not one of conflict, ignore, replace, update", o.OverwriteMode)
}

// Result is the outcome of one document operation: ArangoDB's document
// header, or an inline error.
type Result struct {
	ID     string          // _id
	Key    string          // _key
	Rev    string          // _rev after the operation
	OldRev string          // _rev before a replace, update or overwrite
	New    json.RawMessage // the stored document, with ReturnNew
	Old    json.RawMessage // the previous document, with ReturnOld
	Silent bool            // the operation succeeded under Silent
	Err    *Error          // set when this item failed
}

// MarshalJSON writes ArangoDB's shapes: {"_id","_key","_rev","_oldRev",
// "new","old"}, {} when silent, or {"error":true,"errorNum","errorMessage"}.
func (r Result) MarshalJSON() ([]byte, error) {
	if r.Err != nil {
		return json.Marshal(struct {
			Error   bool   `json:"error"`
			Num     int    `json:"errorNum"`
			Message string `json:"errorMessage"`
			Code    string `json:"errorCode,omitempty"`
			Key     string `json:"_key,omitempty"`
			Rev     string `json:"_rev,omitempty"`
		}{true, r.Err.Num, r.Err.Message, r.Err.Code, r.Err.Key, r.Err.Rev})
	}
	if r.Silent {
		return []byte("{}"), nil
	}
	return json.Marshal(struct {
		ID     string          `json:"_id"`
		Key    string          `json:"_key"`
		Rev    string          `json:"_rev"`
		OldRev string          `json:"_oldRev,omitempty"`
		New    json.RawMessage `json:"new,omitempty"`
		Old    json.RawMessage `json:"old,omitempty"`
	}{r.ID, r.Key, r.Rev, r.OldRev, r.New, r.Old})
}

type opKind uint8

const (
	opInsert opKind = iota
	opReplace
	opUpdate
	opRemove
)

func (k opKind) String() string {
	return [...]string{"insert", "replace", "update", "remove"}[k]
}

// write is one prepared document operation.
type write struct {
	kind      opKind
	coll      string
	id        string // resolved id; empty while a node-sequence id is pending
	seqPrefix string // for ids ending in the separator: the prefix with it
	identity  string // for ids ending in "|": the identity name
	body      []byte // the caller's document (insert, replace) or patch (update)
	plain     bool   // body is stored as it is, plus the system attributes (sysAttrs.plain)
	fresh     bool   // id was generated here (HiLo, generated key, UUID): almost surely new
	genID     bool   // the id is yet to be taken from the collection's generator (takeID)
	ifRev     string // precondition on the current _rev
	meta      map[string]json.RawMessage
	opts      *WriteOptions
	err       *Error

	// session-only checks
	mustBeNew bool // the document must not exist (optimistic concurrency)
	anyColl   bool // remove by id, whatever the document's collection
	missingOK bool // removing a missing document is not an error
}

// prepareInsert resolves the id of a document to insert. HiLo ids and
// generated keys are taken here; node-sequence ids are made inside the
// transaction and identities in one call for the batch.
func (s *Store) prepareInsert(ctx context.Context, w *write, coll string, g keygen.Generator, doc []byte, opts *WriteOptions) *write {
	a, e := scanBody(doc)
	s.resolveInsert(w, coll, g, doc, a, e, opts)
	if w.genID {
		s.takeID(ctx, w, coll, g)
	}
	return w
}

// takeID takes the generated id of w (w.genID): a HiLo id or a generated
// key.
func (s *Store) takeID(ctx context.Context, w *write, coll string, g keygen.Generator) {
	w.genID = false
	gid, err := s.generateID(ctx, coll, g)
	if err != nil {
		w.err = AsError(err)
		return
	}
	w.id = gid
}

// resolveInsert is prepareInsert once the document is scanned (a, or the
// scan's error e), without taking a generated id: it sets w.genID instead.
func (s *Store) resolveInsert(w *write, coll string, g keygen.Generator, doc []byte, a sysAttrs, e *Error, opts *WriteOptions) {
	*w = write{kind: opInsert, coll: coll, opts: opts, body: doc}
	if e != nil {
		w.err = e
		return
	}
	w.plain = a.plain
	if !opts.ignoreRevs() && a.hasRev {
		w.ifRev = a.rev
	}
	id, hasID := a.id, a.hasID
	if !hasID && a.hasKey {
		key := a.key
		if !g.AllowUserKeys {
			w.err = newError(ErrUnexpectedKey, key, "", "unexpected document key: collection %q does not allow user-given keys", coll)
			return
		}
		if err := ValidateKey(key); err != nil {
			w.err = err.(*Error)
			return
		}
		if coll == EmptyCollection {
			w.id = key
		} else {
			w.id = s.conv.IDPrefix(coll) + s.sep + key
		}
		return
	}
	switch classifyID(id, hasID, s.sep) {
	case idGenerate:
		w.genID, w.fresh = true, true
	case idUUID:
		w.id, w.fresh = uuid.New(), true
	case idNodeSeq:
		if err := s.checkPrefix(id[:len(id)-len(s.sep)]); err != nil {
			w.err = err
			return
		}
		w.seqPrefix = id
	case idIdentity:
		name := identityName(id, s.sep)
		if err := s.checkPrefix(name); err != nil {
			w.err = err
			return
		}
		w.identity = name
	case idGiven:
		if !g.AllowUserKeys {
			w.err = newError(ErrUnexpectedKey, id, "", "unexpected document key: collection %q does not allow user-given keys", coll)
			return
		}
		if _, _, err := ParseID(id, s.sep); err != nil {
			w.err = err.(*Error)
			return
		}
		w.id = id
	}
}

// checkPrefix validates the prefix of an id ending in the separator or "|".
func (s *Store) checkPrefix(prefix string) *Error {
	if err := validatePrefix(prefix, s.sep); err != nil {
		return newError(ErrIllegalKey, prefix, "", "illegal document id prefix %q: %v", prefix, err)
	}
	return nil
}

// prepareSelect resolves the document a replace, update or remove addresses:
// selector (a key, or an id when it holds the separator), else the body's
// _id or _key.
func (s *Store) prepareSelect(kind opKind, coll, selector string, body []byte, opts *WriteOptions) *write {
	w := &write{kind: kind, coll: coll, body: body, opts: opts}
	var a sysAttrs
	if body != nil {
		var e *Error
		if a, e = scanBody(body); e != nil {
			w.err = e
			return w
		}
		w.plain = a.plain
	}
	if selector == "" {
		switch {
		case a.hasID:
			selector = a.id
		case a.hasKey:
			selector = a.key
		default:
			w.err = newError(ErrIllegalKey, "", "", "illegal document key: %s needs _key or _id", kind)
			return w
		}
	}
	id, e := s.selectorID(coll, selector)
	if e != nil {
		w.err = e
		return w
	}
	w.id = id
	if a.hasRev && !opts.ignoreRevs() {
		w.ifRev = a.rev
	}
	return w
}

// selectorID turns a key or an id into an id of collection coll.
func (s *Store) selectorID(coll, selector string) (string, *Error) {
	return selectorID(s.conv, s.sep, coll, selector)
}

// selectorID is Store.selectorID under the conventions conv and the
// separator sep.
func selectorID(conv *naming.Conventions, sep, coll, selector string) (string, *Error) {
	if selector == "" {
		return "", newError(ErrIllegalKey, "", "", "illegal document key: the key is empty")
	}
	if bytes.Contains([]byte(selector), []byte(sep)) || coll == EmptyCollection {
		if _, _, err := ParseID(selector, sep); err != nil {
			return "", err.(*Error)
		}
		return selector, nil
	}
	if err := ValidateKey(selector); err != nil {
		return "", err.(*Error)
	}
	return conv.IDPrefix(coll) + sep + selector, nil
}

// resolveIdentities gives every write waiting for an identity its id, with
// one call to the identity source for the whole batch. When the source is
// missing or fails, the error is returned and nothing may be written.
func (s *Store) resolveIdentities(ctx context.Context, ws []*write) error {
	var names []string
	var idx []int
	for i, w := range ws {
		if w.err == nil && w.identity != "" {
			names = append(names, w.identity)
			idx = append(idx, i)
		}
	}
	if len(names) == 0 {
		return nil
	}
	if s.idents == nil {
		return newError(ErrNeedsServer, names[0], "", "ids ending in \"|\" need the sync server (no identity source); nothing was saved")
	}
	var vals []int64
	var err error
	if len(names) == 1 {
		var v int64
		v, err = s.idents.NextIdentity(ctx, names[0])
		vals = []int64{v}
	} else {
		vals, err = s.idents.NextIdentities(ctx, names)
	}
	if err != nil {
		return needsServer(names[0], "identities for ids ending in \"|\" (nothing was saved; offline, end the id in \"/\" or leave it out for an id made here)", err)
	}
	if len(vals) != len(names) {
		return newError(ErrInternal, "", "", "identity source returned %d values for %d names", len(vals), len(names))
	}
	for j, i := range idx {
		ws[i].id = ws[i].identity + s.sep + strconv.FormatInt(vals[j], 10)
	}
	return nil
}

func quoteJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// run performs prepared writes in one transaction. With atomic, the first
// failed item rolls back all of them and its error is returned; otherwise
// each item gets its own result or inline error.
func (s *Store) run(ctx context.Context, ws []*write, atomic bool) ([]Result, error) {
	if err := s.resolveIdentities(ctx, ws); err != nil {
		return nil, err
	}
	results := make([]Result, len(ws))
	var failed *Error
	// A write sets the document and its pending state: two changes.
	err := s.updateN(ctx, 2*len(ws), func(tx *txn) error {
		for i, w := range ws {
			r, e := s.apply(tx, w)
			if e != nil {
				if atomic {
					failed = e
					return errItem
				}
				r = Result{Err: e}
			}
			results[i] = r
		}
		return storeReceipt(ctx, tx, results)
	})
	if failed != nil {
		return nil, failed
	}
	if err != nil {
		return nil, fmt.Errorf("write documents: %w", err)
	}
	s.notifyWrite()
	return results, nil
}

// errItem stops the transaction of an atomic run at its first failed item.
var errItem = errors.New("item failed")

// single runs one write and returns its result or its error.
func (s *Store) single(ctx context.Context, w *write) (Result, error) {
	rs, err := s.run(ctx, []*write{w}, true)
	if err != nil {
		return Result{}, err
	}
	return rs[0], nil
}

// collectionGen validates coll and returns its key generator.
func (s *Store) collectionGen(coll string) (keygen.Generator, error) {
	if err := validateCollection(coll); err != nil {
		return keygen.Generator{}, err
	}
	return s.keyGen(coll)
}

// Insert stores a new document in collection (ArangoDB's insert). The id is
// made as Put describes; opts.OverwriteMode says what happens when it exists.
func (s *Store) Insert(ctx context.Context, collection string, doc []byte, opts *WriteOptions) (Result, error) {
	g, err := s.collectionGen(collection)
	if err != nil {
		return Result{}, err
	}
	if _, err := opts.overwrite(); err != nil {
		return Result{}, err
	}
	return s.single(ctx, s.prepareInsert(ctx, new(write), collection, g, doc, opts))
}

// InsertMany inserts docs in one transaction and returns one result per
// document, in order; a document that fails gets an inline error and does
// not stop the others. All ids ending in "|" are allocated in one call to
// the identity source; when that fails (offline), InsertMany returns the
// error and stores nothing. An idgen HiLo behind the store learns how many
// numbers the batch may take (idgen.WithDemand): it journals them in one
// write per range and leases a range that holds them, not one range after
// another.
func (s *Store) InsertMany(ctx context.Context, collection string, docs [][]byte, opts *WriteOptions) ([]Result, error) {
	g, err := s.collectionGen(collection)
	if err != nil {
		return nil, err
	}
	ctx = idgen.WithDemand(ctx, len(docs))
	if _, err := opts.overwrite(); err != nil {
		return nil, err
	}
	ws := make([]*write, len(docs))
	slab := make([]write, len(docs)) // one allocation for the batch
	for i, d := range docs {
		ws[i] = s.prepareInsert(ctx, &slab[i], collection, g, d, opts)
	}
	return s.run(ctx, ws, false)
}

// Replace replaces the document selector names (a key, or an id; empty to
// take _key or _id from doc) with doc. It fails with 1202 when there is no
// such document in collection and with 1200 when a precondition fails.
func (s *Store) Replace(ctx context.Context, collection, selector string, doc []byte, opts *WriteOptions) (Result, error) {
	return s.modify(ctx, opReplace, collection, selector, doc, opts)
}

// Update merges patch into the document selector names, as ArangoDB's
// update: opts.KeepNull and opts.MergeObjects control nulls and nested
// objects.
func (s *Store) Update(ctx context.Context, collection, selector string, patch []byte, opts *WriteOptions) (Result, error) {
	return s.modify(ctx, opUpdate, collection, selector, patch, opts)
}

func (s *Store) modify(ctx context.Context, kind opKind, coll, selector string, doc []byte, opts *WriteOptions) (Result, error) {
	if err := validateCollection(coll); err != nil {
		return Result{}, err
	}
	return s.single(ctx, s.prepareSelect(kind, coll, selector, doc, opts))
}

// ReplaceMany replaces documents, each named by its own _key or _id, with
// one result per document in order.
func (s *Store) ReplaceMany(ctx context.Context, collection string, docs [][]byte, opts *WriteOptions) ([]Result, error) {
	return s.modifyMany(ctx, opReplace, collection, docs, opts)
}

// UpdateMany updates documents, each named by its own _key or _id, with one
// result per document in order.
func (s *Store) UpdateMany(ctx context.Context, collection string, patches [][]byte, opts *WriteOptions) ([]Result, error) {
	return s.modifyMany(ctx, opUpdate, collection, patches, opts)
}

func (s *Store) modifyMany(ctx context.Context, kind opKind, coll string, docs [][]byte, opts *WriteOptions) ([]Result, error) {
	if err := validateCollection(coll); err != nil {
		return nil, err
	}
	item := noIfMatch(opts)
	ws := make([]*write, len(docs))
	for i, d := range docs {
		ws[i] = s.prepareSelect(kind, coll, "", d, item)
	}
	return s.run(ctx, ws, false)
}

// noIfMatch drops IfMatch, which names one document, for multi-document
// operations.
func noIfMatch(o *WriteOptions) *WriteOptions {
	if o == nil || o.IfMatch == "" {
		return o
	}
	c := *o
	c.IfMatch = ""
	return &c
}

// Remove deletes the document selector names (a key or an id) from
// collection. opts.IfMatch is a precondition on its _rev.
func (s *Store) Remove(ctx context.Context, collection, selector string, opts *WriteOptions) (Result, error) {
	if err := validateCollection(collection); err != nil {
		return Result{}, err
	}
	return s.single(ctx, s.prepareSelect(opRemove, collection, selector, nil, opts))
}

// RemoveMany deletes documents with one result per item in order. Each item
// is a JSON string (a key or an id) or an object with _key or _id, whose
// _rev is a precondition when opts.IgnoreRevs is false.
func (s *Store) RemoveMany(ctx context.Context, collection string, selectors [][]byte, opts *WriteOptions) ([]Result, error) {
	if err := validateCollection(collection); err != nil {
		return nil, err
	}
	item := noIfMatch(opts)
	ws := make([]*write, len(selectors))
	for i, sel := range selectors {
		var key string
		if err := json.Unmarshal(sel, &key); err == nil {
			ws[i] = s.prepareSelect(opRemove, collection, key, nil, item)
			continue
		}
		w := s.prepareSelect(opRemove, collection, "", sel, item)
		w.body = nil
		ws[i] = w
	}
	return s.run(ctx, ws, false)
}

// Document returns the document selector names (a key or an id) in
// collection, or 1202.
func (s *Store) Document(collection, selector string) ([]byte, error) {
	return document(s.conv, s.sep, collection, selector, s.GetString)
}

// document is Store.Document under the conventions conv and the separator
// sep, reading documents with get (Store.GetString, Reader.GetString).
func document(conv *naming.Conventions, sep, collection, selector string, get func(id string) (string, error)) ([]byte, error) {
	if err := validateCollection(collection); err != nil {
		return nil, err
	}
	id, e := selectorID(conv, sep, collection, selector)
	if e != nil {
		return nil, e
	}
	doc, err := get(id)
	if err != nil {
		return nil, err
	}
	if readHeader(doc).Meta.Collection != collection {
		_, key, _ := ParseID(id, sep)
		return nil, errorOf(ErrNotFound, key, "", "document "+strconv.Quote(id)+" not found in collection "+strconv.Quote(collection))
	}
	return []byte(doc), nil
}

// DocumentMany reads documents with one result per selector in order: the
// document in Result.New, or an inline error.
func (s *Store) DocumentMany(collection string, selectors []string) ([]Result, error) {
	if err := validateCollection(collection); err != nil {
		return nil, err
	}
	out := make([]Result, len(selectors))
	for i, sel := range selectors {
		doc, err := s.Document(collection, sel)
		if err != nil {
			out[i] = Result{Err: AsError(err)}
			continue
		}
		var h struct {
			ID  string `json:"_id"`
			Key string `json:"_key"`
			Rev string `json:"_rev"`
		}
		_ = json.Unmarshal(doc, &h)
		out[i] = Result{ID: h.ID, Key: h.Key, Rev: h.Rev, New: doc}
	}
	return out, nil
}
