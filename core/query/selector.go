package query

import (
	"regexp"

	"github.com/tidwall/gjson"
)

// Selector is a parsed Mango selector: which documents a query matches.
// The zero Selector (and one parsed from `{}`) matches every document.
type Selector struct {
	raw   string // the JSON text the values point into
	root  node
	conds []Cond
}

// Op names a comparison the planner can answer from an index.
type Op string

// The operators Conds reports.
const (
	OpEq  Op = "$eq"
	OpGt  Op = "$gt"
	OpGte Op = "$gte"
	OpLt  Op = "$lt"
	OpLte Op = "$lte"
	OpIn  Op = "$in"
)

// Cond is one condition every matching document meets: the value at Path
// compares with Value by Op (for OpIn, equals one of Values). A planner
// narrows an index's range with them; the selector is still checked on
// every document the index gives.
type Cond struct {
	Path   Path
	Op     Op
	Value  gjson.Result
	Values []gjson.Result
}

// node is one part of a selector, tested on a whole document (or on an
// array's element, inside $elemMatch).
type node interface {
	match(v gjson.Result) bool
	fields(add func(string))
}

// cond is a condition on the value at one path; v may be missing.
type cond interface {
	test(v gjson.Result) bool
}

type (
	andNode   []node
	orNode    []node
	norNode   []node
	notNode   struct{ n node }
	fieldNode struct {
		path Path // zero: the value itself ($elemMatch)
		c    cond
	}
)

func (n andNode) match(v gjson.Result) bool {
	for _, c := range n {
		if !c.match(v) {
			return false
		}
	}
	return true
}

func (n orNode) match(v gjson.Result) bool {
	for _, c := range n {
		if c.match(v) {
			return true
		}
	}
	return false
}

func (n norNode) match(v gjson.Result) bool { return !orNode(n).match(v) }
func (n notNode) match(v gjson.Result) bool { return !n.n.match(v) }

func (n fieldNode) match(v gjson.Result) bool {
	if n.path.gj == "" {
		return n.c.test(v)
	}
	return n.c.test(n.path.getIn(v))
}

func (n andNode) fields(add func(string)) {
	for _, c := range n {
		c.fields(add)
	}
}
func (n orNode) fields(add func(string))  { andNode(n).fields(add) }
func (n norNode) fields(add func(string)) { andNode(n).fields(add) }
func (n notNode) fields(add func(string)) { n.n.fields(add) }
func (n fieldNode) fields(add func(string)) {
	if n.path.raw != "" {
		add(n.path.raw)
	}
}

// The conditions on one value.
type (
	cmpCond struct {
		op  Op
		arg gjson.Result
	}
	neCond     struct{ arg gjson.Result }
	inCond     struct{ args []gjson.Result }
	ninCond    struct{ args []gjson.Result }
	existsCond bool
	typeCond   byte // a class: nullTag, falseTag (booleans), numberTag, ...
	regexCond  struct{ re *regexp.Regexp }
	sizeCond   int
	allCond    struct{ args []gjson.Result }
	elemCond   struct{ n node }
	condAll    []cond
	notCond    struct{ c cond }
)

func (c cmpCond) test(v gjson.Result) bool {
	if !v.Exists() {
		return false
	}
	if c.op == OpEq {
		return Compare(v, c.arg) == 0
	}
	// Range operators compare within one kind of value: a number never
	// matches a range of strings, whatever the collation says.
	if class(tag(v)) != class(tag(c.arg)) {
		return false
	}
	r := Compare(v, c.arg)
	switch c.op {
	case OpGt:
		return r > 0
	case OpGte:
		return r >= 0
	case OpLt:
		return r < 0
	}
	return r <= 0
}

func (c neCond) test(v gjson.Result) bool { return !v.Exists() || Compare(v, c.arg) != 0 }

func (c inCond) test(v gjson.Result) bool {
	if !v.Exists() {
		return false
	}
	for _, a := range c.args {
		if Compare(v, a) == 0 {
			return true
		}
	}
	return false
}

func (c ninCond) test(v gjson.Result) bool { return !inCond(c).test(v) }

func (c existsCond) test(v gjson.Result) bool { return v.Exists() == bool(c) }

func (c typeCond) test(v gjson.Result) bool { return v.Exists() && class(tag(v)) == byte(c) }

func (c regexCond) test(v gjson.Result) bool {
	return v.Type == gjson.String && c.re.MatchString(v.Str)
}

func (c sizeCond) test(v gjson.Result) bool {
	if !v.IsArray() {
		return false
	}
	n := 0
	v.ForEach(func(_, _ gjson.Result) bool { n++; return true })
	return n == int(c)
}

func (c allCond) test(v gjson.Result) bool {
	if !v.IsArray() {
		return false
	}
	elems := v.Array()
	for _, a := range c.args {
		found := false
		for _, e := range elems {
			if Compare(e, a) == 0 {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func (c elemCond) test(v gjson.Result) bool {
	if !v.IsArray() {
		return false
	}
	ok := false
	v.ForEach(func(_, e gjson.Result) bool {
		ok = c.n.match(e)
		return !ok
	})
	return ok
}

func (c condAll) test(v gjson.Result) bool {
	for _, x := range c {
		if !x.test(v) {
			return false
		}
	}
	return true
}

func (c notCond) test(v gjson.Result) bool { return !c.c.test(v) }

// Match reports whether the JSON document doc meets the selector.
func (s *Selector) Match(doc []byte) bool {
	if s == nil || s.root == nil {
		return true
	}
	return s.root.match(gjson.ParseBytes(doc))
}

// MatchString is Match on a document held as a string.
func (s *Selector) MatchString(doc string) bool {
	if s == nil || s.root == nil {
		return true
	}
	return s.root.match(gjson.Parse(doc))
}

// Conds returns conditions every matching document meets (those of the
// selector's top level, and of $and there), for a planner.
func (s *Selector) Conds() []Cond {
	if s == nil {
		return nil
	}
	return s.conds
}

// Fields returns every field path the selector reads, once each.
func (s *Selector) Fields() []string {
	if s == nil || s.root == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	s.root.fields(func(f string) {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	})
	return out
}

func collectConds(n node, out *[]Cond) {
	switch n := n.(type) {
	case andNode:
		for _, c := range n {
			collectConds(c, out)
		}
	case fieldNode:
		if n.path.raw != "" {
			collectCond(n.path, n.c, out)
		}
	}
}

func collectCond(p Path, c cond, out *[]Cond) {
	switch c := c.(type) {
	case cmpCond:
		*out = append(*out, Cond{Path: p, Op: c.op, Value: c.arg})
	case inCond:
		*out = append(*out, Cond{Path: p, Op: OpIn, Values: c.args})
	case condAll:
		for _, x := range c {
			collectCond(p, x, out)
		}
	}
}
