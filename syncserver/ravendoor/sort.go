package ravendoor

import (
	"cmp"
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/hilodb/hilodb/core/query"
	"github.com/hilodb/hilodb/core/query/rql"
)

// hasAlphaNumeric reports whether an order by field sorts as alphaNumeric,
// an order the collation has no key for: such a query reads every match
// (within the reply bound) and sorts them here.
func hasAlphaNumeric(order []rql.Sort) bool {
	for _, s := range order {
		if s.As == "alphaNumeric" {
			return true
		}
	}
	return false
}

// sortAlphaNumeric orders docs by order, alphaNumeric fields as RavenDB
// does (runs of digits by their number, the rest without case), the others
// by the collation, ties by _id.
func sortAlphaNumeric(docs [][]byte, order []rql.Sort) {
	paths := make([]query.Path, len(order))
	for i, s := range order {
		paths[i] = query.MustPath(s.Field)
	}
	sort.SliceStable(docs, func(i, j int) bool {
		for k, s := range order {
			a, b := paths[k].Get(docs[i]), paths[k].Get(docs[j])
			var c int
			if s.As == "alphaNumeric" && a.Type == gjson.String && b.Type == gjson.String {
				c = compareAlphaNumeric(a.Str, b.Str)
			} else {
				c = query.Compare(a, b)
			}
			if s.Desc {
				c = -c
			}
			if c != 0 {
				return c < 0
			}
		}
		return gjson.GetBytes(docs[i], "_id").Str < gjson.GetBytes(docs[j], "_id").Str
	})
}

// compareAlphaNumeric compares a and b chunk by chunk: a run of digits
// with a run of digits by value (then by length, so "01" follows "1"),
// anything else without case.
func compareAlphaNumeric(a, b string) int {
	for a != "" && b != "" {
		da, db := isDigit(a[0]), isDigit(b[0])
		if da && db {
			na, nb := digitRun(a), digitRun(b)
			ta, tb := strings.TrimLeft(a[:na], "0"), strings.TrimLeft(b[:nb], "0")
			if len(ta) != len(tb) {
				return cmp.Compare(len(ta), len(tb))
			}
			if c := strings.Compare(ta, tb); c != 0 {
				return c
			}
			if na != nb {
				return cmp.Compare(na, nb)
			}
			a, b = a[na:], b[nb:]
			continue
		}
		ca, cb := strings.ToLower(a[:1]), strings.ToLower(b[:1])
		if c := strings.Compare(ca, cb); c != 0 {
			return c
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digitRun(s string) int {
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	return n
}
