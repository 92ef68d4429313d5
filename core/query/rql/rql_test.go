package rql_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/hilodb/hilodb/core/query"
	"github.com/hilodb/hilodb/core/query/rql"
)

var docs = map[string]string{
	"a": `{"_id":"orders/1","Status":"Shipped","Total":10,"Tags":["red","blue"],"Lines":[{"Sku":"s1"},{"Sku":"s2"}],"ShipTo":{"City":"Oslo"}}`,
	"b": `{"_id":"orders/2","Status":"shipped","Total":20,"Tags":["red"],"Lines":[{"Sku":"s3"}],"ShipTo":{"City":"Bergen"}}`,
	"c": `{"_id":"orders/3","Status":"Pending","Total":30.5,"Name":"Zed"}`,
	"d": `{"_id":"orders/4","Status":null,"Total":"40"}`,
}

func TestWhere(t *testing.T) {
	tests := []struct {
		rql    string
		params string
		want   string // the documents matched, in the order of docs' keys
	}{
		{"from Orders", "", "abcd"},
		{"from 'Orders' where Status = $p0", `{"p0":"SHIPPED"}`, "ab"},
		{"from Orders where exact(Status = $p0)", `{"p0":"Shipped"}`, "a"},
		{"from Orders where Status == 'pending'", "", "c"},
		{"from Orders where Status != 'shipped'", "", "cd"},
		{"from Orders where Status <> 'shipped'", "", "cd"},
		{"from Orders where Total > 10", "", "bc"},
		{"from Orders where Total >= 10 and Total < 30", "", "ab"},
		{"from Orders where Total <= $p0", `{"p0":20}`, "ab"},
		{"from Orders where Total between 15 and 30.5", "", "bc"},
		{"from Orders where Status in ('pending', $p0)", `{"p0":"SHIPPED"}`, "abc"},
		{"from Orders where Status in ($p0)", `{"p0":["Pending"]}`, "c"},
		{"from Orders where Tags in ('blue')", "", "a"},
		{"from Orders where Tags = 'RED'", "", "ab"},
		{"from Orders where Tags all in ('red', 'blue')", "", "a"},
		{"from Orders where Tags all in ($p0)", `{"p0":["red"]}`, "ab"},
		{"from Orders where startsWith(Status, 'ship')", "", "ab"},
		{"from Orders where endsWith(Status, $p0)", `{"p0":"ING"}`, "c"},
		{"from Orders where exists(Name)", "", "c"},
		{"from Orders where not exists(Name)", "", "abd"},
		{"from Orders where true and not Status = 'shipped'", "", "cd"},
		{"from Orders where regex(Status, '^S')", "", "ab"},
		{"from Orders where exact(regex(Status, '^S'))", "", "a"},
		{"from Orders where Status = null", "", "d"},
		{"from Orders where (Status = 'pending' or Total = 10) and exists(Total)", "", "ac"},
		{"from Orders where Status = 'pending' or Total = 10 and Status = 'x'", "", "c"},
		{"from Orders where ShipTo.City = 'oslo'", "", "a"},
		{"from Orders as o where o.ShipTo.City = 'bergen'", "", "b"},
		{"from Orders where Lines[].Sku = 's3'", "", "b"},
		{"from Orders where id() = 'ORDERS/2'", "", "b"},
		{"from Orders where startsWith(id(), 'orders/')", "", "abcd"},
		{"from Orders where Status in ()", "", ""},
		{"FROM Orders WHERE Total > 25 ORDER BY Total DESC", "", "c"},
	}
	for _, tt := range tests {
		t.Run(tt.rql, func(t *testing.T) {
			params := map[string]json.RawMessage{}
			if tt.params != "" {
				if err := json.Unmarshal([]byte(tt.params), &params); err != nil {
					t.Fatal(err)
				}
			}
			q, err := rql.Parse(tt.rql, params)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			cq, err := q.Compile(nil)
			if err != nil {
				t.Fatalf("Compile: %v (selector %s)", err, q.Selector)
			}
			got := ""
			for _, k := range []string{"a", "b", "c", "d"} {
				if cq.Selector.Match([]byte(docs[k])) {
					got += k
				}
			}
			if got != tt.want {
				t.Errorf("matched %q, want %q (selector %s)", got, tt.want, q.Selector)
			}
		})
	}
}

