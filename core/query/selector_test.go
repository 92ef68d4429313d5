package query_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hilodb/hilodb/core/query"
)

func TestSelectorSemantics(t *testing.T) {
	doc := `{"_id":"orders/1-A","status":"open","total":42,"rate":2.5,"paid":false,"note":null,
		"customer":{"city":"Oslo","tags":["vip","new"]},"lines":[{"sku":"a","qty":2},{"sku":"b","qty":5}],
		"tags":["red","green"],"a.b":1}`
	tests := []struct {
		sel  string
		want bool
	}{
		{`{}`, true},
		{`{"status":"open"}`, true},
		{`{"status":"closed"}`, false},
		{`{"_id":"orders/1-A"}`, true},
		{`{"customer.city":"Oslo"}`, true},
		{`{"customer":{"city":"Oslo"}}`, true},
		{`{"lines.1.sku":"b"}`, true},
		{`{"a\\.b":1}`, true},
		{`{"total":{"$gt":40,"$lt":50}}`, true},
		{`{"total":{"$gte":42}}`, true},
		{`{"total":{"$gt":42}}`, false},
		{`{"total":{"$lte":42}}`, true},
		{`{"total":{"$gt":"a"}}`, false}, // a number is not in a range of strings
		{`{"status":{"$gt":5}}`, false},  // nor a string in a range of numbers
		{`{"status":{"$gt":"a"}}`, true},
		{`{"paid":{"$lt":true}}`, true}, // booleans are one kind
		{`{"total":{"$ne":41}}`, true},
		{`{"missing":{"$ne":1}}`, true},
		{`{"missing":{"$eq":null}}`, false},
		{`{"note":null}`, true},
		{`{"note":{"$exists":true}}`, true},
		{`{"missing":{"$exists":false}}`, true},
		{`{"status":{"$in":["open","closed"]}}`, true},
		{`{"missing":{"$in":[null]}}`, false},
		{`{"status":{"$nin":["open"]}}`, false},
		{`{"missing":{"$nin":["open"]}}`, true},
		{`{"total":{"$type":"number"}}`, true},
		{`{"paid":{"$type":"boolean"}}`, true},
		{`{"customer":{"$type":"object"}}`, true},
		{`{"status":{"$regex":"^op"}}`, true},
		{`{"status":{"$regex":"^OP"}}`, false},
		{`{"total":{"$regex":"4"}}`, false},
		{`{"tags":{"$size":2}}`, true},
		{`{"tags":{"$all":["green","red"]}}`, true},
		{`{"tags":{"$all":["green","blue"]}}`, false},
		{`{"tags":"red"}`, false}, // equality is with the whole array
		{`{"tags":["red","green"]}`, true},
		{`{"tags":{"$elemMatch":{"$eq":"green"}}}`, true},
		{`{"lines":{"$elemMatch":{"sku":"b","qty":{"$gt":4}}}}`, true},
		{`{"lines":{"$elemMatch":{"sku":"a","qty":{"$gt":4}}}}`, false},
		{`{"total":{"$not":{"$gt":50}}}`, true},
		{`{"$not":{"status":"open"}}`, false},
		{`{"$or":[{"status":"closed"},{"total":42}]}`, true},
		{`{"$and":[{"status":"open"},{"total":41}]}`, false},
		{`{"$nor":[{"status":"closed"},{"total":41}]}`, true},
		{`{"rate":{"$in":[2.5]}}`, true},
		{`{"customer":{"$eq":{"city":"Oslo","tags":["vip","new"]}}}`, true},
	}
	for _, tt := range tests {
		s, err := query.ParseSelector([]byte(tt.sel))
		if err != nil {
			t.Errorf("%s: %v", tt.sel, err)
			continue
		}
		if got := s.MatchString(doc); got != tt.want {
			t.Errorf("%s: match %v, want %v", tt.sel, got, tt.want)
		}
	}
}

func TestSelectorErrors(t *testing.T) {
	for _, sel := range []string{
		`[]`, `1`, `{"a":{"$bogus":1}}`, `{"$bogus":[]}`, `{"$or":{}}`, `{"$or":[]}`, `{"$or":[1]}`,
		`{"a":{"$in":1}}`, `{"a":{"$exists":1}}`, `{"a":{"$type":"int"}}`, `{"a":{"$regex":"("}}`,
		`{"a":{"$size":-1}}`, `{"a":{"$size":1.5}}`, `{"a":{"$elemMatch":1}}`, `{"a":{"$not":1}}`,
		`{"a":{"$gt":1,"b":1}}`, `{"":1}`, `{"a..b":1}`, `{"a\\":1}`, `{"a":{"b":{"$or":[]}}}`, `{"a":`,
	} {
		if _, err := query.ParseSelector([]byte(sel)); !errors.Is(err, query.ErrBadQuery) {
			t.Errorf("%s: err %v, want ErrBadQuery", sel, err)
		}
	}
}

