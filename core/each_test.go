package core_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hilodb/hilodb/core"
)

func TestEachDocument(t *testing.T) {
	st, err := core.Open(":memory:", core.Options{Node: "A"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	want := map[string]string{}
	for _, c := range []string{"orders", "people", "b"} {
		for _, k := range []string{"k1", "k2"} {
			out, err := st.Put(ctx, c, []byte(`{"_key":"`+k+`"}`))
			if err != nil {
				t.Fatal(err)
			}
			want[c+"/"+k] = string(out)
		}
	}
	if err := st.Delete("people/k1"); err != nil {
		t.Fatal(err)
	}
	delete(want, "people/k1")
	if err := st.CreateCollection("things", core.CollectionOptions{}); err != nil {
		t.Fatal(err)
	}

	got := map[string]string{}
	var order []string
	if err := st.EachDocument("", func(id, text string) bool {
		got[id] = text
		order = append(order, id)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("got %d documents %v, want %d", len(got), order, len(want))
	}
	for id, text := range want {
		if got[id] != text {
			t.Errorf("%s: got %q, want %q", id, got[id], text)
		}
	}
	for i := 1; i < len(order); i++ {
		if order[i-1] >= order[i] {
			t.Errorf("not in id order: %v", order)
		}
	}

	n := 0
	if err := st.EachDocument("", func(string, string) bool { n++; return n < 2 }); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("fn returning false: called %d times, want 2", n)
	}

	// Part by part, each after the last id of the one before.
	var parts []string
	after := ""
	for {
		var part []string
		if err := st.EachDocument(after, func(id, _ string) bool {
			part = append(part, id)
			return len(part) < 2
		}); err != nil {
			t.Fatal(err)
		}
		if len(part) == 0 {
			break
		}
		parts = append(parts, part...)
		after = part[len(part)-1]
	}
	if fmt.Sprint(parts) != fmt.Sprint(order) {
		t.Errorf("part by part: %v, want %v", parts, order)
	}
}
