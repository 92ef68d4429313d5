package query

import (
	"regexp"
	"strings"

	"github.com/tidwall/gjson"
)

// Bounds of one selector, so a hostile one costs little to refuse.
const (
	maxDepth    = 32   // nesting of operators and sub-selectors
	maxNodes    = 4096 // operators, fields and list items in all
	maxRegexLen = 1024 // a $regex pattern's bytes
)

// ParseSelector parses a Mango selector, a JSON object:
//
//	{"status": "open"}                         implicit $eq
//	{"customer": {"city": "Oslo"}}             a nested field: customer.city
//	{"total": {"$gte": 10, "$lt": 100}}        several operators, all must hold
//	{"$or": [{"a": 1}, {"b": {"$exists": true}}]}
//
// Field operators: $eq $ne $gt $gte $lt $lte $in $nin $exists $type
// $regex $size $all $elemMatch $not; combinations: $and $or $nor $not. A
// condition on a missing field is false, except $exists false, $ne and $nin
// (and what $not and $nor turn around). Anything else fails with
// ErrBadQuery: an unknown operator, an argument of the wrong kind, a field
// object that mixes operators and member names.
func ParseSelector(b []byte) (*Selector, error) {
	if len(b) == 0 {
		return &Selector{root: andNode{}}, nil
	}
	if !gjson.ValidBytes(b) {
		return nil, badQuery("selector is not valid JSON")
	}
	raw := string(b)
	v := gjson.Parse(raw)
	if !v.IsObject() {
		return nil, badQuery("selector must be a JSON object")
	}
	p := &parser{}
	root, err := p.selector(v, nil, 0)
	if err != nil {
		return nil, err
	}
	s := &Selector{raw: raw, root: root}
	collectConds(root, &s.conds)
	return s, nil
}

type parser struct{ nodes int }

func (p *parser) count(n int) error {
	p.nodes += n
	if p.nodes > maxNodes {
		return badQuery("selector has more than %d operators, fields and values", maxNodes)
	}
	return nil
}