// TestSelectorBounds: a selector past the bounds is refused, not run.
func TestSelectorBounds(t *testing.T) {
	deep := `{"a":1}`
	for i := 0; i < 40; i++ {
		deep = `{"$not":` + deep + `}`
	}
	big := `{"a":{"$in":[` + fmt.Sprint(0)
	for i := 1; i < 5000; i++ {
		big += fmt.Sprint(",", i)
	}
	big += `]}}`
	for _, sel := range []string{deep, big} {
		if _, err := query.ParseSelector([]byte(sel)); !errors.Is(err, query.ErrBadQuery) {
			t.Errorf("selector of %d bytes: err %v, want ErrBadQuery", len(sel), err)
		}
	}
}

func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"$or":[{"a":{"$gt":1}},{"b.c":{"$regex":"x"}}]}`, `{"t":{"$elemMatch":{"$in":[1,2]}}}`} {
		f.Add(s, `{"a":2,"b":{"c":"xy"},"t":[1]}`)
	}
	f.Fuzz(func(t *testing.T, sel, doc string) {
		s, err := query.ParseSelector([]byte(sel))
		if err != nil {
			if !errors.Is(err, query.ErrBadQuery) {
				t.Fatalf("error %v does not wrap ErrBadQuery", err)
			}
			return
		}
		s.MatchString(doc) // must not panic, whatever the document
		s.Fields()
	})
}

func FuzzParse(f *testing.F) {
	f.Add(`{"selector":{"a":1},"sort":["a",{"b":"desc"}],"limit":5,"skip":1,"fields":["a"]}`)
	f.Fuzz(func(t *testing.T, q string) {
		pq, err := query.Parse([]byte(q))
		if err != nil {
			if !errors.Is(err, query.ErrBadQuery) {
				t.Fatalf("error %v does not wrap ErrBadQuery", err)
			}
			return
		}
		pq.Project([]byte(`{"a":{"b":1},"c":[1,2]}`))
		pq.SortKey([]byte(`{"_id":"x","a":1}`))
	})
}

func ExampleParseSelector() {
	sel, _ := query.ParseSelector([]byte(`{"status":"open","total":{"$gte":10}}`))
	fmt.Println(sel.MatchString(`{"status":"open","total":12}`))
	fmt.Println(sel.MatchString(`{"status":"open","total":"12"}`))
	// Output:
	// true
	// false
}

func ExampleQuery_Project() {
	q, _ := query.Parse([]byte(`{"selector":{},"fields":["_id","customer.city"]}`))
	fmt.Println(string(q.Project([]byte(`{"_id":"orders/1-A","customer":{"city":"Oslo","zip":"0150"},"total":3}`))))
	// Output:
	// {"_id":"orders/1-A","customer":{"city":"Oslo"}}
}

func TestSelectorCovers(t *testing.T) {
	fields := []query.Path{mustPath(t, "k"), mustPath(t, "v")}
	tests := []struct {
		sel  string
		eq   int
		rng  bool
		want bool
	}{
		{`{"k":"x"}`, 1, false, true},
		{`{"k":{"$eq":3}}`, 1, false, true},
		{`{"k":null,"v":{"$gte":1,"$lt":9}}`, 1, true, true},
		{`{"k":{"$gt":"a"}}`, 0, true, true},
		{`{"$and":[{"k":"x"},{"v":{"$lt":2}}]}`, 1, true, true}, // $and joins the top level
		{`{"k":"x","v":{"$gt":1}}`, 1, false, false},            // the range not read
		{`{"k":"x","other":1}`, 1, false, false},
		{`{"k":"x","v":{"$gte":[1]}}`, 1, true, false},
		{`{"k":[1]}`, 1, false, false},
		{`{"k":{"a":1}}`, 1, false, false},
		{`{"k":"x","v":{"$ne":1}}`, 1, true, false},
		{`{"k":"x","v":{"$gt":1,"$exists":true}}`, 1, true, false},
		{`{"k":{"$eq":1,"$gte":0}}`, 1, false, false},
		{`{"k":{"$in":["x"]}}`, 1, false, false},
		{`{"v":3}`, 0, true, false},
		{`{}`, 0, false, false},
		{`{"$or":[{"k":1},{"k":2}]}`, 0, false, false},
	}
	for _, tt := range tests {
		sel, err := query.ParseSelector([]byte(tt.sel))
		if err != nil {
			t.Fatalf("%s: %v", tt.sel, err)
		}
		if got := sel.Covers(fields, query.IndexPlan{Equality: tt.eq, Range: tt.rng}); got != tt.want {
			t.Errorf("%s (equality %d, range %v): covers %v, want %v", tt.sel, tt.eq, tt.rng, got, tt.want)
		}
	}
}

func mustPath(t *testing.T, s string) query.Path {
	t.Helper()
	p, err := query.ParsePath(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
