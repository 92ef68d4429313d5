package query_test

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"testing"

	"github.com/hilodb/hilodb/core/query"
	"github.com/tidwall/gjson"
)

// ordered lists values in the collation's order, equal ones together.
var ordered = [][]string{
	{``}, // missing
	{`null`},
	{`false`},
	{`true`},
	{`-1e300`}, {`-2`}, {`-1.5`}, {`0`, `-0`, `0.0`}, {`1e-300`}, {`1`, `1.0`}, {`2`}, {`1e300`},
	{`""`}, {`"\u0000"`}, {`"A"`}, {`"B"`}, {`"a"`}, {`"a\u0000"`}, {`"ab"`}, {`"b"`}, {`"é"`},
	{`[]`}, {`[null]`}, {`[false]`}, {`[1]`}, {`[1,null]`}, {`[1,2]`}, {`[2]`}, {`["a"]`}, {`[[]]`}, {`[{}]`},
	{`{}`}, {`{"a":null}`}, {`{"a":1}`}, {`{"a":1,"b":0}`}, {`{"a":2}`}, {`{"b":0}`},
}

func value(s string) gjson.Result {
	if s == "" {
		return gjson.Result{}
	}
	return gjson.Parse(s)
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func TestCollationOrder(t *testing.T) {
	for i, gi := range ordered {
		for j, gj := range ordered {
			for _, a := range gi {
				for _, b := range gj {
					want := sign(i - j)
					if got := sign(query.Compare(value(a), value(b))); got != want {
						t.Errorf("Compare(%s, %s) = %d, want %d", a, b, got, want)
					}
					ka, kb := query.AppendKey(nil, value(a)), query.AppendKey(nil, value(b))
					if got := sign(bytes.Compare(ka, kb)); got != want {
						t.Errorf("keys of %s and %s compare %d, want %d", a, b, got, want)
					}
				}
			}
		}
	}
}

func randomJSON(r *rand.Rand, depth int) any {
	switch r.Intn(8) {
	case 0:
		return nil
	case 1:
		return r.Intn(2) == 0
	case 2, 3:
		return float64(r.Intn(9)-4) / 2
	case 4, 5:
		return string([]byte{"ab\x00é"[r.Intn(4)], "ab\x00"[r.Intn(3)]}[:1+r.Intn(2)])
	case 6:
		if depth < 3 {
			a := make([]any, r.Intn(3))
			for i := range a {
				a[i] = randomJSON(r, depth+1)
			}
			return a
		}
	}
	if depth < 3 {
		m := map[string]any{}
		for i := r.Intn(3); i > 0; i-- {
			m[string(rune('a'+r.Intn(3)))] = randomJSON(r, depth+1)
		}
		return m
	}
	return 1.0
}

// TestKeysOrderAsCompare: for random values, and tuples of them, the keys'
// byte order is Compare's order.
func TestKeysOrderAsCompare(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		a, _ := json.Marshal(randomJSON(r, 0))
		b, _ := json.Marshal(randomJSON(r, 0))
		va, vb := gjson.ParseBytes(a), gjson.ParseBytes(b)
		want := sign(query.Compare(va, vb))
		if got := sign(bytes.Compare(query.AppendKey(nil, va), query.AppendKey(nil, vb))); got != want {
			t.Fatalf("%s vs %s: keys %d, Compare %d", a, b, got, want)
		}
		if sign(query.Compare(vb, va)) != -want {
			t.Fatalf("Compare(%s, %s) is not antisymmetric", a, b)
		}
		// Tuples: (a, x) against (b, y) order by a, b first.
		x, _ := json.Marshal(randomJSON(r, 0))
		ta := query.AppendKey(query.AppendKey(nil, va), gjson.ParseBytes(x))
		tb := query.AppendKey(query.AppendKey(nil, vb), gjson.ParseBytes(x))
		if want != 0 && sign(bytes.Compare(ta, tb)) != want {
			t.Fatalf("tuples starting %s and %s order wrong", a, b)
		}
	}
}

func FuzzAppendKey(f *testing.F) {
	for _, g := range ordered {
		for _, a := range g {
			f.Add(a, `"x"`)
		}
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if !gjson.Valid(a) || !gjson.Valid(b) {
			return
		}
		va, vb := gjson.Parse(a), gjson.Parse(b)
		want := sign(query.Compare(va, vb))
		if got := sign(bytes.Compare(query.AppendKey(nil, va), query.AppendKey(nil, vb))); got != want {
			t.Fatalf("%s vs %s: keys %d, Compare %d", a, b, got, want)
		}
	})
}
