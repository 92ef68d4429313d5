package syncserver_test

import (
	"fmt"
	"testing"

	"github.com/hilodb/hilodb/syncserver"
)

// TestArangoCollectionManagement: count, properties, truncate, rename and
// drop through the ArangoDB door.
func TestArangoCollectionManagement(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL + "/_db/m"
	mustCollection(t, base, "c", nil)
	for i := 0; i < 3; i++ {
		if st, b := do(t, "POST", base+"/_api/document/c", `{"v":1}`, nil); st != 201 {
			t.Fatalf("insert: %d %v", st, b)
		}
	}
	steps := []struct {
		name, method, path, body string
		status                   int
		check                    func(b map[string]any) bool
	}{
		{"count", "GET", "/_api/collection/c/count", "", 200, func(b map[string]any) bool { return b["count"] == float64(3) }},
		{"properties", "GET", "/_api/collection/c/properties", "", 200, func(b map[string]any) bool { return b["waitForSync"] == false }},
		{"change properties", "PUT", "/_api/collection/c/properties", `{"waitForSync":true}`, 200, func(b map[string]any) bool { return b["waitForSync"] == true }},
		{"changed", "GET", "/_api/collection/c", "", 200, func(b map[string]any) bool { return b["waitForSync"] == true }},
		{"an unchangeable property", "PUT", "/_api/collection/c/properties", `{"keyOptions":{}}`, 400, nil},
		{"rename with documents", "PUT", "/_api/collection/c/rename", `{"name":"d"}`, 400, nil},
		{"revision", "GET", "/_api/collection/c/revision", "", 200, func(b map[string]any) bool { return b["revision"] != "0" }},
		{"truncate", "PUT", "/_api/collection/c/truncate", "", 200, nil},
		{"count after truncate", "GET", "/_api/collection/c/count", "", 200, func(b map[string]any) bool { return b["count"] == float64(0) }},
		{"a truncated document", "GET", "/_api/document/c/1", "", 404, nil},
		{"rename", "PUT", "/_api/collection/c/rename", `{"name":"d"}`, 200, func(b map[string]any) bool { return b["name"] == "d" && b["waitForSync"] == true }},
		{"the old name", "GET", "/_api/collection/c", "", 404, func(b map[string]any) bool { return errNum(b) == 1203 }},
		{"write to the new name", "POST", "/_api/document/d", `{"_key":"k"}`, 201, nil},
		{"drop", "DELETE", "/_api/collection/d", "", 200, nil},
		{"dropped", "GET", "/_api/collection/d", "", 404, func(b map[string]any) bool { return errNum(b) == 1203 }},
		{"its documents", "GET", "/_api/document/d/k", "", 404, nil},
		{"drop again", "DELETE", "/_api/collection/d", "", 404, func(b map[string]any) bool { return errNum(b) == 1203 }},
	}
	for _, s := range steps {
		st, b := do(t, s.method, base+s.path, s.body, nil)
		if st != s.status || s.check != nil && !s.check(b) {
			t.Fatalf("%s: %d %v, want %d", s.name, st, b, s.status)
		}
	}
}

