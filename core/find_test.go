package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/query"
)

// randomValue returns a value of any JSON kind, from small sets so that
// selectors meet equal values often.
func randomValue(r *rand.Rand, depth int) any {
	switch n := r.Intn(10); {
	case n == 0:
		return nil
	case n == 1:
		return r.Intn(2) == 0
	case n < 5:
		return float64(r.Intn(7) - 2)
	case n < 8:
		return []string{"a", "b", "c", "ab", "", "B"}[r.Intn(6)]
	case n == 8 && depth < 2:
		a := make([]any, r.Intn(3))
		for i := range a {
			a[i] = randomValue(r, depth+1)
		}
		return a
	case depth < 2:
		return map[string]any{"x": randomValue(r, depth+1)}
	}
	return float64(r.Intn(3))
}

func randomDoc(r *rand.Rand) map[string]any {
	d := map[string]any{}
	for _, f := range []string{"a", "b", "c"} {
		if r.Intn(6) > 0 {
			d[f] = randomValue(r, 0)
		}
	}
	if r.Intn(3) > 0 {
		d["n"] = map[string]any{"x": randomValue(r, 1)}
	}
	if r.Intn(2) == 0 {
		tags := make([]any, r.Intn(4))
		for i := range tags {
			tags[i] = []string{"red", "green", "blue"}[r.Intn(3)]
		}
		d["tags"] = tags
	}
	return d
}

var fieldNames = []string{"a", "b", "c", "n.x", "_id", "tags"}

func randomCond(r *rand.Rand) any {
	v := randomValue(r, 1)
	switch r.Intn(14) {
	case 0:
		return v // implicit $eq
	case 1:
		return map[string]any{"$eq": v}
	case 2:
		return map[string]any{"$ne": v}
	case 3:
		return map[string]any{"$gt": v}
	case 4:
		return map[string]any{"$gte": v, "$lte": randomValue(r, 1)}
	case 5:
		return map[string]any{"$lt": v}
	case 6:
		return map[string]any{"$in": []any{v, randomValue(r, 1)}}
	case 7:
		return map[string]any{"$nin": []any{v}}
	case 8:
		return map[string]any{"$exists": r.Intn(2) == 0}
	case 9:
		return map[string]any{"$type": []string{"null", "boolean", "number", "string", "array", "object"}[r.Intn(6)]}
	case 10:
		return map[string]any{"$regex": []string{"^a", "b$", "(?i)b", "."}[r.Intn(4)]}
	case 11:
		return map[string]any{"$size": float64(r.Intn(3))}
	case 12:
		return map[string]any{"$all": []any{"red"}}
	}
	return map[string]any{"$not": map[string]any{"$gt": float64(r.Intn(4))}}
}

func randomSelector(r *rand.Rand, depth int) map[string]any {
	sel := map[string]any{}
	for i := r.Intn(3); i >= 0; i-- {
		f := fieldNames[r.Intn(len(fieldNames))]
		if f == "tags" && r.Intn(2) == 0 {
			sel[f] = map[string]any{"$elemMatch": map[string]any{"$in": []any{"red", "blue"}}}
			continue
		}
		sel[f] = randomCond(r)
	}
	if depth < 2 && r.Intn(4) == 0 {
		op := []string{"$or", "$and", "$nor"}[r.Intn(3)]
		sel[op] = []any{randomSelector(r, depth+1), randomSelector(r, depth+1)}
	}
	if depth < 2 && r.Intn(8) == 0 {
		sel["$not"] = randomSelector(r, depth+1)
	}
	return sel
}

func randomSort(r *rand.Rand) []any {
	var out []any
	for i := r.Intn(3); i > 0; i-- {
		f := fieldNames[r.Intn(4)]
		if r.Intn(2) == 0 {
			out = append(out, f)
		} else {
			out = append(out, map[string]any{f: []string{"asc", "desc"}[r.Intn(2)]})
		}
	}
	return out
}

// bruteFind evaluates q over every document of the collection, one by one.
func bruteFind(t *testing.T, s *core.Store, coll string, q *query.Query) [][]byte {
	t.Helper()
	var all [][]byte
	after := ""
	for {
		p, err := s.List(coll, after, core.MaxListLimit)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, p.Docs...)
		if p.Next == "" {
			break
		}
		after = p.Next
	}
	type row struct {
		key []byte
		doc []byte
	}
	var rows []row
	for _, d := range all {
		if q.Selector.Match(d) {
			rows = append(rows, row{q.SortKey(d), d})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return bytes.Compare(rows[i].key, rows[j].key) < 0 })
	if q.Skip < len(rows) {
		rows = rows[q.Skip:]
	} else {
		rows = nil
	}
	if q.Limit > 0 && len(rows) > q.Limit {
		rows = rows[:q.Limit]
	}
	out := make([][]byte, len(rows))
	for i, r := range rows {
		out[i] = q.Project(r.doc)
	}
	return out
}

