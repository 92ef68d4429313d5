package syncserver_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/syncserver"
)

// ravenSeed stores orders and companies through bulk_docs.
func ravenSeed(t *testing.T, base string) {
	t.Helper()
	cmds := []string{}
	orders := []string{
		`"orders/1-A", {"Company":"companies/1-A","Status":"Shipped","Total":10,"Tags":["red","blue"],"Lines":[{"Product":"products/1-A"}],"Code":"a10","@metadata":{"@collection":"Orders"}}`,
		`"orders/2-A", {"Company":"companies/2-A","Status":"shipped","Total":25,"Tags":["red"],"Code":"a9","@metadata":{"@collection":"Orders"}}`,
		`"orders/3-A", {"Company":"companies/1-A","Status":"Pending","Total":40,"Code":"a100","@metadata":{"@collection":"Orders"}}`,
		`"custom-id", {"Status":"Pending","Total":5,"Code":"b1","@metadata":{"@collection":"Orders"}}`,
		`"orders/9", {"Status":"Pending","Total":7,"Code":"b2"}`,
		`"companies/1-A", {"Name":"Acme","@metadata":{"@collection":"Companies"}}`,
		`"companies/2-A", {"Name":"Bolt","@metadata":{"@collection":"Companies"}}`,
		`"products/1-A", {"Name":"Pen","@metadata":{"@collection":"Products"}}`,
	}
	for _, o := range orders {
		id, doc, _ := strings.Cut(o, ", ")
		cmds = append(cmds, `{"Type":"PUT","Id":`+id+`,"ChangeVector":null,"Document":`+doc+`}`)
	}
	if status, b := do(t, "POST", base+"/bulk_docs", `{"Commands":[`+strings.Join(cmds, ",")+`]}`, ravenClient); status != 201 {
		t.Fatalf("bulk_docs: %d %v", status, b)
	}
}

func ravenQuery(t *testing.T, base, rql string, params map[string]any) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"Query": rql, "QueryParameters": params})
	return do(t, "POST", base+"/queries?queryHash=1", string(body), ravenClient)
}

func resultIDs(res map[string]any) []string {
	ids := []string{}
	rs, _ := res["Results"].([]any)
	for _, r := range rs {
		m, _ := r.(map[string]any)
		md, _ := m["@metadata"].(map[string]any)
		id, _ := md["@id"].(string)
		ids = append(ids, id)
	}
	return ids
}

func TestRavenQueries(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL + "/databases/shop"
	ravenSeed(t, base)
	tests := []struct {
		rql    string
		params map[string]any
		ids    string // the result ids, in order
		total  float64
		index  string
	}{
		{"from Orders", nil, "custom-id orders/1-A orders/2-A orders/3-A orders/9", 5, "Orders"},
		{"from 'orders' where Status = $p0", map[string]any{"p0": "SHIPPED"}, "orders/1-A orders/2-A", 2, "Auto/orders/ByStatus"},
		{"from Orders where exact(Status = $p0)", map[string]any{"p0": "shipped"}, "orders/2-A", 1, "Auto/Orders/ByStatus"},
		{"from Orders where Total > 9 and Total <= 40 order by Total desc", nil, "orders/3-A orders/2-A orders/1-A", 3, "Auto/Orders/ByTotal"},
		{"from Orders where Total between 5 and 10 order by Total as long", nil, "custom-id orders/9 orders/1-A", 3, "Auto/Orders/ByTotal"},
		{"from Orders where Status in ($p0) and not Total = 5", map[string]any{"p0": []any{"pending"}}, "orders/3-A orders/9", 2, "Auto/Orders/ByStatusAndTotal"},
		{"from Orders where Tags all in ('red', 'blue')", nil, "orders/1-A", 1, "Auto/Orders/ByTags"},
		{"from Orders where Tags in ('red')", nil, "orders/1-A orders/2-A", 2, "Auto/Orders/ByTags"},
		{"from Orders where startsWith(Status, 'ship') or endsWith(Code, '00')", nil, "orders/1-A orders/2-A orders/3-A", 3, "Auto/Orders/ByStatusAndCode"},
		{"from Orders where exists(Tags) and regex(Code, '^a1')", nil, "orders/1-A", 1, "Auto/Orders/ByTagsAndCode"},
		{"from Orders where Status != 'pending'", nil, "orders/1-A orders/2-A", 2, "Auto/Orders/ByStatus"},
		{"from Orders where (Status = 'pending' or Total = 10) and Total < 8", nil, "custom-id orders/9", 2, "Auto/Orders/ByStatusAndTotal"},
		{"from Orders order by Code as alphaNumeric", nil, "orders/2-A orders/1-A orders/3-A custom-id orders/9", 5, "Auto/Orders/ByCode"},
		{"from Orders order by Total limit $p0, $p1", map[string]any{"p0": 1, "p1": 2}, "orders/9 orders/1-A", 5, "Auto/Orders/ByTotal"},
		{"from Orders order by Code as alphaNumeric desc limit 2 offset 1", nil, "custom-id orders/3-A", 5, "Auto/Orders/ByCode"},
		{"from Orders limit 0, 0", nil, "", 5, "Orders"},
		{"from Orders where id() = 'ORDERS/2-A'", nil, "orders/2-A", 1, "Orders"},
		{"from @all_docs where Name = 'pen'", nil, "products/1-A", 1, "Auto/AllDocs/ByName"},
		{"from Companies as c where c.Name = 'acme'", nil, "companies/1-A", 1, "Auto/Companies/ByName"},
	}
	for _, tt := range tests {
		t.Run(tt.rql, func(t *testing.T) {
			status, res := ravenQuery(t, base, tt.rql, tt.params)
			if status != 200 {
				t.Fatalf("status %d: %v", status, res)
			}
			if got := strings.Join(resultIDs(res), " "); got != tt.ids {
				t.Errorf("ids %q, want %q", got, tt.ids)
			}
			if res["TotalResults"] != tt.total || res["IndexName"] != tt.index || res["IsStale"] != false || res["SkippedResults"] != 0.0 {
				t.Errorf("TotalResults %v IndexName %v IsStale %v SkippedResults %v, want %v %q false 0",
					res["TotalResults"], res["IndexName"], res["IsStale"], res["SkippedResults"], tt.total, tt.index)
			}
			if _, ok := res["ResultEtag"].(float64); !ok {
				t.Errorf("no ResultEtag: %v", res)
			}
		})
	}
}

