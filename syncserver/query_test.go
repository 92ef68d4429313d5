package syncserver_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/query"
	"github.com/hilodb/hilodb/syncserver"
)

// testRev is a hilodb revision from node C, at a clock n ticks past now.
func testRev(n int) string { return core.EncodeRev(revBase+uint64(n), "C") }

var revBase = uint64(time.Now().UnixMilli()) << 20

// TestFindDocs runs queries over documents pushed to the server: a scan
// of the collection in _id order, checked, ordered, paged and projected as
// every replica does, tombstones and other collections left out.
func TestFindDocs(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	var changes []string
	for i := 0; i < 60; i++ {
		id := fmt.Sprintf("orders/%02d", i)
		changes = append(changes, fmt.Sprintf(`{"id":%q,"baseRev":"","rev":%q,"doc":{"_id":%q,"status":%q,"total":%d}}`,
			id, testRev(i), id, []string{"open", "closed"}[i%2], i%7))
	}
	changes = append(changes, `{"id":"other/1","baseRev":"","rev":"`+testRev(999)+`","doc":{"_id":"other/1","status":"open","total":1}}`)
	got := r.call(`{"id":2,"op":"push","changes":[` + strings.Join(changes, ",") + `]}`)
	if got["ok"] != true || strings.Contains(fmt.Sprint(got), "error") {
		t.Fatalf("push: %v", got)
	}
	got = r.call(`{"id":3,"op":"push","changes":[{"id":"orders/00","baseRev":"` + testRev(0) + `","rev":"` + testRev(5000) + `","deleted":true}]}`)
	if got["ok"] != true {
		t.Fatalf("delete: %v", got)
	}
	find := func(q string, total bool) syncserver.FindResult {
		t.Helper()
		pq, err := query.Parse([]byte(q))
		if err != nil {
			t.Fatal(err)
		}
		res, err := ts.srv.FindDocs("shop", "orders/", pq, total)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return res
	}
	ids := func(docs [][]byte) string {
		var out []string
		for _, d := range docs {
			var m map[string]any
			_ = json.Unmarshal(d, &m)
			out = append(out, fmt.Sprint(m["_id"]))
		}
		return strings.Join(out, " ")
	}
	res := find(`{"selector":{"status":"open"},"limit":3}`, false)
	if ids(res.Docs) != "orders/02 orders/04 orders/06" || res.Bookmark == "" || res.Examined != 8 {
		t.Fatalf("first page: %s, examined %d", ids(res.Docs), res.Examined)
	}
	res = find(`{"selector":{"status":"open"},"limit":3,"bookmark":"`+res.Bookmark+`"}`, false)
	if ids(res.Docs) != "orders/08 orders/10 orders/12" {
		t.Fatalf("second page: %s", ids(res.Docs))
	}
	res = find(`{"selector":{"total":{"$gte":5}},"sort":[{"total":"desc"}],"limit":4,"fields":["_id","total"]}`, true)
	if ids(res.Docs) != "orders/06 orders/13 orders/20 orders/27" || res.Total != 16 {
		t.Fatalf("sorted: %s, total %d", ids(res.Docs), res.Total)
	}
	if string(res.Docs[0]) != `{"_id":"orders/06","total":6}` {
		t.Fatalf("projection: %s", res.Docs[0])
	}
	if res := find(`{"selector":{}}`, true); res.Total != 59 {
		t.Fatalf("all but the deleted one: %d", res.Total)
	}
}
