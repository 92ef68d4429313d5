package syncserver_test

import (
	"fmt"
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
	// A pull that asks for them gets the same list with its last page,
	// [] where there are none; a page with more to come, or a pull that
	// does not ask, carries none.
	if got := other.call(`{"id":3,"op":"pull","since":0,"collections":true}`); got["more"] != false || fmt.Sprint(got["collections"]) != "[]" {
		t.Errorf("pull with collections, none kept: %v", got)
	}
	for i := range 3 {
		r.call(fmt.Sprintf(`{"id":%d,"op":"push","changes":[{"id":"users/%d","baseRev":"","rev":"_mAAAAAAA-BT","doc":{}}]}`, 10+i, i))
	}
	page := r.call(`{"id":20,"op":"pull","since":0,"limit":1,"collections":true}`)
	if _, has := page["collections"]; page["more"] != true || has {
		t.Errorf("a page with more to come: %v", page)
	}
	last := r.call(fmt.Sprintf(`{"id":21,"op":"pull","since":%v,"limit":10,"collections":true}`, page["last"]))
	list, _ = last["collections"].([]any)
	if last["more"] != false || len(list) != 2 || list[1].(map[string]any)["name"] != "users" ||
		list[1].(map[string]any)["keyOptions"].(map[string]any)["type"] != "autoincrement" {
		t.Errorf("the last page: %v", last)
	}
	if got := r.call(`{"id":22,"op":"pull","since":0}`); got["collections"] != nil {
		t.Errorf("a pull that did not ask: %v", got)
	}
	if got := r.call(`{"id":23,"op":"pull","since":0,"collections":"yes"}`); errCode(got) != "bad_request" {
		t.Errorf("collections not a boolean: %v", got)
	}
}
