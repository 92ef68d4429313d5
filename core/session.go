package core

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
)

// SessionOptions configure a Session.
type SessionOptions struct {
	// UseOptimisticConcurrency makes SaveChanges check that every loaded
	// document still has the _rev it was loaded with, and that a new one
	// does not exist yet (1200 otherwise). Default off, as RavenDB.
	UseOptimisticConcurrency bool
}

// Session is a unit of work over a Store, shaped like the RavenDB Node.js
// client's session: Store, Load, Delete, SaveChanges, GetDocumentID.
// Entities are pointers to structs, or object literals (map[string]any).
//
// HiLo ids are assigned at Store time, as RavenDB does; ids that are empty
// (a UUID), end in the separator (this node's sequence) or end in "|" (an
// identity from the sync server) are resolved at SaveChanges, which writes
// everything in one transaction: all or nothing.
//
// A Session is not safe for concurrent use; open one per unit of work.
type Session struct {
	store   *Store
	opts    SessionOptions
	order   []*tracked
	byPtr   map[ptrKey]*tracked
	byID    map[string]*tracked
	deletes []string
}

type ptrKey struct {
	t reflect.Type
	p uintptr
}

// tracked is one entity the session knows.
type tracked struct {
	entity     any
	id         string // the final id, or the form that asks for one
	pending    idKind // idGiven once resolved
	collection string
	typeName   string
	snapshot   []byte // body as last loaded or saved; nil for new entities
	rev        string
	isNew      bool
	deleted    bool
}

// OpenSession starts a unit of work.
func (s *Store) OpenSession(opts SessionOptions) *Session {
	return &Session{store: s, opts: opts, byPtr: map[ptrKey]*tracked{}, byID: map[string]*tracked{}}
}

func keyOf(entity any) (ptrKey, error) {
	v := reflect.ValueOf(entity)
	switch {
	case v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Struct:
	case v.Kind() == reflect.Map && !v.IsNil() && v.Type().Key().Kind() == reflect.String:
	default:
		return ptrKey{}, newError(ErrBadParameter, "", "", "bad parameter: an entity is a non-nil pointer to a struct or a map[string]any, not %T", entity)
	}
	return ptrKey{v.Type(), v.Pointer()}, nil
}

// Store tracks entity for SaveChanges. With id, the entity is stored under
// it (RavenDB's store(entity, id)); otherwise the id comes from the
// entity's identity property, else from the conventions' id generator, else
// from the collection's key generator (HiLo by default), taken now.
func (ss *Session) Store(ctx context.Context, entity any, id ...string) error {
	k, err := keyOf(entity)
	if err != nil {
		return err
	}
	if len(id) > 1 {
		return newError(ErrBadParameter, "", "", "bad parameter: Store takes at most one id")
	}
	if t := ss.byPtr[k]; t != nil {
		if len(id) == 1 && id[0] != t.id {
			return newError(ErrBadParameter, t.id, "", "bad parameter: the entity is stored as %q already, not %q", t.id, id[0])
		}
		t.deleted = false
		return nil
	}
	conv := ss.store.conv
	t := &tracked{entity: entity, isNew: true}
	lit, isLit := entity.(map[string]any)
	var prop idProperty
	if isLit {
		t.collection = conv.ObjectLiteralCollection(lit)
		prop = idProperty{mapKey: conv.IdentityPropertyName(t.collection)}
	} else {
		typ := derefType(reflect.TypeOf(entity))
		t.typeName = conv.JsTypeName(typ)
		t.collection = conv.CollectionName(typ.Name())
		if prop, err = findIDProperty(conv, typ, t.collection); err != nil {
			return err
		}
	}
	if err := validateCollection(t.collection); err != nil {
		return err
	}
	given, present, err := prop.get(entity, ss.store, t.collection)
	if err != nil {
		return err
	}
	if len(id) == 1 {
		given, present = id[0], true
	}
	if !present {
		given, present, err = ss.newID(ctx, entity, t.collection, prop)
		if err != nil {
			return err
		}
	}
	t.id = given
	t.pending = classifyID(given, present, ss.store.sep)
	if t.pending == idGiven {
		if _, _, err := ParseID(given, ss.store.sep); err != nil {
			return err
		}
		if other := ss.byID[given]; other != nil && !other.deleted {
			return newError(ErrUniqueConstraint, given, "", "unique constraint violated: the session tracks another entity with id %q", given)
		}
		if err := prop.set(entity, given, ss.store.conv); err != nil {
			return err
		}
		ss.byID[given] = t
	}
	ss.byPtr[k] = t
	ss.order = append(ss.order, t)
	return nil
}

