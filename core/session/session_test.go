package session_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/revision"
	"github.com/hilodb/hilodb/core/session"
	"github.com/hilodb/hilodb/core/uuid"
)

type Order struct {
	Id    string
	Total float64 `json:"total"`
}

type Company struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type Category struct {
	Id   *string
	Name string
}

type Address struct {
	Id     int64
	Street string
}

type Invoice struct {
	Id  int32
	Sum int
}

type Ticket struct {
	Id    uuid.UUID
	Title string
}

type LineItem struct {
	Id  string
	Qty int
}

type NoID struct {
	Name string
}

func TestSessionStoreAssignsHiLoAtStore(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	ss := session.Open(s.Store, session.Options{})
	o := &Order{Total: 10}
	if err := ss.Store(ctx, o); err != nil {
		t.Fatal(err)
	}
	// The id is there before SaveChanges, as RavenDB does.
	if o.Id != "orders/1-A" {
		t.Errorf("Id %q, want orders/1-A", o.Id)
	}
	if id, ok := ss.GetDocumentID(o); !ok || id != "orders/1-A" {
		t.Errorf("GetDocumentID %q %v", id, ok)
	}
	if _, err := s.Get("orders/1-A"); !errors.Is(err, core.ErrNotFound) {
		t.Error("stored before SaveChanges")
	}
	if err := ss.SaveChanges(ctx); err != nil {
		t.Fatal(err)
	}
	doc := decode(t, mustGet(t, s, "orders/1-A"))
	meta := doc["@metadata"].(map[string]any)
	if doc["total"] != 10.0 || meta["@collection"] != "Orders" || meta["Raven-Node-Type"] != "Order" {
		t.Errorf("stored %v", doc)
	}
	if _, ok := doc["Id"]; ok {
		t.Error("the identity property is stored in the body")
	}
	// A second Store of the same entity is a no-op; changes are saved.
	ss.Store(ctx, o)
	o.Total = 11
	if err := ss.SaveChanges(ctx); err != nil {
		t.Fatal(err)
	}
	if decode(t, mustGet(t, s, "orders/1-A"))["total"] != 11.0 {
		t.Error("change not saved")
	}
}

// TestSessionIDStrategies has one row per id strategy of docs/ids.md, through the session.
func TestSessionIDStrategies(t *testing.T) {
	tests := []struct {
		name     string
		entity   any
		storeID  []string
		atStore  string // id right after Store
		afterRe  string // id after SaveChanges
		property func(any) string
	}{
		{"no id: HiLo", &Order{}, nil, "orders/1-A", `^orders/1-A$`, nil},
		{"empty id: UUID", &Order{}, []string{""}, "", `^[0-9a-f-]{36}$`, nil},
		{"semantic id", &Order{Id: "orders/special"}, nil, "orders/special", `^orders/special$`, nil},
		{"Store(entity, id)", &Order{}, []string{"orders/given"}, "orders/given", `^orders/given$`, nil},
		{"ends in separator", &Company{ID: "companies/"}, nil, "companies/", `^companies/0000000000000000001-C$`, nil},
		{"ends in pipe", &Company{ID: "companies|"}, nil, "companies|", `^companies/1$`, nil},
		{"*string nil: HiLo", &Category{}, nil, "categories/1-A", `^categories/1-A$`, nil},
		{"*string empty: UUID", &Category{Id: core.Ptr("")}, nil, "", `^[0-9a-f-]{36}$`, nil},
		{"int64 zero: number", &Address{}, nil, "addresses/1", `^addresses/1$`, nil},
		{"int64 given", &Address{Id: 3}, nil, "addresses/3", `^addresses/3$`, nil},
		{"int32 given", &Invoice{Id: 7}, nil, "invoices/7", `^invoices/7$`, nil},
		{"UUID zero", &Ticket{}, nil, "", `^tickets/[0-9a-f-]{36}$`, nil},
		{"no identity property", &NoID{}, nil, "NoIDs/1-A", `^NoIDs/1-A$`, nil},
		{"prefix kept", &LineItem{}, nil, "LineItems/1-A", `^LineItems/1-A$`, nil},
		{"object literal", map[string]any{"name": "x"}, nil, "", `^[0-9a-f-]{36}$`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(t)
			ctx := context.Background()
			ss := session.Open(s.Store, session.Options{})
			if err := ss.Store(ctx, tt.entity, tt.storeID...); err != nil {
				t.Fatal(err)
			}
			id, _ := ss.GetDocumentID(tt.entity)
			if tt.atStore != "" && id != tt.atStore {
				t.Errorf("at Store: %q, want %q", id, tt.atStore)
			}
			if err := ss.SaveChanges(ctx); err != nil {
				t.Fatal(err)
			}
			id, _ = ss.GetDocumentID(tt.entity)
			if !regexpMatch(tt.afterRe, id) {
				t.Errorf("after SaveChanges: %q, want %s", id, tt.afterRe)
			}
			mustGet(t, s, id)
			// The entity's identity property holds the id (or its value part).
			if m, ok := tt.entity.(map[string]any); ok {
				if m["Id"] != id {
					t.Errorf("literal Id %v", m["Id"])
				}
				return
			}
			v := reflect.ValueOf(tt.entity).Elem()
			if f := v.FieldByName("Id"); f.IsValid() {
				got := f.Interface()
				switch x := got.(type) {
				case string:
					if x != id {
						t.Errorf("Id field %q, want %q", x, id)
					}
				case *string:
					if *x != id {
						t.Errorf("Id field %q, want %q", *x, id)
					}
				case uuid.UUID:
					if !strings.HasSuffix(id, x.String()) {
						t.Errorf("UUID field %s, id %s", x, id)
					}
				default:
					if !strings.HasSuffix(id, "/"+toString(got)) {
						t.Errorf("numeric Id %v, id %s", got, id)
					}
				}
			}
		})
	}
}

