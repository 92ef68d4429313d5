package naming

import (
	"context"
	"reflect"
	"strings"
	"sync"
)

// EmptyCollection is the collection of object literals for which no
// collection could be found, as RavenDB's "@empty"; they get UUID ids with
// no prefix.
const EmptyCollection = "@empty"

// IDConvention makes the id for a new entity in place of HiLo. It may return
// an id ending in the separator or in "|" (resolved at SaveChanges), "" for
// a UUID, or a full id.
type IDConvention func(ctx context.Context, collection string, entity any) (string, error)

// Conventions are a store's rules for mapping entities to documents, named
// after the RavenDB Node.js client's conventions. Every field may be
// replaced; a nil function field means the default. Change them before the
// store is used: they are read without locks.
type Conventions struct {
	// IdentityPartsSeparator joins an id prefix and a key. Default "/".
	// It should not be a legal key byte.
	IdentityPartsSeparator string

	// FindCollectionName returns the collection of an entity type from the
	// type's name. Default: Pluralize ("Order" → "Orders", "Category" →
	// "Categories").
	FindCollectionName func(typeName string) string

	// TransformClassCollectionNameToDocumentIDPrefix returns the id prefix
	// of a collection. Default: IDPrefix ("Orders" → "orders", "LineItems"
	// → "LineItems").
	TransformClassCollectionNameToDocumentIDPrefix func(collection string) string

	// FindIdentityProperty reports whether a struct field holds the
	// entity's id. When nil, the field named by
	// FindIdentityPropertyNameFromCollectionName is used.
	FindIdentityProperty func(field reflect.StructField) bool

	// FindIdentityPropertyNameFromCollectionName returns the name of the
	// identity property of a collection's entities: a Go field name for
	// structs (its JSON name also matches), a key for object literals.
	// Default "Id"; a struct field named "ID" matches the default too.
	FindIdentityPropertyNameFromCollectionName func(collection string) string

	// FindCollectionNameForObjectLiteral returns the collection of an object
	// literal (a map). When it is nil or returns "", the literal goes to
	// EmptyCollection with a UUID id.
	FindCollectionNameForObjectLiteral func(doc map[string]any) string

	// FindJsTypeName returns the type name kept in @metadata as
	// Raven-Node-Type. Default: the Go type's name.
	FindJsTypeName func(t reflect.Type) string

	// GenerateDocumentID, when set, makes the ids of new entities instead of
	// HiLo, for every type that has no IDConvention of its own. Returning
	// prefix+"|" makes identities the default, for example.
	GenerateDocumentID IDConvention

	mu     sync.RWMutex
	byType map[reflect.Type]IDConvention
	types  map[string]reflect.Type
}

// Default returns RavenDB's default conventions.
func Default() *Conventions {
	return &Conventions{IdentityPartsSeparator: "/"}
}

// RegisterIDConvention makes fn the id generator for entities of sample's
// type (sample may be a value or a pointer), like the Node.js client's
// registerIdConvention.
func (c *Conventions) RegisterIDConvention(sample any, fn IDConvention) {
	t := derefType(reflect.TypeOf(sample))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byType == nil {
		c.byType = make(map[reflect.Type]IDConvention)
	}
	c.byType[t] = fn
}

// RegisterType records sample's type under its FindJsTypeName, so that a
// session's LoadAny can restore it from a document's Raven-Node-Type.
func (c *Conventions) RegisterType(sample any) {
	t := derefType(reflect.TypeOf(sample))
	name := c.JsTypeName(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.types == nil {
		c.types = make(map[string]reflect.Type)
	}
	c.types[name] = t
}

// FindJsType returns the registered type for a Raven-Node-Type name.
func (c *Conventions) FindJsType(name string) (reflect.Type, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.types[name]
	return t, ok
}

// IDConventionFor returns the id generator for entities of struct type t:
// the one RegisterIDConvention registered for it, else GenerateDocumentID
// (nil when neither is set).
func (c *Conventions) IDConventionFor(t reflect.Type) IDConvention {
	c.mu.RLock()
	fn := c.byType[t]
	c.mu.RUnlock()
	if fn != nil {
		return fn
	}
	return c.GenerateDocumentID
}

// Separator returns IdentityPartsSeparator or its default.
func (c *Conventions) Separator() string {
	if c.IdentityPartsSeparator == "" {
		return "/"
	}
	return c.IdentityPartsSeparator
}

// CollectionName returns the collection for a type name.
func (c *Conventions) CollectionName(typeName string) string {
	if c.FindCollectionName != nil {
		return c.FindCollectionName(typeName)
	}
	return Pluralize(typeName)
}

// IDPrefix returns the id prefix for a collection.
func (c *Conventions) IDPrefix(collection string) string {
	if c.TransformClassCollectionNameToDocumentIDPrefix != nil {
		return c.TransformClassCollectionNameToDocumentIDPrefix(collection)
	}
	return IDPrefix(collection)
}

// IdentityPropertyName returns the identity property name for a collection.
func (c *Conventions) IdentityPropertyName(collection string) string {
	if c.FindIdentityPropertyNameFromCollectionName != nil {
		return c.FindIdentityPropertyNameFromCollectionName(collection)
	}
	return "Id"
}

// JsTypeName returns the Raven-Node-Type name of t.
func (c *Conventions) JsTypeName(t reflect.Type) string {
	t = derefType(t)
	if c.FindJsTypeName != nil {
		return c.FindJsTypeName(t)
	}
	return t.Name()
}

// ObjectLiteralCollection returns the collection of an object literal:
// FindCollectionNameForObjectLiteral's answer, else EmptyCollection.
func (c *Conventions) ObjectLiteralCollection(doc map[string]any) string {
	if c.FindCollectionNameForObjectLiteral != nil {
		if name := c.FindCollectionNameForObjectLiteral(doc); name != "" {
			return name
		}
	}
	return EmptyCollection
}

// IDValuePart returns the part of id after its last separator, the value a
// numeric or UUID identity property holds (RavenDB's
// FindIdValuePartForValueTypeConversion): "orders/3" → "3".
func (c *Conventions) IDValuePart(id string) string {
	sep := c.Separator()
	id = strings.TrimRight(id, sep)
	if i := strings.LastIndex(id, sep); i >= 0 {
		return id[i+len(sep):]
	}
	return id
}

func derefType(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// IDPrefix returns the default id prefix of a collection: a name with at
// most one upper-case letter is lower-cased ("Orders" → "orders"), any other
// is kept ("LineItems" → "LineItems").
func IDPrefix(collection string) string {
	upper, ascii := 0, true
	for i := 0; i < len(collection); i++ {
		if c := collection[i]; c >= 'A' && c <= 'Z' {
			upper++
		} else if c >= 0x80 {
			ascii = false
		}
	}
	switch {
	case upper == 0 && ascii:
		// Lower-case already; a bulk write asks once per document, and
		// strings.ToLower reads the name twice more to find that out.
		return collection
	case upper <= 1:
		return strings.ToLower(collection)
	}
	return collection
}