// newID makes the id of a new entity stored without one.
func (ss *Session) newID(ctx context.Context, entity any, coll string, prop idProperty) (string, bool, error) {
	conv := ss.store.conv
	if fn := conv.idConvention(derefType(reflect.TypeOf(entity))); fn != nil {
		id, err := fn(ctx, coll, entity)
		if err != nil {
			return "", false, fmt.Errorf("generate id: %w", err)
		}
		return id, true, nil
	}
	if coll == EmptyCollection {
		return "", true, nil // a UUID at SaveChanges
	}
	switch prop.kind {
	case propInt, propUint:
		// A number-valued identity takes a HiLo number without the server
		// tag, so the value part converts back to the number.
		if ss.store.nums == nil {
			return "", false, newError(ErrNeedsServer, "", "", "no number source for numeric ids of %q", coll)
		}
		n, _, err := ss.store.nums.NextNumber(ctx, conv.IDPrefix(coll))
		if err != nil {
			return "", false, fmt.Errorf("generate id: %w", err)
		}
		return conv.IDPrefix(coll) + ss.store.sep + strconv.FormatInt(n, 10), true, nil
	case propUUID:
		return conv.IDPrefix(coll) + ss.store.sep + NewUUID(), true, nil
	}
	id, err := ss.store.GenerateID(ctx, coll)
	return id, err == nil, err
}

// Load reads the document id into into (a pointer to a struct or to a
// map[string]any) and tracks it, so SaveChanges writes its changes. Loading
// an id the session tracks already copies the tracked entity into into when
// into is another pointer; the session keeps tracking the first one.
func (ss *Session) Load(ctx context.Context, id string, into any) error {
	if t := ss.byID[id]; t != nil {
		if t.deleted {
			return newError(ErrNotFound, id, "", "document %q not found (deleted in this session)", id)
		}
		return copyEntity(into, t.entity)
	}
	v := reflect.ValueOf(into)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return newError(ErrBadParameter, id, "", "bad parameter: Load needs a non-nil pointer, not %T", into)
	}
	doc, err := ss.store.Get(id)
	if err != nil {
		return err
	}
	h := readHeader(string(doc))
	if err := json.Unmarshal(doc, into); err != nil {
		return newError(ErrBadJSON, id, "", "load %q into %T: %v", id, into, err)
	}
	entity := into
	if m, ok := into.(*map[string]any); ok {
		entity = *m
	}
	return ss.track(entity, id, h)
}