func TestRavenQueryProjectionsAndIncludes(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL + "/databases/shop"
	ravenSeed(t, base)
	status, res := ravenQuery(t, base, "from Orders where Total = 10 select Status, Company as c, Missing include Company, Lines[].Product", nil)
	if status != 200 {
		t.Fatalf("status %d: %v", status, res)
	}
	rs := res["Results"].([]any)
	if len(rs) != 1 {
		t.Fatalf("results %v", rs)
	}
	got := rs[0].(map[string]any)
	md := got["@metadata"].(map[string]any)
	delete(got, "@metadata")
	if want := map[string]any{"Status": "Shipped", "c": "companies/1-A", "Missing": nil}; !reflect.DeepEqual(got, want) {
		t.Errorf("projection %v, want %v", got, want)
	}
	if md["@id"] != "orders/1-A" || md["@projection"] != true {
		t.Errorf("projection metadata %v", md)
	}
	inc := res["Includes"].(map[string]any)
	if len(inc) != 2 || inc["companies/1-A"] == nil || inc["products/1-A"] == nil {
		t.Errorf("includes %v, want companies/1-A and products/1-A", inc)
	}
	// The same query as GET ?query=.
	q := url.Values{"query": {"from Orders where Status = $s"}, "parameters": {`{"s":"pending"}`}}
	status, res = do(t, "GET", base+"/queries?"+q.Encode(), "", ravenClient)
	if status != 200 || strings.Join(resultIDs(res), " ") != "custom-id orders/3-A orders/9" {
		t.Errorf("GET queries: %d %v", status, res)
	}
}

func TestRavenQueryErrors(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL + "/databases/shop"
	tests := []struct {
		rql, want string
	}{
		{"from Orders where", "expected a field"},
		{"from Orders where Status = $p0", "not in QueryParameters"},
		{"select * from Orders", "expected from"},
		{"from index 'Orders/ByCompany'", "not served"},
		{"from Orders group by Company select count()", "not served"},
		{"from Orders where search(Name, 'x')", "not served"},
		{"declare function f(o) { return o } from Orders as o select f(o)", "not served"},
		{"from Orders include counters()", "not served"},
		{"from Orders order by random()", "not served"},
	}
	for _, tt := range tests {
		status, res := ravenQuery(t, base, tt.rql, nil)
		msg, _ := res["Message"].(string)
		if status != 400 || res["Code"] != "bad_query" || errNum(res) != 1912 ||
			res["Type"] != "Raven.Client.Exceptions.InvalidQueryException" || !strings.Contains(msg, tt.want) {
			t.Errorf("%s: %d %v, want 400 bad_query (1912) InvalidQueryException saying %q", tt.rql, status, res, tt.want)
		}
	}
	if status, res := do(t, "POST", base+"/queries", `{"Query": 5}`, ravenClient); status != 400 || res["Code"] != "bad_query" {
		t.Errorf("a malformed body: %d %v", status, res)
	}
	for _, route := range []string{"indexes", "revisions?id=a", "counters?docId=a", "timeseries?docId=a", "subscriptions", "queries/test"} {
		status, res := do(t, "GET", base+"/"+route, "", ravenClient)
		msg, _ := res["Message"].(string)
		if status != 501 || !strings.Contains(msg, "not served") || res["Type"] != "Raven.Client.Exceptions.Routing.RouteNotFoundException" {
			t.Errorf("%s: %d %v, want 501 saying it is not served", route, status, res)
		}
	}
}

