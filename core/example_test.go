package core_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/keygen"
	"github.com/hilodb/hilodb/internal/storetest"
)

// exampleStore opens a store whose HiLo ranges come from an in-memory
// source standing in for the sync server (tag "A"); this node is "C".
var exampleStore = storetest.ExampleStore

func ExampleStore_Insert() {
	s := exampleStore()
	defer s.Close()
	ctx := context.Background()
	for _, doc := range []string{`{}`, `{"_key":"alice"}`, `{"_id":"companies/"}`, `{"_id":"companies|"}`} {
		r, _ := s.Insert(ctx, "companies", []byte(doc), nil)
		fmt.Println(r.ID)
	}
	// Output:
	// companies/1-A
	// companies/alice
	// companies/0000000000000000001-C
	// companies/1
}

func ExampleStore_InsertMany() {
	s := exampleStore()
	defer s.Close()
	rs, _ := s.InsertMany(context.Background(), "users", [][]byte{
		[]byte(`{"_key":"ann"}`),
		[]byte(`{"_key":"no spaces"}`),
		[]byte(`{"_key":"ann"}`),
	}, &core.WriteOptions{Silent: true})
	for _, r := range rs {
		if r.Err != nil {
			fmt.Println(r.Err.Num, r.Err.Code)
			continue
		}
		out, _ := json.Marshal(r)
		fmt.Println(string(out))
	}
	// Output:
	// {}
	// 1221 illegal_key
	// 1210 unique_constraint
}

func ExampleStore_Update() {
	s := exampleStore()
	defer s.Close()
	ctx := context.Background()
	s.Insert(ctx, "users", []byte(`{"_key":"ann","age":30,"tags":{"a":1}}`), nil)
	r, _ := s.Update(ctx, "users", "ann", []byte(`{"age":null,"tags":{"b":2}}`),
		&core.WriteOptions{KeepNull: core.Ptr(false), ReturnNew: true})
	var doc map[string]any
	json.Unmarshal(r.New, &doc)
	fmt.Println(doc["age"], doc["tags"], r.OldRev != "")
	// Output: <nil> map[a:1 b:2] true
}

func ExampleStore_CreateCollection() {
	s := exampleStore()
	defer s.Close()
	ctx := context.Background()
	s.CreateCollection("invoices", core.CollectionOptions{KeyOptions: keygen.Options{
		Type: keygen.Autoincrement, Offset: core.Ptr(100.0), Increment: core.Ptr(10.0),
	}})
	for range 3 {
		r, _ := s.Insert(ctx, "invoices", []byte(`{}`), nil)
		fmt.Println(r.ID)
	}
	err := s.CreateCollection("bad", core.CollectionOptions{KeyOptions: keygen.Options{
		Type: keygen.Autoincrement, Increment: core.Ptr(70000.0),
	}})
	fmt.Println(core.AsError(err).Num, err)
	// Output:
	// invoices/100
	// invoices/110
	// invoices/120
	// 1232 increment value must be greater than zero and smaller than 65536
}

func ExampleStore_SeedIdentityFor() {
	s := exampleStore()
	defer s.Close()
	ctx := context.Background()
	v, _ := s.SeedIdentityFor(ctx, "products", 1994, false)
	fmt.Println(v)
	v, _ = s.SeedIdentityFor(ctx, "products", 5, false) // raise-only
	fmt.Println(v)
	n, _ := s.NextIdentityFor(ctx, "products")
	fmt.Println(n)
	r, _ := s.Insert(ctx, "products", []byte(`{"_id":"products|"}`), nil)
	fmt.Println(r.ID)
	// Output:
	// 1994
	// 1994
	// 1995
	// products/1996
}

func ExampleParseID() {
	prefix, key, _ := core.ParseID("orders/1-A", "/")
	fmt.Println(prefix, key)
	_, _, err := core.ParseID("orders/a b", "/")
	fmt.Println(core.AsError(err).Code)
	// Output:
	// orders 1-A
	// illegal_key
}

func ExampleStore_Find() {
	s := exampleStore()
	defer s.Close()
	ctx := context.Background()
	_, _, _ = s.CreateIndex(ctx, "todos", core.IndexDef{Fields: []string{"done", "created"}})
	for i, title := range []string{"milk", "bread", "tea", "jam"} {
		doc := fmt.Sprintf(`{"_key":%q,"done":%v,"created":%d}`, title, i == 1, i)
		_, _ = s.Insert(ctx, "todos", []byte(doc), nil)
	}
	q, _ := core.ParseQuery([]byte(`{"selector":{"done":false},"sort":[{"created":"desc"}],"limit":2,"fields":["_key"]}`))
	res, _ := s.Find("todos", q)
	for _, d := range res.Docs {
		fmt.Println(string(d))
	}
	fmt.Println(res.Plan.Index, res.Plan.Examined)
	// Output:
	// {"_key":"jam"}
	// {"_key":"tea"}
	// idx-done-created 3
}

func ExampleStore_AppendFind() {
	s := exampleStore()
	defer s.Close()
	ctx := context.Background()
	_, _, _ = s.CreateIndex(ctx, "todos", core.IndexDef{Fields: []string{"created"}})
	for i, title := range []string{"milk", "bread", "tea"} {
		_, _ = s.Insert(ctx, "todos", []byte(fmt.Sprintf(`{"_key":%q,"created":%d}`, title, i)), nil)
	}
	q, _ := core.ParseQuery([]byte(`{"selector":{"created":{"$gte":1}},"fields":["_key"]}`))
	page, plan, _ := s.AppendFind(nil, "todos", q)
	fmt.Println(string(page))
	fmt.Println(plan.Index, plan.Covered)
	// Output:
	// {"docs":[{"_key":"bread"},{"_key":"tea"}]}
	// idx-created true
}

func ExampleStore_WatchQuery() {
	s := exampleStore()
	defer s.Close()
	ctx := context.Background()
	q, _ := core.ParseQuery([]byte(`{"selector":{"done":false},"sort":["_key"],"fields":["_key"]}`))
	results := make(chan core.LiveResult, 4)
	stop, _ := s.WatchQuery("todos", q, func(r core.LiveResult) { results <- r })
	defer stop()
	fmt.Println(len((<-results).Docs)) // the first result
	_, _ = s.Insert(ctx, "todos", []byte(`{"_key":"milk","done":false}`), nil)
	r := <-results
	fmt.Println(string(r.Docs[0]), r.Changes[0].Kind, r.Reran)
	// Output:
	// 0
	// {"_key":"milk"} added false
}