// LoadAny reads the document id into a new value of the type its
// Raven-Node-Type names (registered with Conventions.RegisterType) and
// returns a pointer to it, or a map[string]any when no type is registered.
func (ss *Session) LoadAny(ctx context.Context, id string) (any, error) {
	if t := ss.byID[id]; t != nil && !t.deleted {
		return t.entity, nil
	}
	doc, err := ss.store.Get(id)
	if err != nil {
		return nil, err
	}
	var meta struct {
		Meta map[string]json.RawMessage `json:"@metadata"`
	}
	_ = json.Unmarshal(doc, &meta)
	var typeName string
	_ = json.Unmarshal(meta.Meta[MetadataNodeType], &typeName)
	if typ, ok := ss.store.conv.FindJsType(typeName); ok && typeName != "" {
		p := reflect.New(typ).Interface()
		if err := ss.Load(ctx, id, p); err != nil {
			return nil, err
		}
		return p, nil
	}
	m := map[string]any{}
	if err := ss.Load(ctx, id, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func (ss *Session) track(entity any, id string, h header) error {
	k, err := keyOf(entity)
	if err != nil {
		return err
	}
	conv := ss.store.conv
	t := &tracked{entity: entity, id: id, pending: idGiven, collection: h.Meta.Collection, rev: h.Rev}
	prop := idProperty{mapKey: conv.IdentityPropertyName(t.collection)}
	if _, isLit := entity.(map[string]any); !isLit {
		typ := derefType(reflect.TypeOf(entity))
		t.typeName = conv.JsTypeName(typ)
		if prop, err = findIDProperty(conv, typ, t.collection); err != nil {
			return err
		}
	}
	if err := prop.set(entity, id, conv); err != nil {
		return err
	}
	body, err := ss.body(t)
	if err != nil {
		return err
	}
	t.snapshot = body
	ss.byPtr[k] = t
	ss.byID[id] = t
	ss.order = append(ss.order, t)
	return nil
}

// Delete marks an entity, or the document with an id (a string), for
// deletion at SaveChanges. Deleting an id that does not exist is not an
// error.
func (ss *Session) Delete(entityOrID any) error {
	if id, ok := entityOrID.(string); ok {
		if t := ss.byID[id]; t != nil {
			t.deleted = true
			return nil
		}
		if _, _, err := ParseID(id, ss.store.sep); err != nil {
			return err
		}
		ss.deletes = append(ss.deletes, id)
		return nil
	}
	k, err := keyOf(entityOrID)
	if err != nil {
		return err
	}
	t := ss.byPtr[k]
	if t == nil {
		return newError(ErrBadParameter, "", "", "bad parameter: %T is not tracked by this session", entityOrID)
	}
	t.deleted = true
	return nil
}

// GetDocumentID returns the id of a tracked entity: the final id, or while
// it waits for SaveChanges the form that asks for one ("", "companies/",
// "companies|"). ok is false for an entity the session does not track.
func (ss *Session) GetDocumentID(entity any) (id string, ok bool) {
	k, err := keyOf(entity)
	if err != nil {
		return "", false
	}
	t := ss.byPtr[k]
	if t == nil {
		return "", false
	}
	return t.id, true
}

// body encodes a tracked entity as a document body: its JSON without the
// identity property.
func (ss *Session) body(t *tracked) ([]byte, error) {
	b, err := json.Marshal(t.entity)
	if err != nil {
		return nil, newError(ErrBadJSON, t.id, "", "encode %T: %v", t.entity, err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil || fields == nil {
		return nil, newError(ErrBadJSON, t.id, "", "%T does not encode as a JSON object", t.entity)
	}
	conv := ss.store.conv
	if _, isLit := t.entity.(map[string]any); isLit {
		delete(fields, conv.IdentityPropertyName(t.collection))
	} else if prop, err := findIDProperty(conv, derefType(reflect.TypeOf(t.entity)), t.collection); err == nil && prop.field != nil {
		delete(fields, prop.jsonName)
	}
	for _, k := range []string{"_id", "_key", "_rev", "@metadata"} {
		delete(fields, k)
	}
	return json.Marshal(fields)
}

// SaveChanges writes every new, changed and deleted entity in one
// transaction. Ids that wait for the sync server (ending in "|") are
// allocated first, in one call; if that fails, or any write fails, nothing
// is saved and the session is as it was.
func (ss *Session) SaveChanges(ctx context.Context) error {
	type item struct {
		t    *tracked
		body []byte
	}
	var ws []*write
	var items []item // parallel to ws; t is nil for deletes by id
	for _, id := range ss.deletes {
		ws = append(ws, &write{kind: opRemove, id: id, anyColl: true, missingOK: true})
		items = append(items, item{})
	}
	var dropped []*tracked // deleted before they were ever saved
	for _, t := range ss.order {
		if t.deleted {
			if t.isNew {
				dropped = append(dropped, t)
				continue
			}
			w := &write{kind: opRemove, id: t.id, anyColl: true, missingOK: true}
			if ss.opts.UseOptimisticConcurrency {
				w.ifRev, w.missingOK = t.rev, false
			}
			ws = append(ws, w)
			items = append(items, item{t: t})
			continue
		}
		body, err := ss.body(t)
		if err != nil {
			return err
		}
		if !t.isNew && bytes.Equal(body, t.snapshot) {
			continue
		}
		w := &write{kind: opInsert, coll: t.collection, body: body, opts: &WriteOptions{OverwriteMode: OverwriteReplace}}
		if t.typeName != "" {
			w.meta = map[string]json.RawMessage{MetadataNodeType: quoteJSON(t.typeName)}
		}
		switch t.pending {
		case idGiven:
			w.id = t.id
		case idUUID:
			w.id = NewUUID()
		case idNodeSeq:
			if e := ss.store.checkPrefix(t.id[:len(t.id)-len(ss.store.sep)]); e != nil {
				return e
			}
			w.seqPrefix = t.id
		case idIdentity:
			name := identityName(t.id, ss.store.sep)
			if e := ss.store.checkPrefix(name); e != nil {
				return e
			}
			w.identity = name
		}
		if ss.opts.UseOptimisticConcurrency {
			if t.isNew {
				w.mustBeNew = true
			} else {
				w.kind, w.ifRev = opReplace, t.rev
			}
		}
		ws = append(ws, w)
		items = append(items, item{t: t, body: body})
	}
	if len(ws) == 0 {
		for _, t := range dropped {
			ss.untrack(t)
		}
		return nil
	}
	results, err := ss.store.run(ctx, ws, true)
	if err != nil {
		return fmt.Errorf("save changes: %w", err)
	}
	for _, t := range dropped {
		ss.untrack(t)
	}
	ss.deletes = nil
	for i, it := range items {
		t := it.t
		if t == nil {
			if old := ss.byID[ws[i].id]; old != nil {
				old.deleted = true
			}
			continue
		}
		if t.deleted {
			ss.untrack(t)
			continue
		}
		r := results[i]
		if t.pending != idGiven {
			t.id, t.pending = r.ID, idGiven
			ss.byID[r.ID] = t
			prop, err := ss.propertyOf(t)
			if err == nil {
				err = prop.set(t.entity, r.ID, ss.store.conv)
			}
			if err != nil {
				return fmt.Errorf("save changes: set id of %T: %w", t.entity, err)
			}
		}
		t.rev, t.snapshot, t.isNew = r.Rev, it.body, false
	}
	return nil
}

func (ss *Session) untrack(t *tracked) {
	if k, err := keyOf(t.entity); err == nil {
		delete(ss.byPtr, k)
	}
	if ss.byID[t.id] == t {
		delete(ss.byID, t.id)
	}
	for i, o := range ss.order {
		if o == t {
			ss.order = append(ss.order[:i], ss.order[i+1:]...)
			break
		}
	}
}

func (ss *Session) propertyOf(t *tracked) (idProperty, error) {
	conv := ss.store.conv
	if _, isLit := t.entity.(map[string]any); isLit {
		return idProperty{mapKey: conv.IdentityPropertyName(t.collection)}, nil
	}
	return findIDProperty(conv, derefType(reflect.TypeOf(t.entity)), t.collection)
}

func copyEntity(into, from any) error {
	dst := reflect.ValueOf(into)
	if dst.Kind() != reflect.Pointer || dst.IsNil() {
		return newError(ErrBadParameter, "", "", "bad parameter: Load needs a non-nil pointer, not %T", into)
	}
	src := reflect.ValueOf(from)
	if src.Kind() == reflect.Pointer {
		src = src.Elem()
	}
	if !src.Type().AssignableTo(dst.Elem().Type()) {
		return newError(ErrBadParameter, "", "", "bad parameter: the session tracks this id as %T, not %T", from, into)
	}
	dst.Elem().Set(src)
	return nil
}

// Identity property kinds.
const (
	propNone = iota
	propString
	propStringPtr
	propInt
	propUint
	propUUID
)

// idProperty is where an entity keeps its id: a struct field or a map key.
type idProperty struct {
	field    []int // struct field index; nil for maps or no property
	jsonName string
	kind     int
	mapKey   string
}

var uuidType = reflect.TypeOf(UUID{})

// findIDProperty finds the identity field of struct type typ.
func findIDProperty(conv *Conventions, typ reflect.Type, coll string) (idProperty, error) {
	name := conv.IdentityPropertyName(coll)
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		jsonName := f.Name
		if tag := f.Tag.Get("json"); tag != "" {
			if n, _, _ := cutComma(tag); n == "-" {
				continue
			} else if n != "" {
				jsonName = n
			}
		}
		var match bool
		if conv.FindIdentityProperty != nil {
			match = conv.FindIdentityProperty(f)
		} else {
			match = f.Name == name || jsonName == name || (name == "Id" && f.Name == "ID")
		}
		if !match {
			continue
		}
		p := idProperty{field: f.Index, jsonName: jsonName}
		switch {
		case f.Type == uuidType:
			p.kind = propUUID
		case f.Type.Kind() == reflect.String:
			p.kind = propString
		case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.String:
			p.kind = propStringPtr
		case f.Type.Kind() >= reflect.Int && f.Type.Kind() <= reflect.Int64:
			p.kind = propInt
		case f.Type.Kind() >= reflect.Uint && f.Type.Kind() <= reflect.Uint64:
			p.kind = propUint
		default:
			return p, newError(ErrBadParameter, "", "", "bad parameter: identity property %s.%s has type %s; use a string, *string, an integer or core.UUID", typ.Name(), f.Name, f.Type)
		}
		return p, nil
	}
	return idProperty{}, nil
}

func cutComma(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ',' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// get returns the id an entity brings; present is false when it has none
// (no property, a nil *string, an empty string, or a zero number or UUID).
func (p idProperty) get(entity any, st *Store, coll string) (string, bool, error) {
	if m, ok := entity.(map[string]any); ok {
		v, ok := m[p.mapKey]
		if !ok || v == nil {
			return "", false, nil
		}
		s, ok := v.(string)
		if !ok {
			return "", false, newError(ErrBadParameter, "", "", "bad parameter: identity property %q of an object literal must be a string", p.mapKey)
		}
		return s, true, nil
	}
	if p.field == nil {
		return "", false, nil
	}
	f := reflect.ValueOf(entity).Elem().FieldByIndex(p.field)
	prefix := st.conv.IDPrefix(coll) + st.sep
	switch p.kind {
	case propString:
		return f.String(), f.String() != "", nil
	case propStringPtr:
		if f.IsNil() {
			return "", false, nil
		}
		return f.Elem().String(), true, nil
	case propInt:
		if f.Int() == 0 {
			return "", false, nil
		}
		return prefix + strconv.FormatInt(f.Int(), 10), true, nil
	case propUint:
		if f.Uint() == 0 {
			return "", false, nil
		}
		return prefix + strconv.FormatUint(f.Uint(), 10), true, nil
	case propUUID:
		u := f.Interface().(UUID)
		if u == (UUID{}) {
			return "", false, nil
		}
		return prefix + u.String(), true, nil
	}
	return "", false, nil
}

// set writes id into the entity's identity property; numeric and UUID
// properties get the value part after the last separator.
func (p idProperty) set(entity any, id string, conv *Conventions) error {
	if m, ok := entity.(map[string]any); ok {
		m[p.mapKey] = id
		return nil
	}
	if p.field == nil {
		return nil
	}
	f := reflect.ValueOf(entity).Elem().FieldByIndex(p.field)
	switch p.kind {
	case propString:
		f.SetString(id)
	case propStringPtr:
		v := reflect.New(f.Type().Elem())
		v.Elem().SetString(id)
		f.Set(v)
	case propInt:
		n, err := strconv.ParseInt(conv.IDValuePart(id), 10, f.Type().Bits())
		if err != nil {
			return newError(ErrBadParameter, id, "", "bad parameter: id %q has no numeric value part for %s", id, f.Type())
		}
		f.SetInt(n)
	case propUint:
		n, err := strconv.ParseUint(conv.IDValuePart(id), 10, f.Type().Bits())
		if err != nil {
			return newError(ErrBadParameter, id, "", "bad parameter: id %q has no numeric value part for %s", id, f.Type())
		}
		f.SetUint(n)
	case propUUID:
		u, err := ParseUUID(conv.IDValuePart(id))
		if err != nil {
			return newError(ErrBadParameter, id, "", "bad parameter: id %q has no UUID value part", id)
		}
		f.Set(reflect.ValueOf(u))
	}
	return nil
}
