package session

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/naming"
	"github.com/hilodb/hilodb/core/uuid"
)

// Store is what a Session needs of a document store: its conventions and
// separator, reads by id, new ids, HiLo numbers for numeric identity
// properties, and one all-or-nothing batch write for SaveChanges.
// *core.Store implements it.
type Store interface {
	Conventions() *naming.Conventions
	Separator() string
	Get(id string) ([]byte, error)
	GenerateID(ctx context.Context, collection string) (string, error)
	// Numbers returns the source of HiLo numbers, or nil without one.
	Numbers() core.NumberSource
	SaveBatch(ctx context.Context, items []core.BatchItem) ([]core.Result, error)
}

var _ Store = (*core.Store)(nil)

// Options configure a Session.
type Options struct {
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
	store   Store
	conv    *naming.Conventions
	sep     string
	opts    Options
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
	final      bool   // id is final (core.IsFinalID), not yet to be made
	loaded     bool   // read from the store (Load), not stored by the session
	collection string
	typeName   string
	snapshot   []byte // body as last loaded or saved; nil for new entities
	rev        string
	isNew      bool
	deleted    bool
}

// Open starts a unit of work over store.
func Open(store Store, opts Options) *Session {
	return &Session{store: store, conv: store.Conventions(), sep: store.Separator(), opts: opts,
		byPtr: map[ptrKey]*tracked{}, byID: map[string]*tracked{}}
}

func keyOf(entity any) (ptrKey, error) {
	v := reflect.ValueOf(entity)
	switch {
	case v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Struct:
	case v.Kind() == reflect.Map && !v.IsNil() && v.Type().Key().Kind() == reflect.String:
	default:
		return ptrKey{}, core.NewError(core.ErrBadParameter, "", "", "bad parameter: an entity is a non-nil pointer to a struct or a map[string]any, not %T", entity)
	}
	return ptrKey{v.Type(), v.Pointer()}, nil
}

// validateCollection accepts a legal collection name or
// core.EmptyCollection, as the store does.
func validateCollection(name string) error {
	if name == core.EmptyCollection {
		return nil
	}
	return core.ValidateCollectionName(name)
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
		return core.NewError(core.ErrBadParameter, "", "", "bad parameter: Store takes at most one id")
	}
	if t := ss.byPtr[k]; t != nil {
		if len(id) == 1 && id[0] != t.id {
			return core.NewError(core.ErrBadParameter, t.id, "", "bad parameter: the entity is stored as %q already, not %q", t.id, id[0])
		}
		t.deleted = false
		return nil
	}
	conv := ss.conv
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
	given, present, err := prop.get(entity, conv, ss.sep, t.collection)
	if err != nil {
		return err
	}
	if len(id) == 1 {
		given, present = id[0], true
	}
	if !present {
		given, err = ss.newID(ctx, entity, t.collection, prop)
		if err != nil {
			return err
		}
	}
	t.id = given
	t.final = core.IsFinalID(given, ss.sep)
	if t.final {
		if _, _, err := core.ParseID(given, ss.sep); err != nil {
			return err
		}
		if other := ss.byID[given]; other != nil && !other.deleted {
			return core.NewError(core.ErrUniqueConstraint, given, "", "unique constraint violated: the session tracks another entity with id %q", given)
		}
		if err := prop.set(entity, given, conv); err != nil {
			return err
		}
		ss.byID[given] = t
	}
	ss.byPtr[k] = t
	ss.order = append(ss.order, t)
	return nil
}

// newID makes the id of a new entity stored without one.
func (ss *Session) newID(ctx context.Context, entity any, coll string, prop idProperty) (string, error) {
	conv := ss.conv
	if fn := conv.IDConventionFor(derefType(reflect.TypeOf(entity))); fn != nil {
		id, err := fn(ctx, coll, entity)
		if err != nil {
			return "", fmt.Errorf("generate id: %w", err)
		}
		return id, nil
	}
	if coll == core.EmptyCollection {
		return "", nil // a UUID at SaveChanges
	}
	switch prop.kind {
	case propInt, propUint:
		// A number-valued identity takes a HiLo number without the server
		// tag, so the value part converts back to the number.
		nums := ss.store.Numbers()
		if nums == nil {
			return "", core.NewError(core.ErrNeedsServer, "", "", "no number source for numeric ids of %q", coll)
		}
		n, _, err := nums.NextNumber(ctx, conv.IDPrefix(coll))
		if err != nil {
			return "", fmt.Errorf("generate id: %w", err)
		}
		return conv.IDPrefix(coll) + ss.sep + strconv.FormatInt(n, 10), nil
	case propUUID:
		return conv.IDPrefix(coll) + ss.sep + uuid.New(), nil
	}
	return ss.store.GenerateID(ctx, coll)
}

// Load reads the document id into into (a pointer to a struct or to a
// map[string]any) and tracks it, so SaveChanges writes its changes. Loading
// an id the session tracks already copies the tracked entity into into when
// into is another pointer; the session keeps tracking the first one.
func (ss *Session) Load(ctx context.Context, id string, into any) error {
	if t := ss.byID[id]; t != nil {
		if t.deleted {
			return core.NewError(core.ErrNotFound, id, "", "document %q not found (deleted in this session)", id)
		}
		return copyEntity(into, t.entity)
	}
	v := reflect.ValueOf(into)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return core.NewError(core.ErrBadParameter, id, "", "bad parameter: Load needs a non-nil pointer, not %T", into)
	}
	doc, err := ss.store.Get(id)
	if err != nil {
		return err
	}
	rev, coll := core.ReadHeader(string(doc))
	if err := json.Unmarshal(doc, into); err != nil {
		return core.NewError(core.ErrBadJSON, id, "", "load %q into %T: %v", id, into, err)
	}
	entity := into
	if m, ok := into.(*map[string]any); ok {
		entity = *m
	}
	return ss.track(entity, id, rev, coll)
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
	_ = json.Unmarshal(meta.Meta[core.MetadataNodeType], &typeName)
	if typ, ok := ss.conv.FindJsType(typeName); ok && typeName != "" {
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

// track starts tracking entity, just loaded from document id with
// revision rev in collection coll.
func (ss *Session) track(entity any, id, rev, coll string) error {
	k, err := keyOf(entity)
	if err != nil {
		return err
	}
	conv := ss.conv
	t := &tracked{entity: entity, id: id, final: true, loaded: true, collection: coll, rev: rev}
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
		if _, _, err := core.ParseID(id, ss.sep); err != nil {
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
		return core.NewError(core.ErrBadParameter, "", "", "bad parameter: %T is not tracked by this session", entityOrID)
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

func copyEntity(into, from any) error {
	dst := reflect.ValueOf(into)
	if dst.Kind() != reflect.Pointer || dst.IsNil() {
		return core.NewError(core.ErrBadParameter, "", "", "bad parameter: Load needs a non-nil pointer, not %T", into)
	}
	src := reflect.ValueOf(from)
	if src.Kind() == reflect.Pointer {
		src = src.Elem()
	}
	if !src.Type().AssignableTo(dst.Elem().Type()) {
		return core.NewError(core.ErrBadParameter, "", "", "bad parameter: the session tracks this id as %T, not %T", from, into)
	}
	dst.Elem().Set(src)
	return nil
}

func derefType(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
