package rql

import (
	"encoding/json"
	"regexp"
	"strings"
)

// The where clause compiles to a Mango selector, built as JSON text.
//
//	expr    := and ("or" and)*
//	and     := unary ("and" unary)*
//	unary   := "not" unary | "(" expr ")" | "true" | exact(expr) | call | cmp
//	cmp     := field (op value | "between" value "and" value | ["all"] "in" "(" values ")")

func (p *parser) expr(depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, errorAt(p.peek().pos, "the where clause is nested deeper than %d levels", maxDepth)
	}
	var ors [][]byte
	for {
		var ands [][]byte
		for {
			n, err := p.unary(depth)
			if err != nil {
				return nil, err
			}
			ands = append(ands, n)
			if !p.isWord("and") {
				break
			}
			p.next()
		}
		ors = append(ors, combine("$and", ands))
		if !p.isWord("or") {
			break
		}
		p.next()
	}
	return combine("$or", ors), nil
}

func combine(op string, list [][]byte) []byte {
	if len(list) == 1 {
		return list[0]
	}
	return obj(op, array(list))
}

func (p *parser) unary(depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, errorAt(p.peek().pos, "the where clause is nested deeper than %d levels", maxDepth)
	}
	t := p.peek()
	switch {
	case t.kind == tokWord && strings.EqualFold(t.text, "not"):
		p.next()
		n, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		return obj("$nor", array([][]byte{n})), nil
	case t.kind == tokPunct && t.text == "(":
		p.next()
		n, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		return n, p.expectPunct(")")
	case t.kind == tokWord && strings.EqualFold(t.text, "true") && !p.isCmpAfter():
		p.next()
		return []byte("{}"), nil
	case t.kind == tokWord && p.second().kind == tokPunct && p.second().text == "(" && !strings.EqualFold(t.text, "id"):
		return p.call(depth)
	}
	return p.cmp()
}

// isCmpAfter reports whether the token after the next is a comparison (a
// field named true).
func (p *parser) isCmpAfter() bool {
	s := p.second()
	return s.kind == tokPunct && s.text != "(" && s.text != ")" && s.text != ","
}

func (p *parser) call(depth int) ([]byte, error) {
	t := p.next()
	p.next() // (
	name := strings.ToLower(t.text)
	switch name {
	case "exact":
		was := p.exact
		p.exact = true
		n, err := p.expr(depth + 1)
		p.exact = was
		if err != nil {
			return nil, err
		}
		return n, p.expectPunct(")")
	case "exists":
		f, err := p.field()
		if err != nil {
			return nil, err
		}
		p.useField(f)
		return p.onField(f, obj("$exists", []byte("true")), false), p.expectPunct(")")
	case "startswith", "endswith", "regex":
		f, err := p.field()
		if err != nil {
			return nil, err
		}
		if err := p.expectPunct(","); err != nil {
			return nil, err
		}
		vpos := p.peek().pos
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			return nil, errorAt(vpos, "%s() takes a string", t.text)
		}
		var re string
		switch name {
		case "startswith":
			re = "^" + regexp.QuoteMeta(s)
		case "endswith":
			re = regexp.QuoteMeta(s) + "$"
		default:
			re = s
		}
		if !p.exact {
			re = "(?i)" + re // RavenDB's automatic indexes match lower-cased values
		}
		if len(re) > maxRegex {
			return nil, errorAt(vpos, "a pattern longer than %d bytes", maxRegex)
		}
		if _, err := regexp.Compile(re); err != nil {
			return nil, errorAt(vpos, "a pattern that is not a regular expression: %v", err)
		}
		p.useField(f)
		return p.onField(f, obj("$regex", str(re)), true), p.expectPunct(")")
	}
	return nil, notServed(t.pos, t.text+"()")
}

var cmpOps = map[string]string{"=": "$eq", "==": "$eq", "!=": "$ne", "<>": "$ne", "<": "$lt", "<=": "$lte", ">": "$gt", ">=": "$gte"}

