package session_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/naming"
	"github.com/hilodb/hilodb/core/session"
)

// TestConventionsOverridable replaces every convention on a store.
func TestConventionsOverridable(t *testing.T) {
	conv := naming.Default()
	conv.IdentityPartsSeparator = ":"
	conv.FindCollectionName = func(typeName string) string { return "T" + typeName }
	conv.TransformClassCollectionNameToDocumentIDPrefix = func(c string) string { return "p" + c }
	conv.FindJsTypeName = func(t reflect.Type) string { return "js." + t.Name() }
	s := newTestStore(t, func(o *core.Options) { o.Conventions = conv })
	ctx := context.Background()
	ss := session.Open(s.Store, session.Options{})
	o := &Order{}
	if err := ss.Store(ctx, o); err != nil {
		t.Fatal(err)
	}
	if err := ss.SaveChanges(ctx); err != nil {
		t.Fatal(err)
	}
	// The HiLo source formats with "/": the id is whatever it gives.
	doc := decode(t, mustGet(t, s, o.Id))
	meta := doc["@metadata"].(map[string]any)
	if meta["@collection"] != "TOrder" || meta["Raven-Node-Type"] != "js.Order" {
		t.Errorf("metadata %v", meta)
	}
	// The separator applies to keys, identities and node sequences.
	r, err := s.Insert(ctx, "things", []byte(`{"_key":"k"}`), nil)
	if err != nil || r.ID != "pthings:k" {
		t.Errorf("key with separator: %+v %v", r, err)
	}
	r, err = s.Insert(ctx, "things", []byte(`{"_id":"things|"}`), nil)
	if err != nil || r.ID != "things:1" {
		t.Errorf("identity with separator: %+v %v", r, err)
	}
	r, err = s.Insert(ctx, "things", []byte(`{"_id":"things:"}`), nil)
	if err != nil || r.ID != "things:0000000000000000001-C" {
		t.Errorf("node sequence with separator: %+v %v", r, err)
	}
}

func TestIdentityPropertyConventions(t *testing.T) {
	type Thing struct {
		Key  string
		Name string
	}
	conv := naming.Default()
	conv.FindIdentityPropertyNameFromCollectionName = func(c string) string {
		if c == "Things" {
			return "Key"
		}
		return "Id"
	}
	s := newTestStore(t, func(o *core.Options) { o.Conventions = conv })
	ctx := context.Background()
	ss := session.Open(s.Store, session.Options{})
	th := &Thing{Name: "x"}
	ss.Store(ctx, th)
	if th.Key != "things/1-A" {
		t.Errorf("Key %q", th.Key)
	}
	// A predicate on the field wins.
	type Gadget struct {
		Ref  string `json:"ref"`
		Name string
	}
	conv.FindIdentityProperty = func(f reflect.StructField) bool { return f.Name == "Ref" }
	g := &Gadget{}
	ss.Store(ctx, g)
	if g.Ref != "gadgets/1-A" {
		t.Errorf("Ref %q", g.Ref)
	}
	ss.SaveChanges(ctx)
	if _, ok := decode(t, mustGet(t, s, g.Ref))["ref"]; ok {
		t.Error("identity property stored")
	}
}

func TestObjectLiterals(t *testing.T) {
	conv := naming.Default()
	s := newTestStore(t, func(o *core.Options) { o.Conventions = conv })
	ctx := context.Background()
	ss := session.Open(s.Store, session.Options{})
	lit := map[string]any{"name": "n"}
	ss.Store(ctx, lit)
	if err := ss.SaveChanges(ctx); err != nil {
		t.Fatal(err)
	}
	id := lit["Id"].(string)
	if !regexpMust(`^[0-9a-f-]{36}$`).MatchString(id) {
		t.Errorf("literal id %q", id)
	}
	if meta := decode(t, mustGet(t, s, id))["@metadata"].(map[string]any); meta["@collection"] != "@empty" {
		t.Errorf("collection %v", meta["@collection"])
	}
	// A hook finds the collection.
	conv.FindCollectionNameForObjectLiteral = func(doc map[string]any) string {
		c, _ := doc["category"].(string)
		return c
	}
	lit2 := map[string]any{"category": "Books"}
	ss.Store(ctx, lit2)
	ss.SaveChanges(ctx)
	if lit2["Id"] != "books/1-A" {
		t.Errorf("hooked literal id %v", lit2["Id"])
	}
	if meta := decode(t, mustGet(t, s, "books/1-A"))["@metadata"].(map[string]any); meta["@collection"] != "Books" {
		t.Errorf("hooked collection %v", meta)
	}
}

func TestTypeRestoredOnLoad(t *testing.T) {
	conv := naming.Default()
	conv.RegisterType(&Order{})
	s := newTestStore(t, func(o *core.Options) { o.Conventions = conv })
	ctx := context.Background()
	ss := session.Open(s.Store, session.Options{})
	ss.Store(ctx, &Order{Id: "orders/t", Total: 4})
	ss.Store(ctx, map[string]any{"Id": "misc/1", "x": 1.0})
	ss.SaveChanges(ctx)
	ss2 := session.Open(s.Store, session.Options{})
	v, err := ss2.LoadAny(ctx, "orders/t")
	if err != nil {
		t.Fatal(err)
	}
	o, ok := v.(*Order)
	if !ok || o.Total != 4 || o.Id != "orders/t" {
		t.Fatalf("LoadAny gave %#v", v)
	}
	if again, _ := ss2.LoadAny(ctx, "orders/t"); again != v {
		t.Error("identity map: a second load gave another instance")
	}
	m, err := ss2.LoadAny(ctx, "misc/1")
	if mm, ok := m.(map[string]any); err != nil || !ok || mm["x"] != 1.0 {
		t.Errorf("unregistered type: %#v %v", m, err)
	}
}

func TestCustomIDGenerator(t *testing.T) {
	conv := naming.Default()
	// Identities by default, as RavenDB's DocumentKeyGenerator example.
	conv.GenerateDocumentID = func(ctx context.Context, coll string, entity any) (string, error) {
		return naming.IDPrefix(coll) + "|", nil
	}
	conv.RegisterIDConvention(&Company{}, func(ctx context.Context, coll string, entity any) (string, error) {
		return "companies/" + entity.(*Company).Name, nil
	})
	s := newTestStore(t, func(o *core.Options) { o.Conventions = conv })
	ctx := context.Background()
	ss := session.Open(s.Store, session.Options{})
	o1, o2 := &Order{}, &Order{}
	c := &Company{Name: "acme"}
	ss.Store(ctx, o1)
	ss.Store(ctx, o2)
	ss.Store(ctx, c)
	if c.ID != "companies/acme" {
		t.Errorf("per-type convention: %q", c.ID)
	}
	if err := ss.SaveChanges(ctx); err != nil {
		t.Fatal(err)
	}
	if o1.Id != "orders/1" || o2.Id != "orders/2" {
		t.Errorf("identity by default: %q %q", o1.Id, o2.Id)
	}
	if s.Idents.Calls != 1 {
		t.Errorf("identity calls %d, want 1 for the batch", s.Idents.Calls)
	}
}
