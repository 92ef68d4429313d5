package syncserver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hilodb/hilodb/core/query"
	"github.com/hilodb/hilodb/core/revision"
	"github.com/hilodb/hilodb/syncserver"
)

// testRev is a hilodb revision from node C, at a clock n ticks past now.
func testRev(n int) string { return revision.Encode(revBase+uint64(n), "C") }

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
	if ids(res.Docs) != "orders/02 orders/04 orders/06" || res.Bookmark == "" || res.Examined != 6 { // read in _id order: it stops at the page's last document
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

// TestFindDocsThroughIndexes: with an index its clients defined, the
// server reads a query's candidates from it, kept up to date with every
// write and delete since it was built; the answers equal a scan's.
func TestFindDocsThroughIndexes(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	revs := map[string]string{}
	n := 0
	put := func(id string, doc string, deleted bool) {
		t.Helper()
		n++
		rev := testRev(10000 + n)
		item := fmt.Sprintf(`{"id":%q,"baseRev":%q,"rev":%q,"doc":%s}`, id, revs[id], rev, doc)
		if deleted {
			item = fmt.Sprintf(`{"id":%q,"baseRev":%q,"rev":%q,"deleted":true}`, id, revs[id], rev)
		}
		got := r.call(`{"id":2,"op":"push","changes":[` + item + `]}`)
		if got["ok"] != true || strings.Contains(fmt.Sprint(got), "error") {
			t.Fatalf("push %s: %v", id, got)
		}
		revs[id] = rev
	}
	doc := func(id string, i int) string {
		return fmt.Sprintf(`{"_id":%q,"status":%q,"total":%d}`, id, []string{"open", "closed", "void"}[i%3], (i*7)%20)
	}
	for i := 0; i < 90; i++ {
		put(fmt.Sprintf("orders/%02d", i), doc(fmt.Sprintf("orders/%02d", i), i), false)
	}
	if got := r.call(`{"id":3,"op":"index.define","collection":"orders","index":{"fields":["status","total"]}}`); got["ok"] != true {
		t.Fatal(got)
	}
	queries := []string{
		`{"selector":{"status":"open"},"sort":[{"total":"desc"}],"limit":5}`,
		`{"selector":{"status":"void","total":{"$gte":5,"$lt":15}}}`,
		`{"selector":{"status":{"$in":["closed"]}},"limit":7}`,
	}
	check := func(round int) {
		t.Helper()
		for _, qs := range queries {
			q, err := query.Parse([]byte(qs))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ts.srv.FindDocs("shop", "orders/", q, false)
			if err != nil {
				t.Fatal(err)
			}
			// The same query over every document, one by one.
			if len(q.Sort) == 0 {
				q = q.Ordered(query.IndexOrder([]query.Path{query.MustPath("status"), query.MustPath("total")}))
			}
			want := bruteServer(t, r, q)
			if fmt.Sprint(ids(got.Docs)) != fmt.Sprint(ids(want)) {
				t.Fatalf("round %d, %s:\n index %v\n brute %v", round, qs, ids(got.Docs), ids(want))
			}
			if got.Examined >= 60 {
				t.Fatalf("round %d, %s: the index examined %d documents", round, qs, got.Examined)
			}
		}
	}
	check(0)
	// Writes after the index was built: changed, new and deleted documents.
	for i := 0; i < 30; i++ {
		id := fmt.Sprintf("orders/%02d", i*3)
		switch i % 3 {
		case 0:
			put(id, doc(id, i+1), false)
		case 1:
			put(id, "", true)
		default:
			nid := fmt.Sprintf("orders/n%02d", i)
			put(nid, doc(nid, i), false)
		}
		if i%10 == 9 {
			check(i)
		}
	}
}

func ids(docs [][]byte) []string {
	var out []string
	for _, d := range docs {
		var m map[string]any
		_ = json.Unmarshal(d, &m)
		out = append(out, fmt.Sprint(m["_id"]))
	}
	return out
}

// bruteServer evaluates q over every live document of the collection, as
// a pull gives them.
func bruteServer(t *testing.T, r *raw, q *query.Query) [][]byte {
	t.Helper()
	got := r.call(`{"id":9,"op":"pull","since":0,"limit":10000}`)
	var rows [][]byte
	for _, c := range got["changes"].([]any) {
		m := c.(map[string]any)
		if m["deleted"] == true || !strings.HasPrefix(m["id"].(string), "orders/") {
			continue
		}
		b, _ := json.Marshal(m["doc"])
		if q.Selector.Match(b) {
			rows = append(rows, b)
		}
	}
	sort.Slice(rows, func(i, j int) bool { return bytes.Compare(q.SortKey(rows[i]), q.SortKey(rows[j])) < 0 })
	if q.Skip < len(rows) {
		rows = rows[q.Skip:]
	} else {
		rows = nil
	}
	if q.Limit > 0 && len(rows) > q.Limit {
		rows = rows[:q.Limit]
	}
	return rows
}