func (p *parser) cmp() ([]byte, error) {
	f, err := p.field()
	if err != nil {
		return nil, err
	}
	p.useField(f)
	t := p.next()
	if t.kind == tokPunct {
		op, ok := cmpOps[t.text]
		if !ok {
			p.i--
			return nil, p.unexpected("a comparison")
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		switch op {
		case "$eq":
			return p.onField(f, p.equal(v), true), nil
		case "$ne":
			return obj("$nor", array([][]byte{p.onField(f, p.equal(v), true)})), nil
		}
		return p.onField(f, obj(op, v), true), nil
	}
	if t.kind != tokWord {
		p.i--
		return nil, p.unexpected("a comparison")
	}
	switch strings.ToLower(t.text) {
	case "between":
		lo, err := p.value()
		if err != nil {
			return nil, err
		}
		if !p.isWord("and") {
			return nil, p.unexpected("and")
		}
		p.next()
		hi, err := p.value()
		if err != nil {
			return nil, err
		}
		return p.onField(f, members([2]string{"$gte", string(lo)}, [2]string{"$lte", string(hi)}), true), nil
	case "in":
		vs, err := p.values()
		if err != nil {
			return nil, err
		}
		var ors [][]byte
		for _, v := range vs {
			ors = append(ors, p.equal(v))
		}
		if len(ors) == 0 {
			return obj("$nor", array([][]byte{[]byte("{}")})), nil // in (): nothing
		}
		conds := make([][]byte, len(ors))
		for i, c := range ors {
			conds[i] = p.onField(f, c, true)
		}
		return combine("$or", conds), nil
	case "all":
		if !p.isWord("in") {
			return nil, p.unexpected("in")
		}
		p.next()
		vs, err := p.values()
		if err != nil {
			return nil, err
		}
		if len(vs) == 0 {
			return []byte("{}"), nil
		}
		conds := make([][]byte, len(vs))
		for i, v := range vs {
			conds[i] = p.onField(f, p.equal(v), true)
		}
		return combine("$and", conds), nil
	}
	p.i--
	return nil, p.unexpected("a comparison")
}

// values reads ( v, ... ); a parameter holding an array gives its elements.
func (p *parser) values() ([]json.RawMessage, error) {
	if err := p.expectPunct("("); err != nil {
		return nil, err
	}
	var out []json.RawMessage
	for !p.isPunct(")") {
		pos := p.peek().pos
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		if len(v) > 0 && v[0] == '[' {
			var elems []json.RawMessage
			if err := json.Unmarshal(v, &elems); err != nil {
				return nil, errorAt(pos, "a parameter that is not JSON")
			}
			out = append(out, elems...)
		} else {
			out = append(out, v)
		}
		if len(out) > maxInValues {
			return nil, errorAt(pos, "in takes at most %d values", maxInValues)
		}
		if !p.isPunct(",") {
			break
		}
		p.next()
	}
	return out, p.expectPunct(")")
}

// equal is the operators object of equality to v: a string ignores case
// unless exact.
func (p *parser) equal(v json.RawMessage) []byte {
	var s string
	if !p.exact && len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &s) == nil {
		re := "(?i)^" + regexp.QuoteMeta(s) + "$"
		if len(re) <= maxRegex {
			return obj("$regex", str(re))
		}
	}
	return obj("$eq", v)
}

// onField is the selector applying the operators object c to field f.
// With elems, a field holding an array matches when an element does;
// "a[].b" reads b of each element of a.
func (p *parser) onField(f string, c []byte, elems bool) []byte {
	if i := strings.Index(f, "[]"); i >= 0 {
		head, rest := f[:i], strings.TrimPrefix(f[i+2:], ".")
		if rest == "" {
			return obj(mangoPath(head), obj("$elemMatch", c))
		}
		// Inside $elemMatch, a selector of the element's fields.
		return obj(mangoPath(head), obj("$elemMatch", obj(mangoPath(rest), c)))
	}
	one := obj(mangoPath(f), c)
	if !elems {
		return one
	}
	return obj("$or", array([][]byte{one, obj(mangoPath(f), obj("$elemMatch", c))}))
}

// mangoPath is an RQL path as a Mango field name: dots separate members.
func mangoPath(f string) string { return f }

func str(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

func obj(k string, v []byte) []byte { return members([2]string{k, string(v)}) }

func members(kv ...[2]string) []byte {
	var b []byte
	b = append(b, '{')
	for i, m := range kv {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, str(m[0])...)
		b = append(b, ':')
		b = append(b, m[1]...)
	}
	return append(b, '}')
}

func array(list [][]byte) []byte {
	var b []byte
	b = append(b, '[')
	for i, x := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, x...)
	}
	return append(b, ']')
}
