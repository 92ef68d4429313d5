package syncserver_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core/query"
	"github.com/hilodb/hilodb/syncserver"
)

// BenchmarkFindDocs is a query for a page of 20 over 20,000 documents on
// the embedded store, by a scan of the collection and through an index.
func BenchmarkFindDocs(b *testing.B) {
	ts := startServer(b, syncserver.Config{})
	r := dialRaw(b, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	const n = 20000
	for at := 0; at < n; at += 1000 {
		var items []string
		for i := at; i < at+1000; i++ {
			id := fmt.Sprintf("todos/%05d", i)
			items = append(items, fmt.Sprintf(`{"id":%q,"baseRev":"","rev":%q,"doc":{"_id":%q,"status":%q,"createdAt":%d,"title":"a todo"}}`,
				id, testRev(i), id, []string{"open", "done", "archived"}[i%3], 1700000000000+i))
		}
		if got := r.call(`{"id":2,"op":"push","changes":[` + strings.Join(items, ",") + `]}`); got["ok"] != true {
			b.Fatal(got)
		}
	}
	q, _ := query.Parse([]byte(`{"selector":{"status":"open"},"sort":[{"createdAt":"desc"}],"limit":20}`))
	run := func(b *testing.B) {
		for b.Loop() {
			res, err := ts.srv.FindDocs("shop", "todos/", q, false)
			if err != nil || len(res.Docs) != 20 {
				b.Fatal(err, len(res.Docs))
			}
		}
	}
	b.Run("scan", run)
	if got := r.call(`{"id":3,"op":"index.define","collection":"todos","index":{"fields":["status","createdAt"]}}`); got["ok"] != true {
		b.Fatal(got)
	}
	b.Run("index", run)
}
