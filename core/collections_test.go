package core_test

import (
	"context"
	"errors"
	"regexp"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/keygen"
)

func TestCollectionDefinitionsToAndFromTheServer(t *testing.T) {
	st := exampleStore()
	defer st.Close()
	trad := core.CollectionOptions{KeyOptions: keygen.Options{Type: keygen.Traditional}}
	if err := st.CreateCollection("users", trad); err != nil {
		t.Fatal(err)
	}
	pend, err := st.PendingCollections()
	if err != nil || len(pend) != 1 || pend[0].Name != "users" || pend[0].KeyOptions.Type != keygen.Traditional {
		t.Fatalf("PendingCollections() = %+v, %v", pend, err)
	}
	// The server had another definition first: it wins, and keys follow it.
	padded := core.CollectionDef{Name: "users", CollectionOptions: core.CollectionOptions{KeyOptions: keygen.Options{Type: keygen.Padded}}}
	if err := st.AdoptCollection(padded); err != nil {
		t.Fatal(err)
	}
	if pend, _ := st.PendingCollections(); len(pend) != 0 {
		t.Errorf("still pending after adopt: %+v", pend)
	}
	doc, err := st.Insert(context.Background(), "users", []byte(`{"name":"ann"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^users/[0-9a-f]{16}$`).MatchString(doc.ID) {
		t.Errorf("key after adopting padded: %s", doc.ID)
	}
	// A definition only the server had arrives the same way.
	auto := core.CollectionDef{Name: "events", CollectionOptions: core.CollectionOptions{KeyOptions: keygen.Options{Type: keygen.Autoincrement, Increment: core.Ptr(5.0)}}}
	if err := st.AdoptCollection(auto); err != nil {
		t.Fatal(err)
	}
	all, err := st.Collections()
	if err != nil || len(all) != 2 || all[0].Name != "events" || all[1].Name != "users" || all[1].KeyOptions.Type != keygen.Padded {
		t.Fatalf("Collections() = %+v, %v", all, err)
	}
	// Bad definitions from anywhere change nothing.
	var e *core.Error
	for _, bad := range []core.CollectionDef{
		{Name: "no/slash"},
		{Name: "users", CollectionOptions: core.CollectionOptions{KeyOptions: keygen.Options{Type: "nonsense"}}},
	} {
		if err := st.AdoptCollection(bad); !errors.As(err, &e) {
			t.Errorf("AdoptCollection(%+v) = %v, want a *core.Error", bad, err)
		}
	}
	if o, _ := st.CollectionInfo("users"); o.KeyOptions.Type != keygen.Padded {
		t.Errorf("a refused definition changed users: %+v", o)
	}
}
