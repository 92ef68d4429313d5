package session_test

import (
	"context"
	"fmt"

	"github.com/hilodb/hilodb/core/session"
	"github.com/hilodb/hilodb/internal/storetest"
)

// exampleStore opens a store whose HiLo ranges come from an in-memory
// source standing in for the sync server (tag "A"); this node is "C".
var exampleStore = storetest.ExampleStore

func ExampleSession() {
	s := exampleStore()
	defer s.Close()
	ctx := context.Background()

	type Order struct {
		Id    string
		Total float64
	}
	ss := session.Open(s, session.Options{})
	order := &Order{Total: 12}
	ss.Store(ctx, order) // HiLo id now
	fmt.Println(order.Id)
	company := &Company{ID: "companies|", Name: "acme"}
	ss.Store(ctx, company) // identity at SaveChanges
	id, _ := ss.GetDocumentID(company)
	fmt.Println(id)
	if err := ss.SaveChanges(ctx); err != nil {
		fmt.Println(err)
	}
	fmt.Println(company.ID)

	var loaded Order
	session.Open(s, session.Options{}).Load(ctx, "orders/1-A", &loaded)
	fmt.Println(loaded.Total)
	// Output:
	// orders/1-A
	// companies|
	// companies/1
	// 12
}
