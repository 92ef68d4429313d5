package aql

import (
	"encoding/json"
	"strconv"
	"strings"
)

// The expressions of the subset, as parsed.
type (
	expr interface{ at() int }
	// exVar is a variable with the attribute names after it (x.a.b).
	exVar struct {
		name string
		segs []string
		pos  int
	}
	// exLit is a constant: a literal or a bind parameter's value.
	exLit struct {
		raw json.RawMessage
		pos int
	}
	exObj struct {
		keys []string
		vals []expr
		pos  int
	}
	exArr struct {
		items []expr
		pos   int
	}
	// exBin is a comparison or a logical operator: ==, !=, <, <=, >, >=,
	// IN, NOT IN, LIKE, AND, OR.
	exBin struct {
		op   string
		l, r expr
		pos  int
	}
	exNot struct {
		e   expr
		pos int
	}
	// exCall is a function: LENGTH or DOCUMENT.
	exCall struct {
		name string
		args []expr
		pos  int
	}
	// exRange is a..b.
	exRange struct {
		lo, hi expr
		pos    int
	}
	// exColl is a collection named by a bind parameter (@@c).
	exColl struct {
		name string
		pos  int
	}
)

func (e exVar) at() int   { return e.pos }
func (e exLit) at() int   { return e.pos }
func (e exObj) at() int   { return e.pos }
func (e exArr) at() int   { return e.pos }
func (e exBin) at() int   { return e.pos }
func (e exNot) at() int   { return e.pos }
func (e exCall) at() int  { return e.pos }
func (e exRange) at() int { return e.pos }
func (e exColl) at() int  { return e.pos }

// parser reads tokens into a Plan.
type parser struct {
	text  string
	toks  []token
	i     int
	binds map[string]json.RawMessage
	depth int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) isKw(kw string) bool {
	t := p.peek()
	return t.kind == tKeyword && t.text == kw
}

func (p *parser) isPunct(s string) bool {
	t := p.peek()
	return t.kind == tPunct && t.text == s
}

// fail is a SyntaxError at the token t.
func (p *parser) fail(t token, msg string) error {
	return errAt(p.text, t.pos, msg)
}

// unexpected is ArangoDB's "syntax error, unexpected …" at the next token.
func (p *parser) unexpected(want string) error {
	t := p.peek()
	what := strconv.Quote(t.text)
	if t.kind == tEOF {
		what = "end of query"
	}
	return p.fail(t, "syntax error, unexpected "+what+", expecting "+want)
}

func (p *parser) expectKw(kw string) error {
	if !p.isKw(kw) {
		return p.unexpected(kw)
	}
	p.next()
	return nil
}

func (p *parser) expectPunct(s string) error {
	if !p.isPunct(s) {
		return p.unexpected("'" + s + "'")
	}
	p.next()
	return nil
}

// expression parses OR at the lowest precedence.
func (p *parser) expression() (expr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, p.fail(p.peek(), "expression nested too deeply")
	}
	l, err := p.andExpr()
	if err != nil {
		return nil, err
	}
	for p.isKw("OR") || p.isPunct("||") {
		t := p.next()
		r, err := p.andExpr()
		if err != nil {
			return nil, err
		}
		l = exBin{op: "OR", l: l, r: r, pos: t.pos}
	}
	return l, nil
}

func (p *parser) andExpr() (expr, error) {
	l, err := p.notExpr()
	if err != nil {
		return nil, err
	}
	for p.isKw("AND") || p.isPunct("&&") {
		t := p.next()
		r, err := p.notExpr()
		if err != nil {
			return nil, err
		}
		l = exBin{op: "AND", l: l, r: r, pos: t.pos}
	}
	return l, nil
}

func (p *parser) notExpr() (expr, error) {
	if p.isKw("NOT") || p.isPunct("!") {
		t := p.next()
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxDepth {
			return nil, p.fail(t, "expression nested too deeply")
		}
		e, err := p.notExpr()
		if err != nil {
			return nil, err
		}
		return exNot{e: e, pos: t.pos}, nil
	}
	return p.comparison()
}