func toString(v any) string { return strings.Trim(string(mustJSON(v)), `"`) }

func regexpMatch(re, s string) bool {
	return regexpMust(re).MatchString(s)
}

func TestSessionLoadNumericAndUUID(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	ss := session.Open(s.Store, session.Options{})
	a := &Address{Id: 3, Street: "Main"}
	tk := &Ticket{Title: "t"}
	ss.Store(ctx, a)
	ss.Store(ctx, tk)
	if err := ss.SaveChanges(ctx); err != nil {
		t.Fatal(err)
	}
	tid, _ := ss.GetDocumentID(tk)
	ss2 := session.Open(s.Store, session.Options{})
	var got Address
	if err := ss2.Load(ctx, "addresses/3", &got); err != nil {
		t.Fatal(err)
	}
	if got.Id != 3 || got.Street != "Main" {
		t.Errorf("loaded %+v", got)
	}
	var gt Ticket
	if err := ss2.Load(ctx, tid, &gt); err != nil || gt.Id != tk.Id || gt.Title != "t" {
		t.Errorf("loaded %+v %v", gt, err)
	}
}

func TestSessionAllOrNothing(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	ss := session.Open(s.Store, session.Options{})
	a, b := &Order{Total: 1}, &Company{ID: "companies|"}
	c := &Company{ID: "companies/"}
	ss.Store(ctx, a)
	ss.Store(ctx, b)
	ss.Store(ctx, c)
	s.Idents.Offline = true
	err := ss.SaveChanges(ctx)
	e := wantErr(t, err, core.NumNeedsServer, core.ErrNeedsServer)
	if e.Code != "needs_server" {
		t.Errorf("code %q", e.Code)
	}
	if _, err := s.Get("orders/1-A"); !errors.Is(err, core.ErrNotFound) {
		t.Error("a document of the failed batch was saved")
	}
	if s.NodeSequence() != 0 {
		t.Error("node sequence moved")
	}
	if id, _ := ss.GetDocumentID(b); id != "companies|" {
		t.Errorf("pending id changed to %q", id)
	}
	// Back online, the same session saves everything.
	s.Idents.Offline = false
	if err := ss.SaveChanges(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"orders/1-A", "companies/1", "companies/0000000000000000001-C"} {
		mustGet(t, s, id)
	}
	if b.ID != "companies/1" || c.ID != "companies/0000000000000000001-C" {
		t.Errorf("ids %q %q", b.ID, c.ID)
	}
}

func TestSessionFailureRollsBack(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	ss := session.Open(s.Store, session.Options{UseOptimisticConcurrency: true})
	var o Order
	seed := session.Open(s.Store, session.Options{})
	seed.Store(ctx, &Order{Id: "orders/x", Total: 1})
	seed.SaveChanges(ctx)
	if err := ss.Load(ctx, "orders/x", &o); err != nil {
		t.Fatal(err)
	}
	o.Total = 2
	ss.Store(ctx, &Order{Id: "orders/new"})
	// Someone else changes orders/x meanwhile.
	if _, err := s.Update(ctx, "Orders", "orders/x", []byte(`{"total":5}`), nil); err != nil {
		t.Fatal(err)
	}
	err := ss.SaveChanges(ctx)
	wantErr(t, err, 1200, core.ErrConflict)
	if _, err := s.Get("orders/new"); !errors.Is(err, core.ErrNotFound) {
		t.Error("orders/new saved although the batch failed")
	}
	if decode(t, mustGet(t, s, "orders/x"))["total"] != 5.0 {
		t.Error("orders/x overwritten")
	}
	// Optimistic concurrency also refuses a new entity whose id exists.
	ss2 := session.Open(s.Store, session.Options{UseOptimisticConcurrency: true})
	ss2.Store(ctx, &Order{Id: "orders/x"})
	wantErr(t, ss2.SaveChanges(ctx), 1200, core.ErrConflict)
}