// TestArangoIndexesAreHiloIndexes: /_api/index defines, lists, reads and
// drops the indexes the websocket's clients see.
func TestArangoIndexesAreHiloIndexes(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL + "/_db/ix"
	mustCollection(t, base, "c", nil)
	st, b := do(t, "POST", base+"/_api/index?collection=c", `{"type":"persistent","fields":["a.b","c"]}`, nil)
	if st != 201 || b["isNewlyCreated"] != true || b["type"] != "persistent" {
		t.Fatalf("create: %d %v", st, b)
	}
	id := b["id"].(string)
	if st, b := do(t, "POST", base+"/_api/index?collection=c", `{"type":"persistent","fields":["a.b","c"]}`, nil); st != 200 || b["isNewlyCreated"] != false || b["id"] != id {
		t.Fatalf("again: %d %v", st, b)
	}
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"ix","node":""}`)
	got := r.call(`{"id":2,"op":"index.list"}`)
	if fmt.Sprint(got["indexes"]) != "[map[collection:c indexes:[map[fields:[a.b c] name:"+b["name"].(string)+"]]]]" {
		t.Fatalf("the websocket's list: %v", got)
	}
	if st, b := do(t, "GET", base+"/_api/index?collection=c", "", nil); st != 200 || len(b["indexes"].([]any)) != 2 {
		t.Fatalf("list: %d %v", st, b)
	}
	if st, b := do(t, "GET", base+"/_api/index/"+id, "", nil); st != 200 || b["id"] != id {
		t.Fatalf("read: %d %v", st, b)
	}
	for _, bad := range []string{`{"type":"geo","fields":["p"]}`, `{"type":"persistent","fields":["a"],"unique":true}`, `{"type":"persistent","fields":[]}`} {
		if st, b := do(t, "POST", base+"/_api/index?collection=c", bad, nil); st != 400 {
			t.Fatalf("%s: %d %v, want 400", bad, st, b)
		}
	}
	if st, b := do(t, "POST", base+"/_api/index?collection=nosuch", `{"type":"persistent","fields":["a"]}`, nil); st != 404 || errNum(b) != 1203 {
		t.Fatalf("a missing collection: %d %v", st, b)
	}
	if st, b := do(t, "DELETE", base+"/_api/index/"+id, "", nil); st != 200 || b["id"] != id {
		t.Fatalf("drop: %d %v", st, b)
	}
	if st, b := do(t, "GET", base+"/_api/index/"+id, "", nil); st != 404 || errNum(b) != 1212 {
		t.Fatalf("dropped: %d %v", st, b)
	}
	if got := r.call(`{"id":3,"op":"index.list"}`); fmt.Sprint(got["indexes"]) != "[]" {
		t.Fatalf("the websocket's list after the drop: %v", got)
	}
}

// TestArangoImport: each body type, onDuplicate, and complete.
func TestArangoImport(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL + "/_db/imp"
	mustCollection(t, base, "c", nil)
	cases := []struct {
		name, query, body string
		want              string // created updated ignored errors empty
	}{
		{"documents", "type=documents", "{\"_key\":\"a\",\"v\":1}\n\n{\"_key\":\"b\",\"v\":2}\n", "2 0 0 0 1"},
		{"array", "type=list", `[{"_key":"c"},{"_key":"d"}]`, "2 0 0 0 0"},
		{"auto", "type=auto", `[{"_key":"e"}]`, "1 0 0 0 0"},
		{"tuples", "type=", "[\"_key\",\"v\"]\r\n[\"f\",6]\r\n[\"g\"]\r\n", "1 0 0 1 0"},
		{"a duplicate is an error", "type=documents", `{"_key":"a","v":9}`, "0 0 0 1 0"},
		{"onDuplicate=update", "type=documents&onDuplicate=update", `{"_key":"a","w":9}`, "0 1 0 0 0"},
		{"onDuplicate=ignore", "type=documents&onDuplicate=ignore", `{"_key":"a","v":0}`, "0 0 1 0 0"},
	}
	for _, tc := range cases {
		st, b := do(t, "POST", base+"/_api/import?collection=c&"+tc.query, tc.body, nil)
		got := fmt.Sprint(b["created"], " ", b["updated"], " ", b["ignored"], " ", b["errors"], " ", b["empty"])
		if st != 201 || got != tc.want {
			t.Fatalf("%s: %d %v, want %s", tc.name, st, b, tc.want)
		}
	}
	if _, b := do(t, "GET", base+"/_api/document/c/a", "", nil); b["v"] != float64(1) || b["w"] != float64(9) {
		t.Fatalf("after update: %v", b)
	}
	if st, b := do(t, "POST", base+"/_api/import?collection=c&type=documents&complete=true", "{\"_key\":\"h\"}\n{\"_key\":\"a\"}", nil); st != 409 {
		t.Fatalf("complete with a duplicate: %d %v", st, b)
	}
	if st, _ := do(t, "GET", base+"/_api/document/c/h", "", nil); st != 404 {
		t.Fatalf("complete=true wrote part of an import: %d", st)
	}
	if st, b := do(t, "POST", base+"/_api/import?collection=nosuch&type=documents", `{}`, nil); st != 404 || errNum(b) != 1203 {
		t.Fatalf("a missing collection: %d %v", st, b)
	}
}

// TestArangoDatabases: create, list, current, drop; a dropped database's
// documents are gone and its keys are not handed out again.
func TestArangoDatabases(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL
	if st, b := do(t, "POST", base+"/_api/database", `{"name":"shop"}`, nil); st != 201 || b["result"] != true {
		t.Fatalf("create: %d %v", st, b)
	}
	if st, b := do(t, "POST", base+"/_api/database", `{"name":"shop"}`, nil); st != 409 || errNum(b) != 1207 {
		t.Fatalf("create again: %d %v", st, b)
	}
	if st, b := do(t, "POST", base+"/_api/database", `{"name":"_bad"}`, nil); st != 400 || errNum(b) != 1208 {
		t.Fatalf("an illegal name: %d %v", st, b)
	}
	_, b := do(t, "GET", base+"/_api/database", "", nil)
	if fmt.Sprint(b["result"]) != "[_system shop]" {
		t.Fatalf("list: %v", b)
	}
	if st, b := do(t, "GET", base+"/_db/shop/_api/database/current", "", nil); st != 200 || b["result"].(map[string]any)["name"] != "shop" {
		t.Fatalf("current: %d %v", st, b)
	}
	if st, b := do(t, "GET", base+"/_db/none/_api/database/current", "", nil); st != 404 || errNum(b) != 1228 {
		t.Fatalf("current of a missing database: %d %v", st, b)
	}
	mustCollection(t, base+"/_db/shop", "c", nil)
	_, first := do(t, "POST", base+"/_db/shop/_api/document/c", `{}`, nil)
	if st, b := do(t, "DELETE", base+"/_api/database/shop", "", nil); st != 200 || b["result"] != true {
		t.Fatalf("drop: %d %v", st, b)
	}
	if st, b := do(t, "GET", base+"/_db/shop/_api/database/current", "", nil); st != 404 || errNum(b) != 1228 {
		t.Fatalf("current after the drop: %d %v", st, b)
	}
	if st, _ := do(t, "GET", base+"/_db/shop/_api/document/"+first["_id"].(string), "", nil); st != 404 {
		t.Fatalf("a dropped database's document: %d", st)
	}
	if st, b := do(t, "DELETE", base+"/_api/database/_system", "", nil); st != 403 {
		t.Fatalf("drop _system: %d %v", st, b)
	}
	do(t, "POST", base+"/_api/database", `{"name":"shop"}`, nil)
	mustCollection(t, base+"/_db/shop", "c", nil)
	if _, again := do(t, "POST", base+"/_db/shop/_api/document/c", `{}`, nil); again["_key"] == first["_key"] {
		t.Fatalf("key %v handed out twice", again["_key"])
	}
}