func (p *parser) comparison() (expr, error) {
	l, err := p.rangeExpr()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	var op string
	switch {
	case t.kind == tPunct && (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">="):
		op = t.text
	case p.isKw("IN") || p.isKw("LIKE"):
		op = t.text
	case p.isKw("NOT") && p.toks[p.i+1].kind == tKeyword && p.toks[p.i+1].text == "IN":
		p.next()
		op = "NOT IN"
	case t.kind == tPunct && (t.text == "=~" || t.text == "!~"):
		return nil, p.fail(t, "regular expression operators are outside hilodb's AQL subset (see docs/http.md)")
	case p.isKw("ALL") || p.isKw("ANY") || p.isKw("NONE"):
		return nil, p.fail(t, "array comparison operators are outside hilodb's AQL subset (see docs/http.md)")
	default:
		return l, nil
	}
	p.next()
	r, err := p.rangeExpr()
	if err != nil {
		return nil, err
	}
	if tt := p.peek(); tt.kind == tPunct && (tt.text == "==" || tt.text == "!=" || tt.text == "<" || tt.text == "<=" || tt.text == ">" || tt.text == ">=") {
		return nil, p.fail(tt, "chained comparisons are outside hilodb's AQL subset")
	}
	return exBin{op: op, l: l, r: r, pos: t.pos}, nil
}

func (p *parser) rangeExpr() (expr, error) {
	l, err := p.operand()
	if err != nil {
		return nil, err
	}
	if p.isPunct("..") {
		t := p.next()
		r, err := p.operand()
		if err != nil {
			return nil, err
		}
		return exRange{lo: l, hi: r, pos: t.pos}, nil
	}
	if t := p.peek(); t.kind == tPunct && strings.Contains("+-*/%?", t.text) {
		return nil, p.fail(t, "arithmetic and the ternary operator are outside hilodb's AQL subset (see docs/http.md)")
	}
	return l, nil
}

// operand is a literal, a bind parameter, a variable with its attributes,
// a function call, a parenthesized expression, an array or an object.
func (p *parser) operand() (expr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, p.fail(p.peek(), "expression nested too deeply")
	}
	t := p.peek()
	switch {
	case t.kind == tNumber || t.kind == tPunct && t.text == "-" && p.toks[p.i+1].kind == tNumber:
		p.next()
		text := t.text
		if t.kind == tPunct {
			text = "-" + p.next().text
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, p.fail(t, "malformed number")
		}
		raw, _ := json.Marshal(f)
		return exLit{raw: raw, pos: t.pos}, nil
	case t.kind == tString:
		p.next()
		raw, _ := json.Marshal(t.text)
		return exLit{raw: raw, pos: t.pos}, nil
	case p.isKw("TRUE"), p.isKw("FALSE"), p.isKw("NULL"):
		p.next()
		return exLit{raw: json.RawMessage(strings.ToLower(t.text)), pos: t.pos}, nil
	case t.kind == tBind:
		p.next()
		v, ok := p.binds[t.text]
		if !ok {
			return nil, &BindError{Num: 1551, Msg: "no value specified for declared bind parameter '" + t.text + "'"}
		}
		return exLit{raw: v, pos: t.pos}, nil
	case t.kind == tBindColl:
		p.next()
		name, err := p.collBind(t)
		if err != nil {
			return nil, err
		}
		return exColl{name: name, pos: t.pos}, nil
	case t.kind == tPunct && t.text == "(":
		p.next()
		if p.isKw("FOR") || p.isKw("RETURN") || p.isKw("LET") {
			return nil, p.fail(p.peek(), "subqueries are outside hilodb's AQL subset (see docs/http.md)")
		}
		e, err := p.expression()
		if err != nil {
			return nil, err
		}
		return e, p.expectPunct(")")
	case t.kind == tPunct && t.text == "[":
		return p.array()
	case t.kind == tPunct && t.text == "{":
		return p.object()
	case t.kind == tIdent:
		p.next()
		if p.isPunct("(") {
			return p.call(t)
		}
		v := exVar{name: t.text, pos: t.pos}
		for {
			switch {
			case p.isPunct("."):
				p.next()
				n := p.next()
				if n.kind != tIdent && n.kind != tKeyword {
					return nil, p.fail(n, "syntax error, expecting an attribute name")
				}
				if n.kind == tKeyword {
					n.text = p.text[n.pos : n.pos+len(n.text)]
				}
				v.segs = append(v.segs, n.text)
			case p.isPunct("["):
				p.next()
				n := p.next()
				switch {
				case n.kind == tString:
					v.segs = append(v.segs, n.text)
				case n.kind == tNumber && !strings.ContainsAny(n.text, ".eE"):
					v.segs = append(v.segs, n.text)
				case n.kind == tBind:
					var s string
					if json.Unmarshal(p.binds[n.text], &s) != nil {
						return nil, p.fail(n, "an attribute named by a bind parameter must be a string")
					}
					v.segs = append(v.segs, s)
				default:
					return nil, p.fail(n, "only a constant attribute name or array index is served inside [ ]")
				}
				if err := p.expectPunct("]"); err != nil {
					return nil, err
				}
			default:
				if len(v.segs) > 64 {
					return nil, p.fail(t, "attribute path too long")
				}
				return v, nil
			}
		}
	}
	if t.kind == tEOF {
		return nil, p.unexpected("an expression")
	}
	return nil, p.fail(t, "syntax error, unexpected "+strconv.Quote(t.text))
}

