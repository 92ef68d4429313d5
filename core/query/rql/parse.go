package rql

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Query is a parsed RQL query.
type Query struct {
	Collection string // the collection, "" for @all_docs
	AllDocs    bool   // from @all_docs
	Selector   []byte // the where clause as a Mango selector ({} without one)
	Sort       []Sort
	Offset     int      // documents passed over first
	Limit      int      // at most this many; -1: no limit
	Select     []Field  // the projection; empty: whole documents
	Include    []string // paths of ids whose documents come along
	Fields     []string // the fields where and order by name, first use first
}

// Sort is one order by criterion.
type Sort struct {
	Field string // a path; _id for id()
	Desc  bool
	As    string // "", "long", "double", "string" or "alphaNumeric"
}

// Field is one projected field: the value at Path, named Alias.
type Field struct {
	Path  string // a path; _id for id()
	Alias string
}

// Bounds of one query.
const (
	maxDepth    = 32
	maxInValues = 1024
	maxRegex    = 1024
)

// Parse reads text with its parameters (QueryParameters: names without $,
// JSON values).
func Parse(text string, params map[string]json.RawMessage) (*Query, error) {
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, params: params, q: &Query{Limit: -1}}
	if err := p.query(); err != nil {
		return nil, err
	}
	return p.q, nil
}

type parser struct {
	toks   []token
	i      int
	params map[string]json.RawMessage
	q      *Query
	alias  string
	exact  bool
	fields map[string]bool
}

func (p *parser) peek() token { return p.toks[p.i] }