func docsText(docs [][]byte) string {
	var b strings.Builder
	for _, d := range docs {
		b.Write(d)
		b.WriteByte('\n')
	}
	return b.String()
}

var testIndexes = []core.IndexDef{
	{Fields: []string{"a"}},
	{Fields: []string{"b", "a"}},
	{Fields: []string{"n.x"}},
	{Name: "by-c-b", Fields: []string{"c", "b"}},
}

// TestFindEqualsBruteForce holds every query, through whatever index the
// planner takes (or one it is told to use), to a brute-force evaluation,
// while random writes change the documents between queries.
func TestFindEqualsBruteForce(t *testing.T) {
	ctx := context.Background()
	for seed := int64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			s := newTestStore(t)
			// Half of the indexes exist before the documents, half after.
			for _, d := range testIndexes[:2] {
				if _, _, err := s.CreateIndex(ctx, "items", d); err != nil {
					t.Fatal(err)
				}
			}
			var ids []string
			write := func() {
				switch {
				case len(ids) > 0 && r.Intn(5) == 0:
					id := ids[r.Intn(len(ids))]
					_, _ = s.Remove(ctx, "items", strings.TrimPrefix(id, "items/"), nil)
				case len(ids) > 0 && r.Intn(3) == 0:
					d := randomDoc(r)
					id := ids[r.Intn(len(ids))]
					if _, err := s.Replace(ctx, "items", strings.TrimPrefix(id, "items/"), mustJSON(d), nil); err != nil && !strings.Contains(err.Error(), "not found") {
						t.Fatal(err)
					}
				default:
					res, err := s.Insert(ctx, "items", mustJSON(randomDoc(r)), nil)
					if err != nil {
						t.Fatal(err)
					}
					ids = append(ids, res.ID)
				}
			}
			for i := 0; i < 300; i++ {
				write()
			}
			for _, d := range testIndexes[2:] {
				if _, _, err := s.CreateIndex(ctx, "items", d); err != nil {
					t.Fatal(err)
				}
			}
			defs, _ := s.Indexes("items")
			covered := 0 // queries whose index proved the selector: no document checked
			for i := 0; i < 400; i++ {
				for j := r.Intn(4); j > 0; j-- {
					write()
				}
				qj := map[string]any{"selector": randomSelector(r, 0)}
				if srt := randomSort(r); len(srt) > 0 {
					qj["sort"] = srt
				}
				if r.Intn(2) == 0 {
					qj["limit"] = float64(1 + r.Intn(20))
				}
				if r.Intn(4) == 0 {
					qj["skip"] = float64(r.Intn(10))
				}
				if r.Intn(5) == 0 {
					qj["fields"] = []any{"_id", "a", "n.x"}
				}
				if r.Intn(3) == 0 {
					qj["use_index"] = defs[r.Intn(len(defs))].Name
				}
				text := mustJSON(qj)
				q, got := findAsBrute(t, s, string(text))
				if got.Plan.Covered {
					covered++
				}
				// The page as JSON text is the same page.
				text2, _, err := s.AppendFind([]byte("x"), "items", q)
				if err != nil {
					t.Fatalf("append find %s: %v", text, err)
				}
				wantText := `x{"docs":[` + string(bytes.Join(got.Docs, []byte(","))) + `]`
				if got.Bookmark != "" {
					wantText += `,"bookmark":"` + got.Bookmark + `"`
				}
				if wantText += "}"; string(text2) != wantText || !json.Valid(text2[1:]) {
					t.Fatalf("query %s: AppendFind gave\n%s\nwant\n%s", text, text2, wantText)
				}
				n, err := s.CountWhere("items", q.Selector)
				if err != nil {
					t.Fatal(err)
				}
				q2 := *q
				q2.Skip, q2.Limit, q2.Fields = 0, 0, nil
				if all := bruteFind(t, s.Store, "items", &q2); n != len(all) {
					t.Fatalf("count %s = %d, want %d", text, n, len(all))
				}
			}
			t.Logf("%d of 400 queries covered by their index", covered)
			if covered == 0 {
				t.Error("no query was covered by its index: the unchecked path went untested")
			}
		})
	}
}

