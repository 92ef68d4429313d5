package aql_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core/query"
	"github.com/hilodb/hilodb/core/query/aql"
)

var docs = []string{
	`{"_id":"u/1","_key":"1","name":"ann","age":31,"tags":["a","b"],"addr":{"city":"Oslo"}}`,
	`{"_id":"u/2","_key":"2","name":"bob","age":25,"tags":["b"],"addr":{"city":"Rome"}}`,
	`{"_id":"u/3","_key":"3","name":"cy","age":40,"nick":null}`,
	`{"_id":"u/4","_key":"4","name":"dee","age":"old"}`,
}

var aqlPagerOptions = query.PagerOptions{}

// run answers a ForCollection plan over docs, as a store would.
func run(t *testing.T, plan *aql.Plan) []string {
	t.Helper()
	pager, err := plan.Query.NewPager(aqlPagerOptions)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		pager.Add(d)
	}
	if plan.Count {
		return []string{string(plan.CountResult(pager.Matched))}
	}
	page, _ := pager.Page()
	out := make([]string, len(page))
	for i, d := range page {
		out[i] = string(plan.Project(d))
	}
	return out
}

func TestParseAndRun(t *testing.T) {
	cases := []struct {
		name, q string
		binds   string
		want    string // results joined by |
	}{
		{"all", `FOR u IN users RETURN u._key`, ``, `"1"|"2"|"3"|"4"`},
		{"equality", `FOR u IN users FILTER u.name == "bob" RETURN u._key`, ``, `"2"`},
		{"not equal", `FOR u IN users FILTER u.name != "bob" RETURN u._key`, ``, `"1"|"3"|"4"`},
		{"range", `FOR u IN users FILTER u.age >= 25 AND u.age < 40 RETURN u._key`, ``, `"1"|"2"`},
		{"flipped", `FOR u IN users FILTER 30 < u.age RETURN u._key`, ``, `"1"|"3"`},
		{"or and not", `FOR u IN users FILTER u.age == 25 OR NOT (u.age <= 35) RETURN u._key`, ``, `"2"|"3"|"4"`},
		{"symbols", `FOR u IN users FILTER u.age == 25 || !(u.age <= 35) && u.name != "x" RETURN u._key`, ``, `"2"|"3"|"4"`},
		{"in", `FOR u IN users FILTER u.name IN ["ann", "cy"] RETURN u._key`, ``, `"1"|"3"`},
		{"not in", `FOR u IN users FILTER u.name NOT IN ["ann", "cy"] RETURN u._key`, ``, `"2"|"4"`},
		{"value in array", `FOR u IN users FILTER "a" IN u.tags RETURN u._key`, ``, `"1"`},
		{"like", `FOR u IN users FILTER u.name LIKE "%e_" RETURN u._key`, ``, `"4"`},
		{"like literal", `FOR u IN users FILTER u.name LIKE "a_n" RETURN u.name`, ``, `"ann"`},
		{"nested path", `FOR u IN users FILTER u.addr.city == "Rome" RETURN u.addr.city`, ``, `"Rome"`},
		{"bracket path", `FOR u IN users FILTER u["addr"]["city"] == "Oslo" RETURN u["name"]`, ``, `"ann"`},
		{"null matches missing", `FOR u IN users FILTER u.nick == null RETURN u._key`, ``, `"1"|"2"|"3"|"4"`},
		{"not null", `FOR u IN users FILTER u.addr != null RETURN u._key`, ``, `"1"|"2"`},
		{"sort desc", `FOR u IN users FILTER u.age >= 0 SORT u.age DESC RETURN u.age`, ``, `40|31|25`},
		{"sort asc limit", `FOR u IN users SORT u.name ASC LIMIT 2 RETURN u.name`, ``, `"ann"|"bob"`},
		{"limit offset", `FOR u IN users SORT u.name LIMIT 1, 2 RETURN u.name`, ``, `"bob"|"cy"`},
		{"limit 0", `FOR u IN users LIMIT 0 RETURN u`, ``, ``},
		{"object", `FOR u IN users FILTER u._key == "1" RETURN {n: u.name, c: u.addr.city, x: 1, m: u.missing}`, ``, `{"n":"ann","c":"Oslo","x":1,"m":null}`},
		{"array", `FOR u IN users FILTER u._key == "2" RETURN [u.name, u.age]`, ``, `["bob",25]`},
		{"whole", `FOR u IN users FILTER u._key == "3" RETURN u`, ``, docs[2]},
		{"count", `FOR u IN users FILTER u.age > 26 COLLECT WITH COUNT INTO n RETURN n`, ``, `2`},
		{"count after limit", `FOR u IN users LIMIT 1, 10 COLLECT WITH COUNT INTO n RETURN {n}`, ``, `{"n":3}`},
		{"binds", `FOR u IN @@c FILTER u.name == @name RETURN u._key`, `{"@c":"users","name":"cy"}`, `"3"`},
		{"bind list", `FOR u IN users FILTER u.age IN @ages LIMIT @n RETURN u._key`, `{"ages":[25,40],"n":1}`, `"2"`},
		{"comments", "FOR u IN users // all\n /* of them */ RETURN u._key", ``, `"1"|"2"|"3"|"4"`},
		{"lower case", `for u in users filter u.age == 25 return u._key`, ``, `"2"`},
		{"true filter", `FOR u IN users FILTER true LIMIT 1 RETURN u._key`, ``, `"1"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := aql.Parse(tc.q, binds(t, tc.binds))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if plan.Kind != aql.ForCollection || plan.Collection != "users" {
				t.Fatalf("kind %v collection %q", plan.Kind, plan.Collection)
			}
			if got := strings.Join(run(t, plan), "|"); got != tc.want {
				t.Fatalf("got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func binds(t *testing.T, s string) map[string]json.RawMessage {
	if s == "" {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestValuesAndReturns(t *testing.T) {
	cases := []struct {
		q, want string
		full    int
	}{
		{`FOR i IN 0..10 RETURN i`, `0|1|2|3|4|5|6|7|8|9|10`, 11},
		{`FOR i IN 3..1 RETURN i`, `3|2|1`, 3},
		{`FOR i IN 1..10 FILTER i > 3 SORT i DESC LIMIT 2 RETURN {i}`, `{"i":10}|{"i":9}`, 7},
		{`FOR x IN [{"a":2},{"a":1}] SORT x.a RETURN x.a`, `1|2`, 2},
		{`FOR i IN 1..5 COLLECT WITH COUNT INTO n RETURN n`, `5`, 5},
		{`FOR i IN -2..-1 RETURN i`, `-2|-1`, 2},
		{`FOR x IN RANGE(1, 7, 3) RETURN x`, `1|4|7`, 3},
		{`FOR x IN RANGE(3, 1) RETURN x`, `3|2|1`, 3},
	}
	for _, tc := range cases {
		plan, err := aql.Parse(tc.q, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		res, full, err := plan.Run()
		if err != nil {
			t.Fatal(err)
		}
		got := make([]string, len(res))
		for i, r := range res {
			got[i] = string(r)
		}
		if strings.Join(got, "|") != tc.want || full != tc.full {
			t.Errorf("%s: got %v (full %d), want %s (full %d)", tc.q, got, full, tc.want, tc.full)
		}
	}
	for _, tc := range []struct {
		q    string
		kind aql.Kind
		want string
	}{
		{`RETURN LENGTH(users)`, aql.Length, "users"},
		{`RETURN LENGTH(@@c)`, aql.Length, "things"},
		{`RETURN DOCUMENT("users/1")`, aql.Document, "users/1"},
		{`RETURN DOCUMENT(users, "2")`, aql.Document, "users/2"},
		{`RETURN DOCUMENT(["users/1", "users/2"])`, aql.Document, "users/1,users/2"},
		{`RETURN {a: [1, "x"]}`, aql.Value, `{"a":[1,"x"]}`},
	} {
		var b map[string]json.RawMessage
		if strings.Contains(tc.q, "@@c") {
			b = map[string]json.RawMessage{"@c": json.RawMessage(`"things"`)}
		}
		plan, err := aql.Parse(tc.q, b)
		if err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		got := plan.Collection
		switch plan.Kind {
		case aql.Document:
			got = strings.Join(plan.DocIDs, ",")
		case aql.Value:
			got = string(plan.Value)
		}
		if plan.Kind != tc.kind || got != tc.want {
			t.Errorf("%s: kind %v %q, want %v %q", tc.q, plan.Kind, got, tc.kind, tc.want)
		}
	}
}

// TestOutsideTheSubset: each query fails at once with a SyntaxError at the
// token at fault.
// TestProjectWithin: a RETURN that repeats the document is measured as it
// is made: within room it is Project's result, past it ok is false and at
// most room+1 bytes were made; RunWithin fails with query.ErrTooBig.
func TestProjectWithin(t *testing.T) {
	doc := []byte(docs[0])
	for _, tc := range []struct {
		query string
		room  int
		ok    bool
	}{
		{"FOR d IN u RETURN d", len(doc), true},
		{"FOR d IN u RETURN d", len(doc) - 1, false},
		{"FOR d IN u RETURN [d, d, d]", 3*len(doc) + 4, true},
		{"FOR d IN u RETURN [d, d, d]", 2 * len(doc), false},
		{"FOR d IN u RETURN {a: d.name, b: [d.addr, d.tags], c: 1}", 200, true},
		{"FOR d IN u RETURN {a: d.name, b: [d.addr, d.tags], c: 1}", 20, false},
		{"FOR d IN u RETURN \"a long constant\"", 5, false},
	} {
		plan, err := aql.Parse(tc.query, nil)
		if err != nil {
			t.Fatal(err)
		}
		out, ok := plan.ProjectWithin(doc, tc.room)
		if ok != tc.ok || len(out) > tc.room+1 {
			t.Errorf("%s within %d: %d bytes, ok %v; want ok %v", tc.query, tc.room, len(out), ok, tc.ok)
		}
		if ok && string(out) != string(plan.Project(doc)) {
			t.Errorf("%s within %d: %s, Project says %s", tc.query, tc.room, out, plan.Project(doc))
		}
	}
	plan, err := aql.Parse("FOR v IN [1, 2, 3] RETURN [v, v, v, v]", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := plan.RunWithin(20); !errors.Is(err, query.ErrTooBig) {
		t.Errorf("RunWithin(20): %v, want ErrTooBig", err)
	}
	if rows, _, err := plan.RunWithin(100); err != nil || len(rows) != 3 {
		t.Errorf("RunWithin(100): %q, %v", rows, err)
	}
}

func TestOutsideTheSubset(t *testing.T) {
	cases := []struct {
		q   string
		pos int // byte offset of the fault
	}{
		{`FOR u IN users RETURN u.a + 1`, 26},
		{`FOR u IN users INSERT {} INTO x`, 15},
		{`FOR u IN users FILTER u.a == u.b RETURN u`, 26},
		{`FOR u IN users LET x = 1 RETURN u`, 15},
		{`FOR u IN users RETURN DISTINCT u`, 22},
		{`FOR u IN users FILTER CONCAT(u.a) == "x" RETURN u`, 22},
		{`FOR u IN users COLLECT a = u.a RETURN a`, 23},
		{`FOR u IN users SORT u.a LIMIT 1 FILTER u.b == 1 RETURN u`, 32},
		{`FOR u IN users RETURN v`, 22},
		{`FOR u IN users FILTER u.a =~ "x" RETURN u`, 26},
		{`FOR u IN users`, 14},
		{`UPDATE "x" WITH {} IN users`, 0},
		{`FOR v, e IN 1..2 OUTBOUND "a/b" edges RETURN v`, 5},
		{"FOR u IN users\n  RETURN u.a +", 28},
		{`FOR u IN users RETURN u "x"`, 24},
		{`FOR u IN users FILTER u.a == "unterminated RETURN u`, 29},
		{``, 0},
	}
	for _, tc := range cases {
		_, err := aql.Parse(tc.q, nil)
		var se *aql.SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: %v, want a SyntaxError", tc.q, err)
			continue
		}
		if se.Pos != tc.pos {
			t.Errorf("%q: at %d (%v), want %d", tc.q, se.Pos, err, tc.pos)
		}
		if !strings.Contains(se.Error(), "position") {
			t.Errorf("%q: %v names no position", tc.q, err)
		}
	}
}

