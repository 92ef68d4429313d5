package syncserver_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/hilodb/hilodb/syncserver"
)

// TestArangoFixedAnswers: answers of served routes that differed from
// ArangoDB's.
func TestArangoFixedAnswers(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL + "/_db/fix"
	if st, b := do(t, "POST", base+"/_api/collection", `{"name":"users"}`, nil); st != 200 {
		t.Fatalf("create collection: %d %v", st, b)
	}

	t.Run("a collection without keyOptions has traditional keys", func(t *testing.T) {
		for _, want := range []string{"1", "2"} {
			st, b := do(t, "POST", base+"/_api/document/users", `{"a":1}`, nil)
			if st != 201 || b["_key"] != want {
				t.Fatalf("insert: %d %v, want _key %q", st, b, want)
			}
		}
		st, b := do(t, "POST", base+"/_api/collection", `{"name":"fixed","keyOptions":{"allowUserKeys":false}}`, nil)
		if st != 200 {
			t.Fatalf("create: %d %v", st, b)
		}
		if st, b := do(t, "POST", base+"/_api/document/fixed", `{}`, nil); st != 201 || b["_key"] != "1" {
			t.Fatalf("insert into fixed: %d %v, want _key 1", st, b)
		}
	})
	t.Run("inserting into a missing collection is 404/1203", func(t *testing.T) {
		for _, body := range []string{`{"a":1}`, `[{"a":1}]`} {
			st, b := do(t, "POST", base+"/_api/document/nosuch", body, nil)
			if st != 404 || errNum(b) != 1203 {
				t.Fatalf("insert %s: %d %v, want 404/1203", body, st, b)
			}
		}
		if st, b := do(t, "GET", base+"/_api/document/nosuch/1", "", nil); st != 404 {
			t.Fatalf("nothing was written: %d %v", st, b)
		}
	})
	t.Run("a 412 carries _id, _key and _rev", func(t *testing.T) {
		h := map[string]string{"If-Match": `"stale"`}
		for _, m := range []string{"GET", "PUT", "PATCH", "DELETE"} {
			body := ""
			if m == "PUT" || m == "PATCH" {
				body = `{"b":2}`
			}
			st, b := do(t, m, base+"/_api/document/users/1", body, h)
			if st != 412 || b["_id"] != "users/1" || b["_key"] != "1" || b["_rev"] == nil || b["_rev"] == "" {
				t.Fatalf("%s: %d %v, want 412 with _id, _key, _rev", m, st, b)
			}
		}
	})
	t.Run("remove answers 202, or 200 with waitForSync", func(t *testing.T) {
		if st, b := do(t, "DELETE", base+"/_api/document/users/1", "", nil); st != 202 || b["_key"] != "1" {
			t.Fatalf("remove: %d %v, want 202", st, b)
		}
		if st, b := do(t, "DELETE", base+"/_api/document/users/2?waitForSync=true", "", nil); st != 200 || b["_key"] != "2" {
			t.Fatalf("remove with waitForSync: %d %v, want 200", st, b)
		}
	})
	t.Run("x-arango-queue-time-seconds on every answer", func(t *testing.T) {
		for _, p := range []string{"/_api/version", "/_api/nosuch", "/_api/document/users/404"} {
			res, err := http.Get(base + p)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.Header.Get("X-Arango-Queue-Time-Seconds") == "" {
				t.Fatalf("%s: no x-arango-queue-time-seconds header", p)
			}
		}
	})
	t.Run("version details", func(t *testing.T) {
		st, b := do(t, "GET", base+"/_api/version?details=true", "", nil)
		d, _ := b["details"].(map[string]any)
		if st != 200 || d["role"] != "SINGLE" || d["mode"] != "server" {
			t.Fatalf("version?details=true: %d %v", st, b)
		}
		if _, b := do(t, "GET", base+"/_api/version", "", nil); b["details"] != nil {
			t.Fatalf("details without asking: %v", b)
		}
	})
	t.Run("server role", func(t *testing.T) {
		for _, u := range []string{ts.hs.URL + "/_admin/server/role", base + "/_admin/server/role"} {
			st, b := do(t, "GET", u, "", nil)
			if st != 200 || b["role"] != "SINGLE" {
				t.Fatalf("%s: %d %v", u, st, b)
			}
		}
	})
	t.Run("a zip to foxx is an unknown path", func(t *testing.T) {
		zip := []byte("PK\x03\x04\x14\x00\x00\x00\x08\x00\xff\xfe\x80\x81")
		res, err := http.Post(base+"/_api/foxx?mount=/x", "application/zip", bytes.NewReader(zip))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b map[string]any
		_ = json.NewDecoder(res.Body).Decode(&b)
		if res.StatusCode != 404 || errNum(b) != 1911 {
			t.Fatalf("foxx zip: %d %v, want 404/1911", res.StatusCode, b)
		}
	})
}

// mustCollection creates the collection name through the ArangoDB door at
// base (a server's URL, with /_db/{db} or without).
func mustCollection(t *testing.T, base, name string, h map[string]string) {
	t.Helper()
	if st, b := do(t, "POST", base+"/_api/collection", `{"name":"`+name+`"}`, h); st != 200 {
		t.Fatalf("create collection %s: %d %v", name, st, b)
	}
}