func TestRavenMultiGetStartsWithIdentitiesStats(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL + "/databases/shop"
	ravenSeed(t, base)
	q, _ := json.Marshal(`{"Query":"from Orders where Status = $p0","QueryParameters":{"p0":"shipped"}}`)
	mg := `{"Requests":[
		{"Url":"/databases/shop/docs","Query":"?&id=companies/1-A&id=nope","Method":"GET","Headers":{}},
		{"Url":"/databases/shop/queries","Query":"?queryHash=1","Method":"POST","Headers":{},"Content":` + string(q) + `},
		{"Url":"/databases/shop/docs","Query":"?startsWith=orders/&pageSize=2&start=1","Headers":{}},
		{"Url":"/databases/shop/docs","Query":"?&id=nope","Method":"GET","Headers":{}}]}`
	status, res := do(t, "POST", base+"/multi_get", mg, ravenClient)
	if status != 200 {
		t.Fatalf("multi_get: %d %v", status, res)
	}
	rs := res["Results"].([]any)
	if len(rs) != 4 {
		t.Fatalf("multi_get results %v", rs)
	}
	load := rs[0].(map[string]any)
	if load["StatusCode"] != 200.0 || fmt.Sprint(resultIDs(load["Result"].(map[string]any))) != "[companies/1-A ]" {
		t.Errorf("lazy load: %v", load)
	}
	query := rs[1].(map[string]any)
	if qr := query["Result"].(map[string]any); query["StatusCode"] != 200.0 || qr["TotalResults"] != 2.0 {
		t.Errorf("lazy query: %v", query)
	}
	sw := rs[2].(map[string]any)
	if got := fmt.Sprint(resultIDs(sw["Result"].(map[string]any))); got != "[orders/2-A orders/3-A]" {
		t.Errorf("lazy startsWith: %s, want [orders/2-A orders/3-A]", got)
	}
	// A lazy load of one missing document: the client parses a body.
	if missing := rs[3].(map[string]any); missing["StatusCode"] != 404.0 || fmt.Sprint(missing["Result"]) != "map[Includes:map[] Results:[<nil>]]" {
		t.Errorf("lazy load of a missing document: %v", missing)
	}

	for _, tt := range []struct{ query, want string }{
		{"startsWith=orders/", "[orders/1-A orders/2-A orders/3-A orders/9]"},
		{"startsWith=orders/&matches=*-A&exclude=2*", "[orders/1-A orders/3-A]"},
		{"startsWith=orders/&matches=?-a|9", "[orders/1-A orders/2-A orders/3-A orders/9]"},
		{"startsWith=orders/&startAfter=orders/2-A", "[orders/3-A orders/9]"},
		{"startsWith=orders/&start=3&pageSize=5", "[orders/9]"},
		{"startsWith=zzz", "[]"},
	} {
		status, res := do(t, "GET", base+"/docs?"+tt.query, "", ravenClient)
		if got := fmt.Sprint(resultIDs(res)); status != 200 || got != tt.want {
			t.Errorf("docs?%s: %d %s, want %s", tt.query, status, got, tt.want)
		}
	}

	do(t, "POST", base+"/identity/next?name=users", "", ravenClient)
	do(t, "POST", base+"/identity/next?name=users", "", ravenClient)
	if status, res := do(t, "GET", base+"/debug/identities", "", ravenClient); status != 200 || res["users|"] != 2.0 {
		t.Errorf("debug/identities: %d %v, want users| = 2", status, res)
	}
	status, res = do(t, "GET", base+"/collections/stats", "", ravenClient)
	want := map[string]any{"Orders": 4.0, "orders": 1.0, "Companies": 2.0, "Products": 1.0}
	if status != 200 || res["CountOfDocuments"] != 8.0 || !reflect.DeepEqual(res["Collections"], want) {
		t.Errorf("collections/stats: %d %v, want 8 documents in %v", status, res, want)
	}
}

// TestRavenQueriesDefineAutoIndexes: a dynamic query's automatic index
// (RavenDB's Auto/Orders/ByStatus) is a hilodb index, defined for the
// database as index.define defines one, so the websocket lists it and
// every replica builds it; a GET query defines nothing.
func TestRavenQueriesDefineAutoIndexes(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	base := ts.hs.URL + "/databases/shop"
	ravenSeed(t, base)
	for range 2 {
		status, res := ravenQuery(t, base, "from Orders where Status = $p0 order by Total", map[string]any{"p0": "pending"})
		if status != 200 || res["IndexName"] != "Auto/Orders/ByStatusAndTotal" {
			t.Fatalf("query: %d %v", status, res)
		}
	}
	if status, res := do(t, "GET", base+"/queries?query="+url.QueryEscape("from Companies where Name = 'acme'"), "", ravenClient); status != 200 || res["IndexName"] != "Auto/Companies/ByName" {
		t.Fatalf("GET query: %d %v", status, res)
	}
	if status, res := ravenQuery(t, base, "from Orders", nil); status != 200 || res["IndexName"] != "Orders" {
		t.Fatalf("query without fields: %d %v", status, res)
	}
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	got := r.call(`{"id":2,"op":"index.list"}`)
	if want := "[map[collection:Orders indexes:[map[fields:[Status Total] name:Auto.Orders.ByStatusAndTotal]]]]"; fmt.Sprint(got["indexes"]) != want {
		t.Fatalf("the websocket's list: %v, want %s", got["indexes"], want)
	}
}