func TestSessionLoadDelete(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	ss := session.Open(s.Store, session.Options{})
	ss.Store(ctx, &Order{Id: "orders/a", Total: 1})
	ss.Store(ctx, &Order{Id: "orders/b", Total: 2})
	ss.SaveChanges(ctx)

	ss = session.Open(s.Store, session.Options{})
	var a, a2 Order
	if err := ss.Load(ctx, "orders/a", &a); err != nil || a.Id != "orders/a" || a.Total != 1 {
		t.Fatalf("Load: %+v %v", a, err)
	}
	if err := ss.Load(ctx, "orders/a", &a2); err != nil || a2.Total != 1 {
		t.Errorf("second Load: %+v %v", a2, err)
	}
	if err := ss.Load(ctx, "orders/none", &a2); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
	if err := ss.Delete(&a); err != nil {
		t.Fatal(err)
	}
	if err := ss.Delete("orders/b"); err != nil {
		t.Fatal(err)
	}
	if err := ss.Delete("orders/never-existed"); err != nil {
		t.Fatal(err)
	}
	if err := ss.Load(ctx, "orders/a", &a2); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("load of a deleted entity: %v", err)
	}
	if err := ss.SaveChanges(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"orders/a", "orders/b"} {
		if _, err := s.Get(id); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("%s not deleted", id)
		}
	}
	// Storing and deleting a new entity before saving writes nothing.
	n := &Order{}
	ss.Store(ctx, n)
	ss.Delete(n)
	ss.SaveChanges(ctx)
	if _, err := s.Get(n.Id); !errors.Is(err, core.ErrNotFound) {
		t.Error("a new entity deleted before save was stored")
	}
	// Unchanged loaded entities are not written again.
	ss = session.Open(s.Store, session.Options{})
	ss.Store(ctx, &Order{Id: "orders/c"})
	ss.SaveChanges(ctx)
	rev := decode(t, mustGet(t, s, "orders/c"))["_rev"]
	ss.SaveChanges(ctx)
	if decode(t, mustGet(t, s, "orders/c"))["_rev"] != rev {
		t.Error("unchanged entity written again")
	}
}

func TestSessionErrors(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	ss := session.Open(s.Store, session.Options{})
	for _, bad := range []any{Order{}, nil, (*Order)(nil), 3, "orders/1"} {
		if err := ss.Store(ctx, bad); !errors.Is(err, core.ErrBadParameter) {
			t.Errorf("Store(%#v): %v", bad, err)
		}
	}
	ss.Store(ctx, &Order{Id: "orders/dup"})
	if err := ss.Store(ctx, &Order{Id: "orders/dup"}); !errors.Is(err, core.ErrUniqueConstraint) {
		t.Errorf("two entities with one id: %v", err)
	}
	if err := ss.Store(ctx, &Order{Id: "bad id"}); !errors.Is(err, core.ErrIllegalKey) {
		t.Errorf("illegal id: %v", err)
	}
	type BadID struct{ Id float64 }
	if err := ss.Store(ctx, &BadID{}); !errors.Is(err, core.ErrBadParameter) {
		t.Errorf("float id: %v", err)
	}
	if err := ss.Delete(&Order{}); !errors.Is(err, core.ErrBadParameter) {
		t.Errorf("delete untracked: %v", err)
	}
	if err := ss.Load(ctx, "orders/dup", Order{}); !errors.Is(err, core.ErrBadParameter) {
		t.Errorf("load into a value: %v", err)
	}
}

// TestSessionSavesDocumentWithoutCollection: a document replicated here
// without @metadata.@collection (written by another kind of client) is
// loaded, changed and saved back as it is, its collection not checked
// again.
func TestSessionSavesDocumentWithoutCollection(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	rev := revision.Encode(1<<40, "B")
	ch := core.RemoteChange{Version: core.Version{ID: "things/1", Rev: rev, Doc: []byte(`{"_id":"things/1","_rev":"` + rev + `","n":1}`)}, Seq: 1}
	if _, err := s.ApplyRemote([]core.RemoteChange{ch}, 1, nil); err != nil {
		t.Fatal(err)
	}
	ss := session.Open(s.Store, session.Options{})
	m := map[string]any{}
	if err := ss.Load(ctx, "things/1", &m); err != nil {
		t.Fatal(err)
	}
	m["n"] = 2.0
	if err := ss.SaveChanges(ctx); err != nil {
		t.Fatalf("SaveChanges: %v", err)
	}
	doc := decode(t, mustGet(t, s, "things/1"))
	if doc["n"] != 2.0 || doc["_rev"] == rev {
		t.Errorf("got %v, want n 2 and a new _rev", doc)
	}
}
