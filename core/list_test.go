package core_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hilodb/hilodb/core"
)

func TestList(t *testing.T) {
	st, err := core.Open(":memory:", core.Options{Node: "T"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	for i := range 25 {
		if _, err := st.Put(ctx, "orders", []byte(fmt.Sprintf(`{"_key":"k%02d"}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	st.Put(ctx, "ordersx", []byte(`{"_key":"not-mine"}`))
	st.Put(ctx, "users", []byte(`{"_key":"u1"}`))
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		p, err := st.List("orders", after, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range p.Docs {
			got = append(got, string(d[len(`{"_id":"`):len(`{"_id":"orders/k00`)]))
		}
		if p.Next == "" {
			if pages != 2 {
				t.Errorf("%d pages, want 3", pages+1)
			}
			break
		}
		after = p.Next
	}
	if len(got) != 25 || got[0] != "orders/k00" || got[24] != "orders/k24" {
		t.Errorf("listed %v", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("not in key order: %v", got)
		}
	}
	if n, err := st.Count("orders"); err != nil || n != 25 {
		t.Errorf("Count(orders) = %d, %v; want 25", n, err)
	}
	if n, _ := st.Count("nothing"); n != 0 {
		t.Errorf("Count(nothing) = %d", n)
	}
	// An exact page leaves no cursor.
	if p, _ := st.List("users", "", 1); len(p.Docs) != 1 || p.Next != "" {
		t.Errorf("users: %d docs, next %q", len(p.Docs), p.Next)
	}
	for _, tt := range []struct {
		coll, after string
		limit       int
	}{{"orders", "", -1}, {"orders", "", core.MaxListLimit + 1}, {"orders", "users/u1", 5}, {"", "", 5}, {"bad name!", "", 5}} {
		_, err := st.List(tt.coll, tt.after, tt.limit)
		var e *core.Error
		if !errors.As(err, &e) {
			t.Errorf("List(%q, %q, %d): %v, want a core error", tt.coll, tt.after, tt.limit, err)
		}
	}
}