// findAsBrute runs the query text on the items collection and fails the
// test unless its page equals a brute-force evaluation (in the order the
// plan says, for a query without a sort of its own).
func findAsBrute(t *testing.T, s *testStore, text string) (*query.Query, core.FindResult) {
	t.Helper()
	q, err := core.ParseQuery([]byte(text))
	if err != nil {
		t.Fatalf("parse %s: %v", text, err)
	}
	got, err := s.Find("items", q)
	if err != nil {
		t.Fatalf("find %s: %v", text, err)
	}
	if want := bruteFind(t, s.Store, "items", q.Ordered(got.Plan.Order)); docsText(got.Docs) != docsText(want) {
		t.Fatalf("query %s (plan %+v):\n got %d docs:\n%s\nwant %d:\n%s", text, got.Plan, len(got.Docs), docsText(got.Docs), len(want), docsText(want))
	}
	return q, got
}

// TestFindPagesWithBookmarks pages through a query with bookmarks while
// documents are written between pages: every document that matched from
// the start to the end comes exactly once, in order.
func TestFindPagesWithBookmarks(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	if _, _, err := s.CreateIndex(ctx, "items", core.IndexDef{Fields: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if _, err := s.Insert(ctx, "items", mustJSON(map[string]any{"a": i % 37, "keep": true}), nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, sortBy := range []string{`["a"]`, `[{"a":"desc"}]`, `[]`} {
		q, err := core.ParseQuery([]byte(`{"selector":{"keep":true},"limit":15,"sort":` + sortBy + `}`))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		var last []byte
		for page := 0; ; page++ {
			res, err := s.Find("items", q)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range res.Docs {
				var m map[string]any
				_ = json.Unmarshal(d, &m)
				id := m["_id"].(string)
				if seen[id] {
					t.Fatalf("sort %s: %s came twice", sortBy, id)
				}
				seen[id] = true
				k := q.SortKey(d)
				if last != nil && bytes.Compare(k, last) <= 0 {
					t.Fatalf("sort %s: out of order at %s", sortBy, id)
				}
				last = k
			}
			if res.Bookmark == "" {
				break
			}
			// A write between pages: one that does not match.
			if _, err := s.Insert(ctx, "items", mustJSON(map[string]any{"a": page, "keep": false}), nil); err != nil {
				t.Fatal(err)
			}
			q.Bookmark = res.Bookmark
		}
		if len(seen) != 200 {
			t.Fatalf("sort %s: paged through %d documents, want 200", sortBy, len(seen))
		}
	}
	// A bookmark of another order is refused.
	q1, _ := core.ParseQuery([]byte(`{"selector":{},"limit":1,"sort":["a"]}`))
	res, _ := s.Find("items", q1)
	_, err := s.FindJSON("items", []byte(`{"selector":{},"limit":1,"sort":["keep"],"bookmark":"`+res.Bookmark+`"}`))
	wantErr(t, err, 1912, core.ErrBadQuery)
}

// TestPlannerChoosesIndexes checks what explain reports: the index that
// fixes the most fields, its range, and a scan when none helps.
func TestPlannerChoosesIndexes(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	for _, d := range []core.IndexDef{{Fields: []string{"status"}}, {Fields: []string{"status", "created"}}, {Fields: []string{"total"}}} {
		if _, _, err := s.CreateIndex(ctx, "orders", d); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 500; i++ {
		st := []string{"open", "closed", "void"}[i%3]
		if _, err := s.Insert(ctx, "orders", mustJSON(map[string]any{"status": st, "created": i, "total": i % 50}), nil); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		q        string
		index    string
		examined int
		sorted   bool
	}{
		{`{"selector":{"status":"open"},"sort":[{"created":"desc"}],"limit":20}`, "idx-status-created", 21, true}, // one past the page: no tie of the last
		{`{"selector":{"status":"open","created":{"$gte":400}}}`, "idx-status-created", 33, true},
		{`{"selector":{"total":{"$gt":45}}}`, "idx-total", 40, true},
		{`{"selector":{"total":{"$gt":"a"}}}`, "idx-total", 0, true},
		{`{"selector":{"note":"x"}}`, "", 500, true},
		{`{"selector":{"status":"void"},"use_index":"idx-total"}`, "idx-total", 500, true},
	}
	for _, tt := range tests {
		q, err := core.ParseQuery([]byte(tt.q))
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Find("orders", q)
		if err != nil {
			t.Fatal(err)
		}
		if res.Plan.Index != tt.index || res.Plan.Examined != tt.examined || res.Plan.SortedByIndex != tt.sorted {
			t.Errorf("%s: plan %+v, want index %q examining %d, sorted %v", tt.q, res.Plan, tt.index, tt.examined, tt.sorted)
		}
	}
	_, err := s.FindJSON("orders", []byte(`{"selector":{},"use_index":"nope"}`))
	wantErr(t, err, 1912, core.ErrBadQuery)
}

func TestIndexDefinitions(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	name, created, err := s.CreateIndex(ctx, "orders", core.IndexDef{Fields: []string{"status"}})
	if err != nil || !created || name != "idx-status" {
		t.Fatalf("create: %q %v %v", name, created, err)
	}
	name, created, err = s.CreateIndex(ctx, "orders", core.IndexDef{Name: "other", Fields: []string{"status"}})
	if err != nil || created || name != "idx-status" {
		t.Fatalf("same fields again: %q %v %v, want the existing index", name, created, err)
	}
	_, _, err = s.CreateIndex(ctx, "orders", core.IndexDef{Name: "idx-status", Fields: []string{"total"}})
	wantErr(t, err, 1912, core.ErrBadQuery)
	for _, bad := range []core.IndexDef{{}, {Fields: []string{""}}, {Fields: []string{"a\\"}}, {Name: "no/slash", Fields: []string{"a"}}} {
		_, _, err := s.CreateIndex(ctx, "orders", bad)
		wantErr(t, err, 1912, core.ErrBadQuery)
	}
	_, _, err = s.CreateIndex(ctx, "bad name", core.IndexDef{Fields: []string{"a"}})
	wantErr(t, err, 1208, core.ErrIllegalName)
	defs, err := s.Indexes("orders")
	if err != nil || len(defs) != 1 {
		t.Fatalf("indexes: %v %v", defs, err)
	}
	pend, _, _ := s.PendingIndexes()
	if len(pend) != 1 || pend[0].Collection != "orders" {
		t.Fatalf("pending: %+v", pend)
	}
	wantErr(t, s.DeleteIndex(ctx, "orders", "nope"), 1202, core.ErrNotFound)
	if err := s.DeleteIndex(ctx, "orders", "idx-status"); err != nil {
		t.Fatal(err)
	}
	if defs, _ := s.Indexes("orders"); len(defs) != 0 {
		t.Fatalf("after delete: %v", defs)
	}
	_, dropped, _ := s.PendingIndexes()
	if len(dropped) != 1 {
		t.Fatalf("dropped pending: %+v", dropped)
	}
}

func TestQueryErrors(t *testing.T) {
	s := newTestStore(t)
	for _, q := range []string{
		`{"selector":{"a":{"$foo":1}}}`,
		`{"selector":{"$or":{}}}`,
		`{"selector":{"a":{"$in":3}}}`,
		`{"selector":{"a":{"$regex":"("}}}`,
		`{"selector":{"a":{"$gt":1,"b":2}}}`,
		`{"selector":[]}`,
		`{"selector":{},"sort":"a"}`,
		`{"selector":{},"limit":-1}`,
		`{"selector":{},"bogus":1}`,
		`{"selector":{},"bookmark":"zz"}`,
		`not json`,
	} {
		_, err := s.FindJSON("items", []byte(q))
		wantErr(t, err, 1912, core.ErrBadQuery)
	}
}

// TestCoveredQueriesEqualAScan runs, through an index of [k, v], every
// equality on k with every range on v over values chosen where keys could
// go wrong (zeros of both signs, huge and tiny numbers, strings with zero
// bytes and of one prefix, null, booleans, arrays, objects, a missing
// field): each answer, given unchecked where the index proves the
// selector, equals a brute-force evaluation.
func TestCoveredQueriesEqualAScan(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	if _, _, err := s.CreateIndex(ctx, "items", core.IndexDef{Fields: []string{"k", "v"}}); err != nil {
		t.Fatal(err)
	}
	values := []string{`0`, `-0`, `1`, `-1`, `1.5`, `1e300`, `-1e300`, `5e-324`, `9007199254740993`, `""`, `"a"`, `"a\u0000"`, `"a\u0000b"`, `"ab"`, `"b"`, `"\u00ff"`, `null`, `true`, `false`, `[1]`, `["a"]`, `{"a":1}`}
	keys := []string{`"x"`, `1`, `null`, `true`}
	for _, k := range append(keys, "") {
		for _, v := range append(values, "") {
			doc := "{"
			if k != "" {
				doc += `"k":` + k
			}
			if v != "" {
				if k != "" {
					doc += ","
				}
				doc += `"v":` + v
			}
			doc += "}"
			if _, err := s.Insert(ctx, "items", []byte(doc), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	covered := 0
	for _, k := range keys {
		for _, op := range []string{"$gt", "$gte", "$lt", "$lte"} {
			for _, v := range values {
				for _, sortBy := range []string{`[]`, `[{"v":"desc"}]`} {
					_, got := findAsBrute(t, s, fmt.Sprintf(`{"selector":{"k":%s,"v":{%q:%s}},"sort":%s}`, k, op, v, sortBy))
					if got.Plan.Covered {
						covered++
					}
				}
			}
		}
	}
	// Ranges on numbers and strings are covered, the rest checked.
	if want := len(keys) * 4 * 16 * 2; covered != want { // 9 numbers and 7 strings
		t.Errorf("%d queries covered, want %d", covered, want)
	}
}

// TestTiesFromIndexKeys reads an index backwards for a sort on its fields,
// among many documents of equal sort values: the page, put in order of
// _id within each run of ties, equals a brute-force evaluation at every
// limit and skip.
func TestTiesFromIndexKeys(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	if _, _, err := s.CreateIndex(ctx, "items", core.IndexDef{Fields: []string{"k", "v"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		doc := fmt.Sprintf(`{"_key":"d%03d","k":%d,"v":%d}`, (i*7919)%300, i%3, i%5)
		if _, err := s.Insert(ctx, "items", []byte(doc), nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, sel := range []string{`{"k":1}`, `{"k":2,"v":{"$lt":3}}`, `{"k":{"$gte":1}}`} {
		for _, sortBy := range []string{`[{"v":"desc"}]`, `[{"k":"desc"},{"v":"desc"}]`} {
			for limit := 1; limit <= 45; limit += 4 {
				for skip := 0; skip < 3; skip++ {
					findAsBrute(t, s, fmt.Sprintf(`{"selector":%s,"sort":%s,"limit":%d,"skip":%d}`, sel, sortBy, limit, skip))
				}
			}
		}
	}
}

// TestIndexKeepsRewrittenDocuments: an index's entries keep their
// documents; a write that changes a document but not its indexed values
// gives the entry the new document, and a transaction that fails puts the
// old one back.
func TestIndexKeepsRewrittenDocuments(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	if _, _, err := s.CreateIndex(ctx, "items", core.IndexDef{Fields: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	find := func() string {
		t.Helper()
		res, err := s.FindJSON("items", []byte(`{"selector":{"a":{"$gte":0}}}`))
		if err != nil {
			t.Fatal(err)
		}
		if res.Plan.Index != "idx-a" || res.Plan.Fetched != 0 {
			t.Fatalf("plan %+v: want idx-a, every document the index's own", res.Plan)
		}
		var out []string
		for _, d := range res.Docs {
			var m map[string]any
			_ = json.Unmarshal(d, &m)
			out = append(out, fmt.Sprintf("%v %v", m["_key"], m["b"]))
		}
		return strings.Join(out, ",")
	}
	for _, k := range []string{"x", "y"} {
		if _, err := s.Insert(ctx, "items", []byte(`{"_key":"`+k+`","a":1,"b":"old"}`), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Replace(ctx, "items", "x", []byte(`{"a":1,"b":"new"}`), nil); err != nil {
		t.Fatal(err)
	}
	if got := find(); got != "x new,y old" {
		t.Fatalf("after a rewrite: %s", got)
	}
	// One transaction of two writes, the second refused (its precondition
	// fails): neither stays, and the entry has its old document back.
	_, err := s.SaveBatch(ctx, []core.BatchItem{
		{ID: "items/y", Collection: "items", Body: []byte(`{"a":1,"b":"lost"}`)},
		{ID: "items/x", Collection: "items", Body: []byte(`{"a":1,"b":"lost"}`), IfRev: "_nope"},
	})
	if err == nil {
		t.Fatal("a batch whose precondition fails was saved")
	}
	if got := find(); got != "x new,y old" {
		t.Fatalf("after a refused batch: %s", got)
	}
}
