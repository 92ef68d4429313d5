package main

import (
	"encoding/json"
	"testing"
)

func TestParseRoute(t *testing.T) {
	tests := []struct {
		method, path string
		want         route
		ok           bool
	}{
		{"POST", "/docs/orders", route{kind: "docs", coll: "orders"}, true},
		{"GET", "/docs/orders/1-A", route{kind: "doc", key: "orders/1-A"}, true},
		{"GET", "/docs/orders%2F1-A", route{kind: "doc", key: "orders/1-A"}, true},
		{"GET", "/docs/", route{}, false},
		{"GET", "/_api/document/orders/k1", route{kind: "arango", coll: "orders", key: "k1"}, true},
		{"POST", "/_api/document/orders", route{kind: "arango", coll: "orders"}, true},
		{"POST", "/_db/shop/_api/document/orders", route{kind: "arango", coll: "orders"}, true},
		{"GET", "/_db/shop/_api/version", route{kind: "version"}, true},
		{"GET", "/_api/document/orders/a/b", route{}, false},
		{"GET", "/_api/document/", route{}, false},
		{"GET", "/_db/shop", route{}, false},
		{"GET", "/elsewhere", route{}, false},
		{"GET", "/docs/%zz", route{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			got, ok := parseRoute(tt.method, tt.path)
			if ok != tt.ok || got != tt.want {
				t.Errorf("parseRoute = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestArangoView(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":1,"@metadata":{"@collection":"c"}}`, `{"a":1}`},
		{`{"@metadata":{"@collection":"c"},"a":1}`, `{"a":1}`},
		{`{"@metadata":{"x":[1,2]}}`, `{}`},
		{`{"a":{"@metadata":1}}`, `{"a":{"@metadata":1}}`},
		{`{"a":1}`, `{"a":1}`},
		{``, ``},
	}
	for _, tt := range tests {
		if got := string(arangoView([]byte(tt.in))); got != tt.want {
			t.Errorf("arangoView(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func FuzzArangoView(f *testing.F) {
	f.Add([]byte(`{"a":1,"@metadata":{"@collection":"c"}}`))
	f.Add([]byte(`{ "@metadata" : {} , "b":[1]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		out := arangoView(doc)
		if json.Valid(doc) && !json.Valid(out) {
			t.Fatalf("arangoView(%s) = %s: not JSON", doc, out)
		}
	})
}

func TestArangoOptions(t *testing.T) {
	o, wait, _, bad := arangoOptions(&request{query: "returnNew=true&waitForSync=true&overwrite=true", ifMatch: `"r1"`})
	if bad != nil || !o.ReturnNew || !wait || o.OverwriteMode != "replace" || o.IfMatch != "r1" {
		t.Errorf("options = %+v, wait %v, bad %v", o, wait, bad)
	}
	for _, q := range []string{"returnNew=yes", "overwriteMode=sometimes", "%zz"} {
		if _, _, _, bad := arangoOptions(&request{query: q}); bad == nil || bad.status != 400 {
			t.Errorf("query %q: want a 400, got %+v", q, bad)
		}
	}
}
