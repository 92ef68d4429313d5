package syncserver_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hilodb/hilodb/syncserver"
)

// cursorRows reads a cursor answer's result as JSON texts.
func cursorRows(t *testing.T, b map[string]any) []string {
	t.Helper()
	rows, ok := b["result"].([]any)
	if !ok {
		t.Fatalf("no result in %v", b)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprint(r)
	}
	return out
}

func TestArangoCursorQueries(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL + "/_db/q"
	mustCollection(t, base, "users", nil)
	var docs []string
	for i := 1; i <= 25; i++ {
		docs = append(docs, fmt.Sprintf(`{"_key":"u%02d","n":%d,"name":"user %d","team":"%s","addr":{"city":"%s"}}`,
			i, i, i, []string{"red", "blue"}[i%2], []string{"Oslo", "Rome", "Lima"}[i%3]))
	}
	if st, b := do(t, "POST", base+"/_api/document/users", "["+strings.Join(docs, ",")+"]", nil); st != 202 {
		t.Fatalf("insert: %d %v", st, b)
	}
	cases := []struct {
		name, body string
		want       string // the rows, joined by |
	}{
		{"filter sort limit", `{"query":"FOR u IN users FILTER u.n > 20 SORT u.n DESC LIMIT 3 RETURN u.n"}`, `25|24|23`},
		{"and, or, not, in, like", `{"query":"FOR u IN users FILTER (u.team == 'red' AND u.n IN [2, 4, 5]) OR (NOT (u.n >= 3) AND u.name LIKE 'user _') SORT u.n RETURN u._key"}`, `u01|u02|u04`},
		{"not in, !=, nested path", `{"query":"FOR u IN users FILTER u.addr.city != 'Oslo' AND u.n NOT IN [1, 2, 4] AND u.n <= 8 SORT u.n RETURN u.n"}`, `5|7|8`},
		{"object return", `{"query":"FOR u IN users FILTER u._key == 'u07' RETURN {k: u._key, city: u.addr.city, none: u.x}"}`, `map[city:Rome k:u07 none:<nil>]`},
		{"bind parameters", `{"query":"FOR u IN @@c FILTER u.team == @t SORT u.n LIMIT @o, 2 RETURN u.n","bindVars":{"@c":"users","t":"red","o":1}}`, `4|6`},
		{"count", `{"query":"FOR u IN users FILTER u.team == 'blue' COLLECT WITH COUNT INTO n RETURN n"}`, `13`},
		{"length", `{"query":"RETURN LENGTH(users)"}`, `25`},
		{"range", `{"query":"FOR i IN 1..4 FILTER i != 2 RETURN [i]"}`, `[1]|[3]|[4]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, b := do(t, "POST", base+"/_api/cursor", tc.body, nil)
			if st != 201 {
				t.Fatalf("%d %v", st, b)
			}
			if got := strings.Join(cursorRows(t, b), "|"); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
			if b["hasMore"] != false || b["id"] != nil {
				t.Fatalf("a one-batch answer keeps a cursor: %v", b)
			}
		})
	}
	t.Run("document and documents", func(t *testing.T) {
		_, b := do(t, "POST", base+"/_api/cursor", `{"query":"RETURN DOCUMENT('users/u03')"}`, nil)
		if rows := b["result"].([]any); len(rows) != 1 || rows[0].(map[string]any)["n"] != float64(3) || rows[0].(map[string]any)["@metadata"] != nil {
			t.Fatalf("DOCUMENT: %v", b)
		}
		_, b = do(t, "POST", base+"/_api/cursor", `{"query":"RETURN DOCUMENT(users, ['u03', 'nope', 'u04'])"}`, nil)
		if rows := b["result"].([]any); len(rows) != 1 || len(rows[0].([]any)) != 2 {
			t.Fatalf("DOCUMENT of an array: %v", b)
		}
	})

	t.Run("batches, count and fullCount", func(t *testing.T) {
		st, b := do(t, "POST", base+"/_api/cursor", `{"query":"FOR u IN users SORT u.n LIMIT 2, 12 RETURN u.n","batchSize":5,"count":true,"options":{"fullCount":true}}`, nil)
		if st != 201 || b["hasMore"] != true || b["count"] != float64(12) {
			t.Fatalf("first batch: %d %v", st, b)
		}
		stats := b["extra"].(map[string]any)["stats"].(map[string]any)
		if stats["fullCount"] != float64(25) {
			t.Fatalf("fullCount: %v", stats)
		}
		id := b["id"].(string)
		got := cursorRows(t, b)
		for i, method := range []string{"PUT", "POST"} {
			st, b := do(t, method, base+"/_api/cursor/"+id, "", nil)
			if st != 200 {
				t.Fatalf("%s next: %d %v", method, st, b)
			}
			got = append(got, cursorRows(t, b)...)
			if more := i == 0; b["hasMore"] != more {
				t.Fatalf("batch %d: hasMore %v", i+2, b["hasMore"])
			}
		}
		if strings.Join(got, ",") != "3,4,5,6,7,8,9,10,11,12,13,14" {
			t.Fatalf("rows %v", got)
		}
		if st, b := do(t, "PUT", base+"/_api/cursor/"+id, "", nil); st != 404 || errNum(b) != 1600 {
			t.Fatalf("a cursor read to its end: %d %v, want 404/1600", st, b)
		}
	})
	t.Run("delete, and another database's cursor", func(t *testing.T) {
		_, b := do(t, "POST", base+"/_api/cursor", `{"query":"FOR u IN users RETURN u._key","batchSize":2}`, nil)
		id := b["id"].(string)
		if st, b := do(t, "PUT", ts.hs.URL+"/_db/other/_api/cursor/"+id, "", nil); st != 404 || errNum(b) != 1600 {
			t.Fatalf("from another database: %d %v", st, b)
		}
		if st, b := do(t, "DELETE", base+"/_api/cursor/"+id, "", nil); st != 202 || b["id"] != id {
			t.Fatalf("delete: %d %v", st, b)
		}
		if st, b := do(t, "PUT", base+"/_api/cursor/"+id, "", nil); st != 404 || errNum(b) != 1600 {
			t.Fatalf("after delete: %d %v", st, b)
		}
	})
	t.Run("a cursor expires after its ttl", func(t *testing.T) {
		_, b := do(t, "POST", base+"/_api/cursor", `{"query":"FOR u IN users RETURN u._key","batchSize":2,"ttl":0.2}`, nil)
		id := b["id"].(string)
		time.Sleep(400 * time.Millisecond)
		if st, b := do(t, "PUT", base+"/_api/cursor/"+id, "", nil); st != 404 || errNum(b) != 1600 {
			t.Fatalf("after its ttl: %d %v", st, b)
		}
	})
	t.Run("open cursors are bounded per database", func(t *testing.T) {
		var last int
		var lb map[string]any
		for i := 0; i < 70; i++ {
			last, lb = do(t, "POST", ts.hs.URL+"/_db/q/_api/cursor", `{"query":"FOR i IN 1..3 RETURN i","batchSize":1}`, nil)
			if last != 201 {
				break
			}
		}
		if last != 503 || errNum(lb) != 1909 {
			t.Fatalf("70 open cursors: %d %v, want 503/1909", last, lb)
		}
		if st, b := do(t, "POST", ts.hs.URL+"/_db/q2/_api/cursor", `{"query":"FOR i IN 1..3 RETURN i","batchSize":1}`, nil); st != 201 {
			t.Fatalf("another database: %d %v", st, b)
		}
	})
}

// TestArangoQueryErrors: a query outside the subset fails at once with
// 1501 and its position; the others with ArangoDB's numbers.
func TestArangoQueryErrors(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL + "/_db/q"
	mustCollection(t, base, "users", nil)
	cases := []struct {
		name, body string
		status     int
		num        float64
		msg        string
	}{
		{"arithmetic", `{"query":"FOR u IN users RETURN u.n + 1"}`, 400, 1501, "position 1:27"},
		{"a write", `{"query":"FOR u IN users REMOVE u IN users"}`, 400, 1501, "position 1:16"},
		{"a function", `{"query":"FOR u IN users\nFILTER CONCAT(u.a) == 'x' RETURN u"}`, 400, 1501, "position 2:8"},
		{"malformed", `{"query":"FOR u IN"}`, 400, 1501, "position"},
		{"a missing collection", `{"query":"FOR u IN nosuch RETURN u"}`, 404, 1203, "nosuch"},
		{"a missing bind parameter", `{"query":"FOR u IN users FILTER u.a == @v RETURN u"}`, 400, 1551, "'v'"},
		{"an unused bind parameter", `{"query":"FOR u IN users RETURN u","bindVars":{"v":1}}`, 400, 1552, "'v'"},
		{"an unserved option", `{"query":"FOR u IN users RETURN u","options":{"shardIds":["s1"]}}`, 400, 400, "shardIds"},
		{"an unknown cursor", ``, 404, 1600, "cursor"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method, path := "POST", "/_api/cursor"
			if tc.body == "" {
				method, path = "PUT", "/_api/cursor/12345"
			}
			st, b := do(t, method, base+path, tc.body, nil)
			msg, _ := b["errorMessage"].(string)
			if st != tc.status || errNum(b) != tc.num || !strings.Contains(msg, tc.msg) {
				t.Fatalf("%d %v, want %d/%v with %q", st, b, tc.status, tc.num, tc.msg)
			}
		})
	}
}
