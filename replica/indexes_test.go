package replica_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hilodb/hilodb/core"
)

// TestIndexDefinitionsReplicate: an index defined on one client is built
// and used by the others after they sync; two clients that name an index
// differently for the same fields converge on the first; a drop travels.
func TestIndexDefinitionsReplicate(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	a, repA := keyed(t, srv.url())
	b, repB := keyed(t, srv.url())
	for i := 0; i < 50; i++ {
		if _, err := a.Insert(ctx, "todos", []byte(fmt.Sprintf(`{"done":%v,"n":%d}`, i%2 == 0, i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := a.CreateIndex(ctx, "todos", core.IndexDef{Name: "by-done", Fields: []string{"done", "n"}}); err != nil {
		t.Fatal(err)
	}
	// b names one for the same fields before it hears of a's.
	if _, _, err := b.CreateIndex(ctx, "todos", core.IndexDef{Name: "done-n", Fields: []string{"done", "n"}}); err != nil {
		t.Fatal(err)
	}
	if err := repA.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := repB.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]*core.Store{"a": a, "b": b} {
		defs, err := st.Indexes("todos")
		if err != nil || len(defs) != 1 || defs[0].Name != "by-done" {
			t.Fatalf("%s: indexes %+v %v, want the first definition, by-done", name, defs, err)
		}
		if d, x, _ := st.PendingIndexes(); len(d)+len(x) != 0 {
			t.Fatalf("%s: pending after sync: %+v %+v", name, d, x)
		}
		res, err := st.FindJSON("todos", []byte(`{"selector":{"done":true},"sort":[{"n":"desc"}],"limit":3}`))
		if err != nil {
			t.Fatal(err)
		}
		if res.Plan.Index != "by-done" || len(res.Docs) != 3 || res.Plan.Examined > 4 {
			t.Fatalf("%s: find used %+v, %d docs; want by-done and 3 docs", name, res.Plan, len(res.Docs))
		}
	}
	// A drop on b reaches a at its next sync.
	if err := b.DeleteIndex(ctx, "todos", "by-done"); err != nil {
		t.Fatal(err)
	}
	if _, err := repB.Push(ctx); err != nil {
		t.Fatal(err)
	}
	if err := repA.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if defs, _ := a.Indexes("todos"); len(defs) != 0 {
		t.Fatalf("a after the drop: %+v", defs)
	}
}