// second is the token after the next one (the end at the end).
func (p *parser) second() token { return p.toks[min(p.i+1, len(p.toks)-1)] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

// isWord reports whether the next token is the keyword kw (any case).
func (p *parser) isWord(kw string) bool {
	t := p.peek()
	return t.kind == tokWord && strings.EqualFold(t.text, kw)
}

func (p *parser) isPunct(s string) bool {
	t := p.peek()
	return t.kind == tokPunct && t.text == s
}

func (p *parser) expectPunct(s string) error {
	if !p.isPunct(s) {
		return p.unexpected("'" + s + "'")
	}
	p.next()
	return nil
}

func (p *parser) unexpected(want string) error {
	t := p.peek()
	if t.kind == tokEOF {
		return errorAt(t.pos, "expected %s, found the end of the query", want)
	}
	return errorAt(t.pos, "expected %s, found %q", want, t.text)
}

func (p *parser) query() error {
	if p.isWord("declare") {
		return notServed(p.peek().pos, "declare function")
	}
	if p.isWord("with") {
		return notServed(p.peek().pos, "with")
	}
	if !p.isWord("from") {
		return p.unexpected("from")
	}
	p.next()
	if err := p.from(); err != nil {
		return err
	}
	if p.isWord("group") {
		return notServed(p.peek().pos, "group by (map-reduce)")
	}
	p.q.Selector = []byte("{}")
	if p.isWord("where") {
		p.next()
		sel, err := p.expr(0)
		if err != nil {
			return err
		}
		p.q.Selector = sel
	}
	if p.isWord("order") {
		if err := p.orderBy(); err != nil {
			return err
		}
	}
	for _, kw := range []string{"load", "filter", "update"} {
		if p.isWord(kw) {
			return notServed(p.peek().pos, kw)
		}
	}
	if p.isWord("select") {
		if err := p.selectClause(); err != nil {
			return err
		}
	}
	if p.isWord("include") {
		if err := p.include(); err != nil {
			return err
		}
	}
	if err := p.paging(); err != nil {
		return err
	}
	for _, kw := range []string{"filter", "filter_limit", "update", "load", "select", "include"} {
		if p.isWord(kw) {
			return notServed(p.peek().pos, kw+" in this place")
		}
	}
	if t := p.peek(); t.kind != tokEOF {
		return errorAt(t.pos, "unexpected %q after the end of the query", t.text)
	}
	return nil
}

func (p *parser) from() error {
	if p.isWord("index") {
		return notServed(p.peek().pos, "a query of a static index (from index)")
	}
	t := p.next()
	switch {
	case t.kind == tokWord && strings.EqualFold(t.text, "@all_docs"):
		p.q.AllDocs = true
	case t.kind == tokWord && strings.HasPrefix(t.text, "@"):
		return notServed(t.pos, "the collection "+strconv.Quote(t.text))
	case t.kind == tokWord && !strings.ContainsAny(t.text, ".[]@"), t.kind == tokString && t.text != "":
		if strings.HasPrefix(t.text, "@") {
			return notServed(t.pos, "the collection "+strconv.Quote(t.text))
		}
		p.q.Collection = t.text
	default:
		p.i--
		return p.unexpected("a collection name")
	}
	if p.isWord("as") {
		p.next()
		a := p.next()
		if a.kind != tokWord || strings.ContainsAny(a.text, ".[]@") {
			p.i--
			return p.unexpected("an alias")
		}
		p.alias = a.text
	} else if t := p.peek(); t.kind == tokWord && !isKeyword(t.text) {
		p.next()
		p.alias = t.text
	}
	return nil
}

func isKeyword(s string) bool {
	switch strings.ToLower(s) {
	case "where", "order", "select", "include", "limit", "offset", "load", "group", "filter", "update", "filter_limit":
		return true
	}
	return false
}

// field reads a field reference: a name or path, a quoted one, or id().
func (p *parser) field() (string, error) {
	t := p.next()
	switch t.kind {
	case tokWord:
		if strings.EqualFold(t.text, "id") && p.isPunct("(") {
			p.next()
			if err := p.expectPunct(")"); err != nil {
				return "", err
			}
			return "_id", nil
		}
		if isKeyword(t.text) || strings.EqualFold(t.text, "and") || strings.EqualFold(t.text, "or") || strings.EqualFold(t.text, "not") {
			p.i--
			return "", p.unexpected("a field")
		}
	case tokString:
		if t.text == "" {
			return "", errorAt(t.pos, "an empty field name")
		}
	default:
		p.i--
		return "", p.unexpected("a field")
	}
	f := t.text
	if p.alias != "" && strings.HasPrefix(f, p.alias+".") {
		f = f[len(p.alias)+1:]
	}
	if f == "" || strings.HasPrefix(f, "$") || strings.HasPrefix(f, ".") || strings.HasSuffix(f, ".") || strings.Contains(f, "..") {
		return "", errorAt(t.pos, "%q is not a field path", t.text)
	}
	return f, nil
}

func (p *parser) useField(f string) {
	if f == "_id" {
		return
	}
	if p.fields == nil {
		p.fields = map[string]bool{}
	}
	if !p.fields[f] {
		p.fields[f] = true
		p.q.Fields = append(p.q.Fields, f)
	}
}

// value reads a literal or a parameter as JSON.
func (p *parser) value() (json.RawMessage, error) {
	t := p.next()
	switch t.kind {
	case tokString:
		b, _ := json.Marshal(t.text)
		return b, nil
	case tokNumber:
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil {
			return nil, errorAt(t.pos, "%q is not a number", t.text)
		}
		b, _ := json.Marshal(f)
		return b, nil
	case tokParam:
		v, ok := p.params[t.text]
		if !ok {
			return nil, errorAt(t.pos, "the parameter $%s is not in QueryParameters", t.text)
		}
		if len(v) == 0 {
			return json.RawMessage("null"), nil
		}
		return v, nil
	case tokWord:
		switch strings.ToLower(t.text) {
		case "null":
			return json.RawMessage("null"), nil
		case "true":
			return json.RawMessage("true"), nil
		case "false":
			return json.RawMessage("false"), nil
		}
	}
	p.i--
	return nil, p.unexpected("a value or a $parameter")
}

func (p *parser) orderBy() error {
	p.next()
	if !p.isWord("by") {
		return p.unexpected("by")
	}
	p.next()
	for {
		if t := p.peek(); t.kind == tokWord && (strings.EqualFold(t.text, "score") || strings.EqualFold(t.text, "random")) && p.second().text == "(" {
			return notServed(t.pos, "order by "+t.text+"()")
		}
		if t := p.peek(); t.kind == tokWord && strings.HasPrefix(strings.ToLower(t.text), "spatial.") {
			return notServed(t.pos, "spatial ordering")
		}
		f, err := p.field()
		if err != nil {
			return err
		}
		if strings.Contains(f, "[]") {
			return errorAt(p.peek().pos, "order by an array's elements (%s) is not served", f)
		}
		s := Sort{Field: f}
		if p.isWord("as") {
			p.next()
			t := p.next()
			switch strings.ToLower(t.text) {
			case "long", "double", "string":
				s.As = strings.ToLower(t.text)
			case "alphanumeric":
				s.As = "alphaNumeric"
			default:
				p.i--
				return p.unexpected("long, double, string or alphaNumeric")
			}
		}
		if p.isWord("desc") || p.isWord("descending") {
			p.next()
			s.Desc = true
		} else if p.isWord("asc") || p.isWord("ascending") {
			p.next()
		}
		p.useField(f)
		if len(p.q.Sort) >= 16 {
			return errorAt(p.peek().pos, "at most 16 order by fields")
		}
		p.q.Sort = append(p.q.Sort, s)
		if !p.isPunct(",") {
			return nil
		}
		p.next()
	}
}

func (p *parser) selectClause() error {
	pos := p.next().pos
	if p.isWord("distinct") {
		return notServed(p.peek().pos, "select distinct")
	}
	if p.peek().kind == tokBlock {
		return notServed(pos, "a JavaScript projection")
	}
	for {
		if t := p.peek(); t.kind == tokWord && p.second().text == "(" && !strings.EqualFold(t.text, "id") {
			return notServed(t.pos, "the function "+t.text+"() in select")
		}
		f, err := p.field()
		if err != nil {
			return err
		}
		alias := f
		if f == "_id" {
			alias = "id"
		}
		if p.isWord("as") {
			p.next()
			t := p.next()
			if t.kind != tokWord && t.kind != tokString || t.text == "" {
				p.i--
				return p.unexpected("an alias")
			}
			alias = t.text
		}
		if len(p.q.Select) >= 256 {
			return errorAt(p.peek().pos, "at most 256 projected fields")
		}
		p.q.Select = append(p.q.Select, Field{Path: f, Alias: alias})
		if !p.isPunct(",") {
			return nil
		}
		p.next()
	}
}

func (p *parser) include() error {
	p.next()
	for {
		t := p.next()
		if t.kind == tokWord && p.isPunct("(") {
			return notServed(t.pos, "include "+t.text+"()")
		}
		if t.kind != tokWord && t.kind != tokString || t.text == "" {
			p.i--
			return p.unexpected("an include path")
		}
		path := t.text
		if p.alias != "" && strings.HasPrefix(path, p.alias+".") {
			path = path[len(p.alias)+1:]
		}
		if len(p.q.Include) >= 64 {
			return errorAt(t.pos, "at most 64 include paths")
		}
		p.q.Include = append(p.q.Include, path)
		if !p.isPunct(",") {
			return nil
		}
		p.next()
	}
}

// paging reads limit a[, b] (a count, or an offset and a count) and
// offset n, in either order; a null parameter means no bound.
func (p *parser) paging() error {
	for p.isWord("limit") || p.isWord("offset") {
		kw := strings.ToLower(p.next().text)
		a, err := p.whole()
		if err != nil {
			return err
		}
		if kw == "offset" {
			p.q.Offset = max(a, 0)
			continue
		}
		if p.isPunct(",") {
			p.next()
			b, err := p.whole()
			if err != nil {
				return err
			}
			p.q.Offset, p.q.Limit = max(a, 0), b
			continue
		}
		p.q.Limit = a
	}
	return nil
}

// whole reads a whole number from 0 to 2^31-1 (-1 for null).
func (p *parser) whole() (int, error) {
	pos := p.peek().pos
	v, err := p.value()
	if err != nil {
		return 0, err
	}
	if string(v) == "null" {
		return -1, nil
	}
	n, err := strconv.ParseFloat(string(v), 64)
	if err != nil || n < 0 || n != float64(int64(n)) || n > 1<<31-1 {
		return 0, errorAt(pos, "limit and offset take whole numbers from 0 to %d", 1<<31-1)
	}
	return int(n), nil
}