// selector parses an object of fields and combination operators, under
// the path prefix (for nested field objects).
func (p *parser) selector(v gjson.Result, prefix []string, depth int) (node, error) {
	if depth > maxDepth {
		return nil, badQuery("selector nested deeper than %d levels", maxDepth)
	}
	var out andNode
	var err error
	v.ForEach(func(k, val gjson.Result) bool {
		if err = p.count(1); err != nil {
			return false
		}
		var n node
		if strings.HasPrefix(k.Str, "$") {
			if prefix != nil {
				err = badQuery("operator %q where a field name is expected", k.Str)
				return false
			}
			n, err = p.combination(k.Str, val, depth)
		} else {
			n, err = p.field(k.Str, val, prefix, depth)
		}
		if err != nil {
			return false
		}
		out = append(out, n)
		return true
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 1 {
		return out[0], nil
	}
	return out, nil
}

func (p *parser) combination(op string, val gjson.Result, depth int) (node, error) {
	switch op {
	case "$and", "$or", "$nor":
		if !val.IsArray() {
			return nil, badQuery("%s takes an array of selectors", op)
		}
		var list []node
		var err error
		val.ForEach(func(_, e gjson.Result) bool {
			if !e.IsObject() {
				err = badQuery("%s takes an array of selectors (objects)", op)
				return false
			}
			var n node
			if n, err = p.selector(e, nil, depth+1); err != nil {
				return false
			}
			list = append(list, n)
			return true
		})
		if err != nil {
			return nil, err
		}
		if len(list) == 0 {
			return nil, badQuery("%s takes at least one selector", op)
		}
		switch op {
		case "$and":
			return andNode(list), nil
		case "$or":
			return orNode(list), nil
		}
		return norNode(list), nil
	case "$not":
		if !val.IsObject() {
			return nil, badQuery("$not takes a selector")
		}
		n, err := p.selector(val, nil, depth+1)
		if err != nil {
			return nil, err
		}
		return notNode{n}, nil
	}
	return nil, badQuery("unknown operator %q", op)
}

// field parses the condition on one field: a value (implicit $eq), an
// object of operators, or an object of member names (nested fields).
func (p *parser) field(name string, val gjson.Result, prefix []string, depth int) (node, error) {
	path, err := ParsePath(name)
	if err != nil {
		return nil, err
	}
	if prefix != nil {
		segs := append(append([]string(nil), prefix...), path.segs...)
		path = pathFromSegs(segs)
	}
	kind, err := objectKind(val)
	if err != nil {
		return nil, err
	}
	switch kind {
	case operators:
		c, err := p.operators(val, depth+1)
		if err != nil {
			return nil, err
		}
		return fieldNode{path: path, c: c}, nil
	case nested:
		return p.selector(val, path.segs, depth+1)
	}
	return fieldNode{path: path, c: cmpCond{op: OpEq, arg: val}}, nil
}

func pathFromSegs(segs []string) Path {
	esc := make([]string, len(segs))
	raw := make([]string, len(segs))
	for i, s := range segs {
		raw[i] = strings.NewReplacer(`\`, `\\`, `.`, `\.`).Replace(s)
		esc[i] = gjson.Escape(s)
	}
	return Path{raw: strings.Join(raw, "."), segs: segs, gj: strings.Join(esc, ".")}
}

const (
	plain     = iota // not an object, or an empty one: a value
	operators        // every member an operator
	nested           // every member a field name
)

func objectKind(v gjson.Result) (int, error) {
	if !v.IsObject() {
		return plain, nil
	}
	ops, names := 0, 0
	v.ForEach(func(k, _ gjson.Result) bool {
		if strings.HasPrefix(k.Str, "$") {
			ops++
		} else {
			names++
		}
		return true
	})
	switch {
	case ops > 0 && names > 0:
		return 0, badQuery("an object mixes operators and field names: use $eq to compare with an object")
	case ops > 0:
		return operators, nil
	case names > 0:
		return nested, nil
	}
	return plain, nil
}

// operators parses an object of field operators, all of which must hold.
func (p *parser) operators(v gjson.Result, depth int) (cond, error) {
	if depth > maxDepth {
		return nil, badQuery("selector nested deeper than %d levels", maxDepth)
	}
	var out condAll
	var err error
	v.ForEach(func(k, arg gjson.Result) bool {
		if err = p.count(1); err != nil {
			return false
		}
		var c cond
		if c, err = p.operator(k.Str, arg, depth); err != nil {
			return false
		}
		out = append(out, c)
		return true
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 1 {
		return out[0], nil
	}
	return out, nil
}

var typeNames = map[string]byte{
	"null": nullTag, "boolean": falseTag, "number": numberTag,
	"string": stringTag, "array": arrayTag, "object": objectTag,
}

func (p *parser) operator(op string, arg gjson.Result, depth int) (cond, error) {
	switch op {
	case "$eq", "$gt", "$gte", "$lt", "$lte":
		return cmpCond{op: Op(op), arg: arg}, nil
	case "$ne":
		return neCond{arg: arg}, nil
	case "$in", "$nin", "$all":
		if !arg.IsArray() {
			return nil, badQuery("%s takes an array", op)
		}
		args := arg.Array()
		if err := p.count(len(args)); err != nil {
			return nil, err
		}
		switch op {
		case "$in":
			return inCond{args: args}, nil
		case "$nin":
			return ninCond{args: args}, nil
		}
		return allCond{args: args}, nil
	case "$exists":
		if arg.Type != gjson.True && arg.Type != gjson.False {
			return nil, badQuery("$exists takes true or false")
		}
		return existsCond(arg.Bool()), nil
	case "$type":
		t, ok := typeNames[arg.Str]
		if arg.Type != gjson.String || !ok {
			return nil, badQuery(`$type takes "null", "boolean", "number", "string", "array" or "object"`)
		}
		return typeCond(t), nil
	case "$regex":
		if arg.Type != gjson.String {
			return nil, badQuery("$regex takes a string")
		}
		if len(arg.Str) > maxRegexLen {
			return nil, badQuery("$regex pattern longer than %d bytes", maxRegexLen)
		}
		re, err := regexp.Compile(arg.Str)
		if err != nil {
			return nil, badQuery("$regex: %v", err)
		}
		return regexCond{re: re}, nil
	case "$size":
		if arg.Type != gjson.Number || arg.Num < 0 || arg.Num != float64(int(arg.Num)) {
			return nil, badQuery("$size takes a whole number, 0 or more")
		}
		return sizeCond(int(arg.Num)), nil
	case "$elemMatch":
		if !arg.IsObject() {
			return nil, badQuery("$elemMatch takes an object")
		}
		n, err := p.element(arg, depth+1)
		if err != nil {
			return nil, err
		}
		return elemCond{n: n}, nil
	case "$not":
		if !arg.IsObject() {
			return nil, badQuery("$not on a field takes an object of operators")
		}
		kind, err := objectKind(arg)
		if err != nil {
			return nil, err
		}
		if kind != operators {
			return nil, badQuery("$not on a field takes an object of operators")
		}
		c, err := p.operators(arg, depth+1)
		if err != nil {
			return nil, err
		}
		return notCond{c}, nil
	}
	return nil, badQuery("unknown operator %q", op)
}

// element parses $elemMatch's argument: operators on the element itself
// ({"$gt": 5}) or a selector over its fields ({"sku": "a", "qty": {"$gt":
// 1}}), not both.
func (p *parser) element(v gjson.Result, depth int) (node, error) {
	kind, err := objectKind(v)
	if err != nil {
		return nil, err
	}
	if kind == operators {
		c, err := p.operators(v, depth)
		if err != nil {
			return nil, err
		}
		return fieldNode{c: c}, nil
	}
	return p.selector(v, nil, depth)
}
