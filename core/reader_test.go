package core_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/hilodb/hilodb/core"
)

// TestReaderAnswersAsTheStore reads documents through a Reader over a
// store's items and through the store: the same documents, the same
// errors.
func TestReaderAnswersAsTheStore(t *testing.T) {
	st, err := core.Open(":memory:", core.Options{Node: "T"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	for _, doc := range []struct{ coll, body string }{
		{"orders", `{"_key":"1","item":"tea"}`},
		{"orders", `{"_key":"2","item":"coffee"}`},
		{"customers", `{"_key":"1","name":"x"}`},
	} {
		if _, err := st.Insert(ctx, doc.coll, []byte(doc.body), nil); err != nil {
			t.Fatal(err)
		}
	}
	items := map[string]string{}
	if err := st.Items(nil, func(key, value string) error {
		items[key] = value
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r := core.NewReader(core.Options{}, func(key string) (string, bool, error) {
		v, ok := items[key]
		return v, ok, nil
	})
	for _, tt := range []struct{ coll, selector string }{
		{"orders", "1"},
		{"orders", "orders/2"},
		{"customers", "1"},
		{"orders", "3"},           // missing
		{"customers", "2"},        // missing
		{"customers", "orders/1"}, // in another collection
		{"orders", ""},            // empty key
		{"orders", "a b"},         // illegal key
		{"9orders", "1"},          // illegal collection name
	} {
		want, wantErr := st.Document(tt.coll, tt.selector)
		got, gotErr := r.Document(tt.coll, tt.selector)
		if !bytes.Equal(got, want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || num(gotErr) != num(wantErr) {
			t.Errorf("Document(%q, %q): reader %s, %v; store %s, %v", tt.coll, tt.selector, got, gotErr, want, wantErr)
		}
	}
	for _, id := range []string{"orders/1", "customers/1", "orders/9", ""} {
		want, wantErr := st.Get(id)
		got, gotErr := r.Get(id)
		if !bytes.Equal(got, want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("Get(%q): reader %s, %v; store %s, %v", id, got, gotErr, want, wantErr)
		}
	}
	if _, err := r.Document("orders", "1"); err != nil {
		t.Fatalf("an existing document: %v", err)
	}
}

// num is err's error number, 0 for none.
func num(err error) int {
	if err == nil {
		return 0
	}
	return core.AsError(err).Num
}
