package syncserver_test

import (
	"testing"

	"github.com/hilodb/hilodb/syncserver"
)

func TestCollectionDefinitions(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	if got := r.call(`{"id":1,"op":"collection.list"}`); errCode(got) != "hello_required" {
		t.Fatalf("collection.list before hello: %v", got)
	}
	r.call(`{"id":2,"op":"hello","db":"shop","node":""}`)
	got := r.call(`{"id":3,"op":"collection.define","name":"users","keyOptions":{"type":"autoincrement","increment":5,"offset":10}}`)
	col, _ := got["collection"].(map[string]any)
	ko, _ := col["keyOptions"].(map[string]any)
	if got["created"] != true || col["name"] != "users" || ko["type"] != "autoincrement" || ko["increment"] != 5.0 || ko["offset"] != 10.0 {
		t.Fatalf("first define: %v", got)
	}
	// The first definition wins: a second one gets it back.
	got = r.call(`{"id":4,"op":"collection.define","name":"users","keyOptions":{"type":"padded"}}`)
	col, _ = got["collection"].(map[string]any)
	ko, _ = col["keyOptions"].(map[string]any)
	if got["created"] != false || ko["type"] != "autoincrement" {
		t.Fatalf("second define: %v", got)
	}
	r.call(`{"id":5,"op":"collection.define","name":"accounts"}`)
	for _, tc := range []struct{ req, code string }{
		{`{"id":6,"op":"collection.define","name":"no/slash"}`, "illegal_name"},
		{`{"id":7,"op":"collection.define","name":""}`, "illegal_name"},
		{`{"id":8,"op":"collection.define","name":"x","keyOptions":{"type":"nonsense"}}`, "invalid_key_generator"},
		{`{"id":9,"op":"collection.define","name":"x","keyOptions":{"type":"autoincrement","increment":70000}}`, "invalid_key_generator"},
		{`{"id":10,"op":"collection.define","name":"x","keyOptions":{"typo":"padded"}}`, "invalid_key_generator"},
		{`{"id":11,"op":"collection.define","name":7}`, "bad_request"},
	} {
		if got := r.call(tc.req); errCode(got) != tc.code {
			t.Errorf("%s: %v, want %s", tc.req, got, tc.code)
		}
	}
	// Listed by name, refused ones absent; another database sees none.
	got = r.call(`{"id":12,"op":"collection.list"}`)
	list, _ := got["collections"].([]any)
	if len(list) != 2 || list[0].(map[string]any)["name"] != "accounts" || list[1].(map[string]any)["name"] != "users" {
		t.Fatalf("collection.list: %v", got)
	}
	// Kept across a restart.
	ts.restart()
	r = dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	if got := r.call(`{"id":2,"op":"collection.list"}`); len(got["collections"].([]any)) != 2 {
		t.Errorf("after restart: %v", got)
	}
	other := dialRaw(t, ts)
	other.call(`{"id":1,"op":"hello","db":"shop2","node":""}`)
	if got := other.call(`{"id":2,"op":"collection.list"}`); len(got["collections"].([]any)) != 0 {
		t.Errorf("another database: %v", got)
	}
}
