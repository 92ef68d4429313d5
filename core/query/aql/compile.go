package aql

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hilodb/hilodb/core/query"
	"github.com/tidwall/gjson"
)

// valueField holds a FOR's value when the values are run as documents.
const valueField = "v"

// pathText is the field path of a variable's attribute: a document's
// attribute, or the value's under valueField.
func (plan *Plan) pathText(v exVar) string {
	segs := v.segs
	if plan.values {
		segs = append([]string{valueField}, segs...)
	}
	esc := make([]string, len(segs))
	for i, s := range segs {
		esc[i] = strings.NewReplacer(`\`, `\\`, `.`, `\.`).Replace(s)
	}
	return strings.Join(esc, ".")
}

// path is the field path of e, which must be an attribute of the FOR's
// variable.
func (plan *Plan) path(p *parser, e expr) (query.Path, error) {
	v, ok := e.(exVar)
	if !ok {
		return query.Path{}, errAt(p.text, e.at(), "only an attribute of the FOR variable is served here")
	}
	if v.name != plan.varName {
		return query.Path{}, errAt(p.text, v.pos, "variable '"+v.name+"' is not declared")
	}
	if len(v.segs) == 0 && !plan.values {
		return query.Path{}, errAt(p.text, v.pos, "a whole document is not served here: name an attribute")
	}
	path, err := query.ParsePath(plan.pathText(v))
	if err != nil {
		return query.Path{}, errAt(p.text, v.pos, err.Error())
	}
	return path, nil
}

// checkVars refuses a RETURN that names a variable other than the FOR's
// (or COLLECT's).
func (plan *Plan) checkVars(p *parser, e expr) error {
	switch x := e.(type) {
	case exVar:
		want := plan.varName
		if plan.Count {
			want = plan.countVar
		}
		if x.name != want {
			return errAt(p.text, x.pos, "variable '"+x.name+"' is not declared")
		}
	case exObj:
		for _, v := range x.vals {
			if err := plan.checkVars(p, v); err != nil {
				return err
			}
		}
	case exArr:
		for _, v := range x.items {
			if err := plan.checkVars(p, v); err != nil {
				return err
			}
		}
	case exLit:
	default:
		return errAt(p.text, e.at(), "RETURN takes the variable, its attributes, objects, arrays and constants in hilodb's AQL subset")
	}
	return nil
}

// matchNone is a selector no document meets: every one has an _id.
var matchNone = map[string]any{"_id": map[string]any{"$exists": false}}

// selector compiles the FILTERs (all must hold) to a Mango selector.
func (plan *Plan) selector(p *parser, filters []expr) (*query.Selector, error) {
	and := []any{}
	if plan.zeroLimit {
		and = append(and, matchNone)
	}
	for _, f := range filters {
		s, err := plan.cond(p, f)
		if err != nil {
			return nil, err
		}
		and = append(and, s)
	}
	b, err := json.Marshal(map[string]any{"$and": and})
	if err != nil {
		return nil, errAt(p.text, 0, err.Error())
	}
	if len(and) == 0 {
		b = []byte("{}")
	}
	sel, err := query.ParseSelector(b)
	if err != nil {
		return nil, errAt(p.text, 0, err.Error())
	}
	return sel, nil
}

// flipped is the comparison with its sides swapped.
var flipped = map[string]string{"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

var mango = map[string]string{"==": "$eq", "!=": "$ne", "<": "$lt", "<=": "$lte", ">": "$gt", ">=": "$gte"}

// cond compiles one condition to a selector.
func (plan *Plan) cond(p *parser, e expr) (any, error) {
	switch x := e.(type) {
	case exLit:
		switch string(x.raw) {
		case "true":
			return map[string]any{}, nil
		case "false", "null":
			return matchNone, nil
		}
		return nil, errAt(p.text, x.pos, "a FILTER on a constant other than true, false or null is outside hilodb's AQL subset")
	case exNot:
		s, err := plan.cond(p, x.e)
		if err != nil {
			return nil, err
		}
		return map[string]any{"$nor": []any{s}}, nil
	case exBin:
		switch x.op {
		case "AND", "OR":
			l, err := plan.cond(p, x.l)
			if err != nil {
				return nil, err
			}
			r, err := plan.cond(p, x.r)
			if err != nil {
				return nil, err
			}
			return map[string]any{"$" + strings.ToLower(x.op): []any{l, r}}, nil
		}
		return plan.compare(p, x)
	}
	return nil, errAt(p.text, e.at(), "a FILTER compares an attribute of the FOR variable with a constant in hilodb's AQL subset")
}

func (plan *Plan) compare(p *parser, x exBin) (any, error) {
	lv, lIsVar := x.l.(exVar)
	rl, rIsLit := x.r.(exLit)
	if !lIsVar || !rIsLit {
		// A constant on the left: "a" IN x.tags, or 5 < x.n.
		ll, lIsLit := x.l.(exLit)
		rv, rIsVar := x.r.(exVar)
		if !lIsLit || !rIsVar {
			return nil, errAt(p.text, x.pos, "a FILTER compares an attribute of the FOR variable with a constant in hilodb's AQL subset")
		}
		path, err := plan.path(p, rv)
		if err != nil {
			return nil, err
		}
		switch x.op {
		case "IN":
			return map[string]any{path.String(): map[string]any{"$all": []json.RawMessage{ll.raw}}}, nil
		case "NOT IN":
			return map[string]any{"$nor": []any{map[string]any{path.String(): map[string]any{"$all": []json.RawMessage{ll.raw}}}}}, nil
		case "LIKE":
			return nil, errAt(p.text, x.pos, "LIKE takes the attribute first and the pattern second")
		}
		return plan.compare(p, exBin{op: flipped[x.op], l: rv, r: ll, pos: x.pos})
	}
	path, err := plan.path(p, lv)
	if err != nil {
		return nil, err
	}
	f := path.String()
	missing := map[string]any{f: map[string]any{"$exists": false}}
	isNull := string(rl.raw) == "null"
	switch x.op {
	case "==":
		if isNull {
			return map[string]any{"$or": []any{map[string]any{f: map[string]any{"$eq": nil}}, missing}}, nil
		}
		return map[string]any{f: map[string]any{"$eq": rl.raw}}, nil
	case "!=":
		if isNull {
			return map[string]any{"$and": []any{map[string]any{f: map[string]any{"$exists": true}}, map[string]any{f: map[string]any{"$ne": nil}}}}, nil
		}
		return map[string]any{f: map[string]any{"$ne": rl.raw}}, nil
	case "<", "<=", ">", ">=":
		return map[string]any{f: map[string]any{mango[x.op]: rl.raw}}, nil
	case "IN", "NOT IN":
		var list []json.RawMessage
		if json.Unmarshal(rl.raw, &list) != nil {
			return nil, errAt(p.text, x.pos, "IN takes an array")
		}
		in := any(map[string]any{f: map[string]any{"$in": list}})
		for _, it := range list {
			if string(it) == "null" {
				in = map[string]any{"$or": []any{in, missing}}
				break
			}
		}
		if x.op == "NOT IN" {
			return map[string]any{"$nor": []any{in}}, nil
		}
		return in, nil
	case "LIKE":
		var pat string
		if json.Unmarshal(rl.raw, &pat) != nil {
			return nil, errAt(p.text, x.pos, "LIKE takes a string pattern")
		}
		return map[string]any{f: map[string]any{"$regex": likeRegexp(pat)}}, nil
	}
	return nil, errAt(p.text, x.pos, "unexpected operator "+x.op)
}

// likeRegexp is the regular expression of an AQL LIKE pattern: % any
// text, _ one character, a backslash escaping either.
func likeRegexp(pat string) string {
	var b strings.Builder
	b.WriteString("^(?s)")
	esc := false
	for _, r := range pat {
		switch {
		case esc:
			b.WriteString(regexpQuote(string(r)))
			esc = false
		case r == '\\':
			esc = true
		case r == '%':
			b.WriteString(".*")
		case r == '_':
			b.WriteString(".")
		default:
			b.WriteString(regexpQuote(string(r)))
		}
	}
	if esc {
		b.WriteString(`\\`)
	}
	b.WriteString("$")
	return b.String()
}

func regexpQuote(s string) string {
	if strings.ContainsAny(s, `\.+*?()|[]{}^$`) {
		return `\` + s
	}
	return s
}

// Project returns the RETURN expression's value for one result: doc is a
// document (ForCollection, as the client sees it) or a value (ForValues).
func (plan *Plan) Project(doc []byte) []byte {
	return eval(plan.ret, gjson.ParseBytes(doc), nil, math.MaxInt)
}

// ProjectWithin is Project for a result that may take at most room bytes:
// a RETURN can name the document many times, so a result is measured as
// it is made, and ok is false, with no more than room+1 bytes made, when
// it would take more.
func (plan *Plan) ProjectWithin(doc []byte, room int) (out []byte, ok bool) {
	out = eval(plan.ret, gjson.ParseBytes(doc), nil, room)
	return out, len(out) <= room
}

// CountResult returns the one result of COLLECT WITH COUNT INTO: the
// RETURN expression with n, the number of matches after the LIMIT.
func (plan *Plan) CountResult(matches int) []byte {
	n := max(matches-plan.Query.Skip, 0)
	if plan.Query.Limit > 0 && n > plan.Query.Limit {
		n = plan.Query.Limit
	}
	if plan.zeroLimit {
		n = 0
	}
	return eval(plan.ret, gjson.Parse(strconv.Itoa(n)), nil, math.MaxInt)
}

// eval writes e's value with the variable bound to v. It stops once dst
// passes limit, holding limit+1 bytes then, so that a value many times
// larger than its query is never made.
func eval(e expr, v gjson.Result, dst []byte, limit int) []byte {
	if len(dst) > limit {
		return dst
	}
	switch x := e.(type) {
	case exLit:
		return appendWithin(dst, x.raw, limit)
	case exVar:
		r := v
		for _, s := range x.segs {
			if !r.IsObject() && !r.IsArray() {
				r = gjson.Result{}
				break
			}
			r = r.Get(gjson.Escape(s))
		}
		if !r.Exists() {
			return appendWithin(dst, "null", limit)
		}
		return appendWithin(dst, r.Raw, limit)
	case exObj:
		dst = append(dst, '{')
		for i, k := range x.keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			kb, _ := json.Marshal(k)
			dst = appendWithin(dst, kb, limit)
			dst = append(dst, ':')
			if dst = eval(x.vals[i], v, dst, limit); len(dst) > limit {
				return dst
			}
		}
		return append(dst, '}')
	case exArr:
		dst = append(dst, '[')
		for i, it := range x.items {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst = eval(it, v, dst, limit); len(dst) > limit {
				return dst
			}
		}
		return append(dst, ']')
	}
	return appendWithin(dst, "null", limit)
}

// appendWithin appends s to dst, or as much of it as takes dst one byte
// past limit.
func appendWithin[T string | []byte | json.RawMessage](dst []byte, s T, limit int) []byte {
	if len(s) > limit-len(dst) {
		return append(dst, s[:max(limit-len(dst)+1, 0)]...)
	}
	return append(dst, s...)
}

// Run answers a ForValues plan: its results in order, and the matches
// before LIMIT (fullCount).
func (plan *Plan) Run() (results [][]byte, fullCount int, err error) {
	return plan.RunWithin(math.MaxInt)
}

// RunWithin is Run for results that may take at most room bytes together:
// past it, it fails with query.ErrTooBig before making more.
func (plan *Plan) RunWithin(room int) (results [][]byte, fullCount int, err error) {
	if plan.Kind != ForValues {
		return nil, 0, fmt.Errorf("run %v: %w", plan.Kind, query.ErrBadQuery)
	}
	pager, err := plan.Query.NewPager(query.PagerOptions{})
	if err != nil {
		return nil, 0, err
	}
	for i, v := range plan.Values {
		// The position, zero-padded, is the _id every order ends with.
		doc := `{"_id":"` + fmt.Sprintf("%08d", i) + `","` + valueField + `":` + string(v) + `}`
		pager.Add(doc)
	}
	if plan.Count {
		return [][]byte{plan.CountResult(pager.Matched)}, pager.Matched, nil
	}
	docs, _ := pager.Page()
	results = make([][]byte, len(docs))
	for i, d := range docs {
		out, ok := plan.ProjectWithin([]byte(gjson.GetBytes(d, valueField).Raw), room)
		if !ok {
			return nil, 0, fmt.Errorf("run: %w", query.ErrTooBig)
		}
		results[i] = out
		room -= len(out) + 1
	}
	return results, pager.Matched, nil
}