func (p *parser) collBind(t token) (string, error) {
	v, ok := p.binds["@"+t.text]
	if !ok {
		return "", &BindError{Num: 1551, Msg: "no value specified for declared bind parameter '@" + t.text + "'"}
	}
	var name string
	if json.Unmarshal(v, &name) != nil || name == "" {
		return "", &BindError{Num: 1553, Msg: "bind parameter '@" + t.text + "' has an invalid value or type"}
	}
	return name, nil
}

func (p *parser) call(name token) (expr, error) {
	fn := strings.ToUpper(name.text)
	if fn != "LENGTH" && fn != "DOCUMENT" && fn != "COUNT" && fn != "RANGE" {
		return nil, p.fail(name, "the function "+name.text+"() is outside hilodb's AQL subset (LENGTH, DOCUMENT and RANGE are served; see docs/http.md)")
	}
	p.next() // (
	c := exCall{name: fn, pos: name.pos}
	if fn == "COUNT" {
		c.name = "LENGTH"
	}
	for !p.isPunct(")") {
		if len(c.args) > 0 {
			if err := p.expectPunct(","); err != nil {
				return nil, err
			}
		}
		a, err := p.expression()
		if err != nil {
			return nil, err
		}
		c.args = append(c.args, a)
		if len(c.args) > 3 || len(c.args) > 2 && fn != "RANGE" {
			return nil, p.fail(name, fn+"() takes too many arguments")
		}
	}
	p.next()
	return c, nil
}

func (p *parser) array() (expr, error) {
	start := p.next()
	a := exArr{pos: start.pos}
	for !p.isPunct("]") {
		if len(a.items) > 0 {
			if err := p.expectPunct(","); err != nil {
				return nil, err
			}
			if p.isPunct("]") {
				break
			}
		}
		e, err := p.expression()
		if err != nil {
			return nil, err
		}
		a.items = append(a.items, e)
	}
	p.next()
	return fold(a), nil
}

func (p *parser) object() (expr, error) {
	start := p.next()
	o := exObj{pos: start.pos}
	for !p.isPunct("}") {
		if len(o.keys) > 0 {
			if err := p.expectPunct(","); err != nil {
				return nil, err
			}
			if p.isPunct("}") {
				break
			}
		}
		k := p.next()
		var key string
		switch k.kind {
		case tIdent, tString:
			key = k.text
		case tKeyword:
			key = p.text[k.pos : k.pos+len(k.text)]
		case tBind:
			if json.Unmarshal(p.binds[k.text], &key) != nil {
				return nil, p.fail(k, "an attribute named by a bind parameter must be a string")
			}
		default:
			return nil, p.fail(k, "syntax error, expecting an attribute name")
		}
		var v expr
		if p.isPunct(":") {
			p.next()
			var err error
			if v, err = p.expression(); err != nil {
				return nil, err
			}
		} else if k.kind == tIdent {
			v = exVar{name: key, pos: k.pos} // {x} is {x: x}
		} else {
			return nil, p.unexpected("':'")
		}
		o.keys = append(o.keys, key)
		o.vals = append(o.vals, v)
	}
	p.next()
	return fold(o), nil
}

// fold turns an array or object of constants into one constant.
func fold(e expr) expr {
	switch x := e.(type) {
	case exArr:
		out := make([]json.RawMessage, len(x.items))
		for i, it := range x.items {
			l, ok := it.(exLit)
			if !ok {
				return e
			}
			out[i] = l.raw
		}
		raw, _ := json.Marshal(out)
		return exLit{raw: raw, pos: x.pos}
	case exObj:
		var b []byte
		b = append(b, '{')
		for i, k := range x.keys {
			l, ok := x.vals[i].(exLit)
			if !ok {
				return e
			}
			if i > 0 {
				b = append(b, ',')
			}
			kb, _ := json.Marshal(k)
			b = append(b, kb...)
			b = append(b, ':')
			b = append(b, l.raw...)
		}
		return exLit{raw: append(b, '}'), pos: x.pos}
	}
	return e
}