func TestClauses(t *testing.T) {
	tests := []struct {
		rql  string
		want rql.Query
	}{
		{"from Orders", rql.Query{Collection: "Orders", Limit: -1}},
		{"from @all_docs", rql.Query{AllDocs: true, Limit: -1}},
		{"from Orders order by Total as long desc, Name", rql.Query{Collection: "Orders", Limit: -1,
			Sort:   []rql.Sort{{Field: "Total", Desc: true, As: "long"}, {Field: "Name"}},
			Fields: []string{"Total", "Name"}}},
		{"from Orders order by Name as alphaNumeric asc", rql.Query{Collection: "Orders", Limit: -1,
			Sort: []rql.Sort{{Field: "Name", As: "alphaNumeric"}}, Fields: []string{"Name"}}},
		{"from Orders select Name, ShipTo.City as City, id() as Key", rql.Query{Collection: "Orders", Limit: -1,
			Select: []rql.Field{{Path: "Name", Alias: "Name"}, {Path: "ShipTo.City", Alias: "City"}, {Path: "_id", Alias: "Key"}}}},
		{"from 'Users' order by name select name, @metadata.@nested-object-types as __PROJECTED_NESTED_OBJECT_TYPES__", rql.Query{Collection: "Users", Limit: -1,
			Sort: []rql.Sort{{Field: "name"}}, Fields: []string{"name"},
			Select: []rql.Field{{Path: "name", Alias: "name"}, {Path: "@metadata.@nested-object-types", Alias: "__PROJECTED_NESTED_OBJECT_TYPES__"}}}},
		{"from Orders include Customer, 'Lines[].Product'", rql.Query{Collection: "Orders", Limit: -1,
			Include: []string{"Customer", "Lines[].Product"}}},
		{"from Orders limit $p0, $p1", rql.Query{Collection: "Orders", Offset: 5, Limit: 10}},
		{"from Orders limit 3 offset 2", rql.Query{Collection: "Orders", Offset: 2, Limit: 3}},
		{"from Orders limit $p0, $p2", rql.Query{Collection: "Orders", Offset: 5, Limit: -1}},
		{"from Orders limit 0", rql.Query{Collection: "Orders", Limit: 0}},
		{"from Orders where Status = 1 and Total > 2", rql.Query{Collection: "Orders", Limit: -1, Fields: []string{"Status", "Total"}}},
	}
	params := map[string]json.RawMessage{"p0": json.RawMessage("5"), "p1": json.RawMessage("10"), "p2": json.RawMessage("null")}
	for _, tt := range tests {
		t.Run(tt.rql, func(t *testing.T) {
			q, err := rql.Parse(tt.rql, params)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			q.Selector = nil
			tt.want.Selector = nil
			if !reflect.DeepEqual(*q, tt.want) {
				t.Errorf("got %+v, want %+v", *q, tt.want)
			}
		})
	}
}

func TestIndexName(t *testing.T) {
	tests := []struct{ rql, want string }{
		{"from Orders", "Orders"},
		{"from Orders where Status = 'x'", "Auto/Orders/ByStatus"},
		{"from Orders where Status = 'x' and id() = 'a' order by Total", "Auto/Orders/ByStatusAndTotal"},
		{"from @all_docs where Name = 1", "Auto/AllDocs/ByName"},
	}
	for _, tt := range tests {
		q, err := rql.Parse(tt.rql, nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.rql, err)
		}
		if got := q.IndexName(); got != tt.want {
			t.Errorf("%s: IndexName %q, want %q", tt.rql, got, tt.want)
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		rql       string
		notServed bool
	}{
		{"", false},
		{"select * from Orders", false},
		{"from", false},
		{"from Orders where", false},
		{"from Orders where Status = ", false},
		{"from Orders where Status = $p9", false},
		{"from Orders where (Status = 1", false},
		{"from Orders where Status ~ 1", false},
		{"from Orders where 'unclosed", false},
		{"from Orders limit -1", false},
		{"from Orders limit 'x'", false},
		{"from Orders where regex(Status, '(')", false},
		{"from Orders order by", false},
		{"from Orders order by Total as float", false},
		{"from Orders junk junk", false},
		{"from Orders where Status = 1 !", false},
		{"from index 'Orders/ByCompany'", true},
		{"declare function f() {}", true},
		{"from Orders group by Company", true},
		{"from Orders where search(Name, 'x')", true},
		{"from Orders where lucene(Name, 'x')", true},
		{"from Orders where spatial.within(x, y)", true},
		{"from Orders load Company as c", true},
		{"from Orders select distinct Name", true},
		{"from Orders select { Name: o.Name }", true},
		{"from Orders order by score()", true},
		{"from Orders order by random()", true},
		{"from Orders include counters('likes')", true},
		{"from Orders include timings()", true},
		{"from Orders update { this.x = 1 }", true},
		{"from Orders filter Total > 1", true},
		{"from @revisions", true},
	}
	for _, tt := range tests {
		t.Run(tt.rql, func(t *testing.T) {
			_, err := rql.Parse(tt.rql, nil)
			var re *rql.Error
			if !errors.As(err, &re) {
				t.Fatalf("Parse: %v, want an *rql.Error", err)
			}
			if !errors.Is(err, query.ErrBadQuery) {
				t.Errorf("%v does not wrap query.ErrBadQuery", err)
			}
			if re.NotServed != tt.notServed {
				t.Errorf("NotServed = %v, want %v (%v)", re.NotServed, tt.notServed, err)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"from Orders where Status = $p0 and Total between 1 and 2 order by Total as long desc limit $p1, $p2",
		"from Orders as o where not (startsWith(o.Name, 'a') or exists(Tags)) select Name as n include Company",
		"from @all_docs where Tags all in ($p0) and Lines[].Sku in ('x', 1, null)",
		"from 'Orders' where exact(regex(Name, '^a.*'))",
	} {
		f.Add(s)
	}
	params := map[string]json.RawMessage{"p0": json.RawMessage(`["a",1]`), "p1": json.RawMessage("1"), "p2": json.RawMessage("2")}
	f.Fuzz(func(t *testing.T, text string) {
		q, err := rql.Parse(text, params)
		if err != nil {
			if !errors.Is(err, query.ErrBadQuery) {
				t.Fatalf("Parse(%q): %v does not wrap ErrBadQuery", text, err)
			}
			return
		}
		if _, err := q.Compile([]byte(`{"_id":{"$gt":""}}`)); err != nil && !errors.Is(err, query.ErrBadQuery) {
			t.Fatalf("Compile(%q): %v", text, err)
		}
	})
}