func TestBindErrors(t *testing.T) {
	cases := []struct {
		q     string
		binds string
		num   int
	}{
		{`FOR u IN users FILTER u.a == @v RETURN u`, ``, 1551},
		{`FOR u IN users RETURN u`, `{"v":1}`, 1552},
		{`FOR u IN @@c RETURN u`, `{"@c":1}`, 1553},
	}
	for _, tc := range cases {
		_, err := aql.Parse(tc.q, binds(t, tc.binds))
		var be *aql.BindError
		if !errors.As(err, &be) || be.Num != tc.num {
			t.Errorf("%q: %v, want bind error %d", tc.q, err, tc.num)
		}
	}
}

// FuzzParse: any text parses or fails with an error, never panics, and a
// parsed query runs.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`FOR u IN users FILTER u.a == 1 AND (u.b IN [1,2] OR NOT u.c LIKE "x%") SORT u.a DESC LIMIT 1, 2 RETURN {a: u.a, b: [u.b]}`,
		`FOR i IN 0..10 FILTER i > 2 COLLECT WITH COUNT INTO n RETURN n`,
		`RETURN DOCUMENT(["a/1", "a/2"])`, `RETURN LENGTH(@@c)`, "FOR u IN @@c FILTER u[@k] == @v RETURN u",
	} {
		f.Add(s)
	}
	b := map[string]json.RawMessage{"@c": json.RawMessage(`"c"`), "k": json.RawMessage(`"a"`), "v": json.RawMessage(`[1]`)}
	f.Fuzz(func(t *testing.T, q string) {
		plan, err := aql.Parse(q, b)
		if err != nil {
			var se *aql.SyntaxError
			var be *aql.BindError
			if !errors.As(err, &se) && !errors.As(err, &be) {
				t.Fatalf("%q: %T %v", q, err, err)
			}
			return
		}
		switch plan.Kind {
		case aql.ForValues:
			if _, _, err := plan.Run(); err != nil {
				t.Fatal(err)
			}
		case aql.ForCollection:
			for _, d := range docs {
				if plan.Query.Selector.MatchString(d) {
					if out := plan.Project([]byte(d)); !json.Valid(out) {
						t.Fatalf("%q: projection %s is not JSON", q, out)
					}
				}
			}
		}
	})
}
