package query_test

import (
	"testing"

	"github.com/hilodb/hilodb/core/query"
	"github.com/tidwall/gjson"
)

// sameAsGet checks that GetFields finds at each path what Path.GetString
// finds there.
func sameAsGet(t *testing.T, doc string, paths []query.Path) {
	t.Helper()
	got := make([]gjson.Result, len(paths))
	query.GetFields(doc, paths, got)
	for i, p := range paths {
		want := p.GetString(doc)
		g := got[i]
		if g.Type != want.Type || g.Raw != want.Raw || g.Str != want.Str || g.Num != want.Num || g.Exists() != want.Exists() ||
			string(query.AppendKey(nil, g)) != string(query.AppendKey(nil, want)) {
			t.Errorf("GetFields(%q) at %q = %v %q, want %v %q (GetString)", doc, p, g.Type, g.Raw, want.Type, want.Raw)
		}
	}
}

func TestGetFieldsMatchesGet(t *testing.T) {
	paths := func(ps ...string) []query.Path {
		out := make([]query.Path, len(ps))
		for i, p := range ps {
			out[i] = query.MustPath(p)
		}
		return out
	}
	tests := []struct {
		doc   string
		paths []query.Path
	}{
		{`{"owner":"user-001","createdAt":1700000000000,"tags":["a","b"]}`, paths("owner", "createdAt")},
		{`{"n":1,"title":"t","tags":["x",{"y":[1,2]}],"owner":"u","status":"open","createdAt":5}`, paths("owner", "status", "createdAt")},
		{`{"a":1}`, paths("missing", "a")},
		{`{}`, paths("a")},
		{` { "a" : "x\"y" , "b" : -1.5e3 } `, paths("b", "a")},
		{`{"a":null,"b":true,"c":false}`, paths("a", "b", "c", "d")},
		{`{"a":1,"a":2}`, paths("a")},                   // the first of a name
		{`{"a\u0062":1,"a\\b":2}`, paths("ab", `a\b`)},  // escaped names
		{`{"a.b":1,"a":{"b":2}}`, paths(`a\.b`, "a.b")}, // a dot in a name, and a nested path
		{`{"lines":[{"sku":"x"},{"sku":"y"}]}`, paths("lines.1.sku", "lines.0")},
		{`{"c":{"city":"Oslo"},"d":[1,[2]]}`, paths("c", "d", "c.city", "c.zip")},
		{`{"s":"é\u00e9\ud83d\ude00"}`, paths("s")},
		{`{"*":1,"?":2,"@this":3,"#":4}`, paths("*", "?", "@this", "#")},
		{`[1,2]`, paths("0")},       // not an object: path by path
		{`{"a":1`, paths("a", "b")}, // cut short
		{`"text"`, paths("a")},
	}
	for _, tt := range tests {
		sameAsGet(t, tt.doc, tt.paths)
	}
}

func FuzzGetFields(f *testing.F) {
	f.Add(`{"owner":"u","createdAt":1,"x":[1,{"a":2}]}`, "owner", "x.1.a")
	f.Add(`{"a\u0062":1,"a":{"b":"c"}}`, "ab", "a.b")
	f.Add(`{"a":1,"a":2,"b":null}`, "a", "b")
	f.Fuzz(func(t *testing.T, doc, p1, p2 string) {
		if !gjson.Valid(doc) {
			return // stored documents are valid JSON
		}
		a, err1 := query.ParsePath(p1)
		b, err2 := query.ParsePath(p2)
		if err1 != nil || err2 != nil {
			return
		}
		sameAsGet(t, doc, []query.Path{a, b})
	})
}

// TestIndexBuilderOrder checks that an index filled by its builder holds
// the entries Put makes, in the same order: keys that tie on their first
// 16 bytes, shorter than 8 or 16 bytes, and with zero bytes among them.
func TestIndexBuilderOrder(t *testing.T) {
	fields := []query.Path{query.MustPath("a"), query.MustPath("b")}
	built, put := query.NewIndex(fields), query.NewIndex(fields)
	b := built.Builder()
	values := []string{`"user-0011"`, `"user-001"`, `"user-0012"`, `"u"`, `""`, `"a\u0000b"`, `"a\u0000"`, `1`, `-2.5`, `null`, `true`, `[1,"x"]`, `{"k":1}`}
	n := 0
	for i, a := range values {
		for j, bv := range values {
			if (i+j)%3 == 0 {
				continue
			}
			doc := `{"a":` + a + `,"b":` + bv + `}`
			id := string(rune('a'+i)) + string(rune('a'+j))
			if n%2 == 0 {
				id += "-long-id-past-sixteen-bytes"
			}
			b.Add(doc, id)
			put.Put(doc, id)
			n++
		}
	}
	b.Finish()
	var got, want []string
	built.Scan("", "\xff", false, func(e query.Entry) bool { got = append(got, e.Key+"|"+e.ID); return true })
	put.Scan("", "\xff", false, func(e query.Entry) bool { want = append(want, e.Key+"|"+e.ID); return true })
	if len(got) != n || len(want) != n {
		t.Fatalf("built %d entries, put %d, want %d", len(got), len(want), n)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("entry %d: built %q, put %q", i, got[i], want[i])
		}
	}
}
