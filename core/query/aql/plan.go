package aql

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/hilodb/hilodb/core/query"
)

// BindError is a bind parameter missing (1551), not used (1552) or of the
// wrong kind (1553), numbered as ArangoDB numbers them.
type BindError struct {
	Num int
	Msg string
}

func (e *BindError) Error() string { return e.Msg }

// Kind says what a Plan reads.
type Kind int

// The kinds of Plan.
const (
	// ForCollection: FOR over a collection's documents (Collection), the
	// matches of Query, each projected.
	ForCollection Kind = iota
	// ForValues: FOR over an array of values (Values); Run answers it.
	ForValues
	// Length: RETURN LENGTH(coll), the number of coll's documents.
	Length
	// Document: RETURN DOCUMENT(…), the documents DocIDs names (an array
	// of those found when DocArray, else the one document or null).
	Document
	// Value: RETURN of a constant (Value).
	Value
)

// maxRange bounds the values of a..b.
const maxRange = 1 << 17

// Plan is a parsed query: what it reads, and how each result is made.
type Plan struct {
	Kind       Kind
	Collection string            // ForCollection, Length
	Values     []json.RawMessage // ForValues
	Query      *query.Query      // ForCollection, ForValues: selector, sort, skip, limit
	Count      bool              // COLLECT WITH COUNT: one result, made by CountResult
	DocIDs     []string          // Document
	DocArray   bool              // Document: DOCUMENT of an array
	Value      json.RawMessage   // Value

	varName   string // the FOR variable
	countVar  string // COLLECT WITH COUNT INTO's variable
	ret       expr   // the RETURN expression
	values    bool   // the variable is a value (ForValues), not a document
	zeroLimit bool   // LIMIT 0: no results
}

// Parse parses text with its bind parameters (names without the leading
// @; a collection's as "@name"). It fails with a *SyntaxError for a query
// outside the subset or malformed, a *BindError for a bind parameter.
func Parse(text string, binds map[string]json.RawMessage) (*Plan, error) {
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	p := &parser{text: text, toks: toks, binds: binds}
	used := usedBinds(toks)
	for name := range binds {
		if !used[name] {
			return nil, &BindError{Num: 1552, Msg: "bind parameter '" + name + "' was not declared in the query"}
		}
	}
	var plan *Plan
	switch {
	case p.isKw("FOR"):
		plan, err = p.forQuery()
	case p.isKw("RETURN"):
		plan, err = p.returnQuery()
	case p.peek().kind == tEOF:
		return nil, p.fail(p.peek(), "syntax error, unexpected end of query")
	default:
		t := p.peek()
		return nil, p.fail(t, "syntax error, unexpected "+strconv.Quote(t.text)+": hilodb's AQL subset starts with FOR or RETURN (see docs/http.md)")
	}
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.fail(t, "syntax error, unexpected "+strconv.Quote(t.text)+", expecting end of query (hilodb's AQL subset has one FOR and one RETURN)")
	}
	return plan, nil
}

// usedBinds names the bind parameters the query mentions.
func usedBinds(toks []token) map[string]bool {
	used := map[string]bool{}
	for _, t := range toks {
		switch t.kind {
		case tBind:
			used[t.text] = true
		case tBindColl:
			used["@"+t.text] = true
		}
	}
	return used
}

// forQuery reads FOR x IN source, its FILTERs, SORT, LIMIT, COLLECT and
// RETURN.
func (p *parser) forQuery() (*Plan, error) {
	p.next() // FOR
	v := p.next()
	if v.kind != tIdent {
		return nil, p.fail(v, "syntax error, expecting a variable name after FOR")
	}
	if p.isPunct(",") {
		return nil, p.fail(p.peek(), "graph traversals are outside hilodb's AQL subset")
	}
	if err := p.expectKw("IN"); err != nil {
		return nil, err
	}
	plan := &Plan{varName: v.text, Query: &query.Query{}}
	src := p.peek()
	switch {
	case src.kind == tIdent && !(p.toks[p.i+1].kind == tPunct && (p.toks[p.i+1].text == "(" || p.toks[p.i+1].text == ".")):
		p.next()
		plan.Kind, plan.Collection = ForCollection, src.text
	case src.kind == tBindColl:
		p.next()
		name, err := p.collBind(src)
		if err != nil {
			return nil, err
		}
		plan.Kind, plan.Collection = ForCollection, name
	default:
		if p.isKw("OUTBOUND") || p.isKw("INBOUND") || p.isKw("ANY") || src.kind == tNumber && p.toks[p.i+1].kind == tKeyword {
			return nil, p.fail(src, "graph traversals are outside hilodb's AQL subset")
		}
		e, err := p.rangeExpr()
		if err != nil {
			return nil, err
		}
		vals, err := p.values(e)
		if err != nil {
			return nil, err
		}
		plan.Kind, plan.Values, plan.values = ForValues, vals, true
	}
	var filters []expr
	sorted, limited := false, false
	for {
		t := p.peek()
		switch {
		case p.isKw("FILTER"):
			if sorted || limited {
				return nil, p.fail(t, "a FILTER after SORT or LIMIT is outside hilodb's AQL subset: filter first")
			}
			p.next()
			e, err := p.expression()
			if err != nil {
				return nil, err
			}
			filters = append(filters, e)
		case p.isKw("SORT"):
			if sorted || limited {
				return nil, p.fail(t, "one SORT, before LIMIT, is served")
			}
			p.next()
			if err := p.sortClause(plan); err != nil {
				return nil, err
			}
			sorted = true
		case p.isKw("LIMIT"):
			if limited {
				return nil, p.fail(t, "one LIMIT is served")
			}
			p.next()
			if err := p.limitClause(plan); err != nil {
				return nil, err
			}
			limited = true
		case p.isKw("COLLECT"):
			p.next()
			if !p.isKw("WITH") {
				return nil, p.fail(p.peek(), "COLLECT WITH COUNT INTO is the COLLECT hilodb's AQL subset serves")
			}
			p.next()
			if err := p.expectKw("COUNT"); err != nil {
				return nil, err
			}
			if err := p.expectKw("INTO"); err != nil {
				return nil, err
			}
			n := p.next()
			if n.kind != tIdent {
				return nil, p.fail(n, "syntax error, expecting a variable name after INTO")
			}
			plan.Count, plan.countVar = true, n.text
			if !p.isKw("RETURN") {
				return nil, p.unexpected("RETURN")
			}
		case p.isKw("RETURN"):
			p.next()
			if p.isKw("DISTINCT") {
				return nil, p.fail(p.peek(), "RETURN DISTINCT is outside hilodb's AQL subset")
			}
			e, err := p.expression()
			if err != nil {
				return nil, err
			}
			if err := plan.checkVars(p, e); err != nil {
				return nil, err
			}
			plan.ret = e
			sel, err := plan.selector(p, filters)
			if err != nil {
				return nil, err
			}
			plan.Query.Selector = sel
			return plan, nil
		case t.kind == tEOF:
			return nil, p.unexpected("RETURN")
		case t.kind == tKeyword:
			return nil, p.fail(t, "the "+t.text+" operation is outside hilodb's AQL subset (FOR, FILTER, SORT, LIMIT, COLLECT WITH COUNT INTO, RETURN; see docs/http.md)")
		default:
			return nil, p.fail(t, "syntax error, unexpected "+strconv.Quote(t.text))
		}
	}
}

// values evaluates a FOR's source that is not a collection: a range or
// an array.
func (p *parser) values(e expr) ([]json.RawMessage, error) {
	switch x := e.(type) {
	case exRange:
		return p.rangeValues(x.lo, x.hi, nil, x.pos)
	case exCall:
		if x.name == "RANGE" && len(x.args) >= 2 {
			var step expr
			if len(x.args) == 3 {
				step = x.args[2]
			}
			return p.rangeValues(x.args[0], x.args[1], step, x.pos)
		}
	case exLit:
		var arr []json.RawMessage
		if json.Unmarshal(x.raw, &arr) != nil {
			return nil, errAt(p.text, x.pos, "FOR goes over a collection, a range or an array")
		}
		return arr, nil
	}
	return nil, errAt(p.text, e.at(), "FOR goes over a collection, a range or an array of constants in hilodb's AQL subset")
}

// rangeValues are the whole numbers from lo to hi (a..b, or RANGE with
// an optional step).
func (p *parser) rangeValues(loE, hiE, stepE expr, pos int) ([]json.RawMessage, error) {
	lo, ok1 := intOf(loE)
	hi, ok2 := intOf(hiE)
	if !ok1 || !ok2 {
		return nil, errAt(p.text, pos, "a range's bounds must be whole numbers")
	}
	step := int64(1)
	if hi < lo {
		step = -1
	}
	if stepE != nil {
		s, ok := intOf(stepE)
		if !ok || s == 0 || (s > 0) != (hi >= lo) {
			return nil, errAt(p.text, pos, "RANGE's step must be a whole number toward the end")
		}
		step = s
	}
	n := (hi - lo) / step
	if n < 0 || n >= maxRange {
		return nil, errAt(p.text, pos, fmt.Sprintf("a range holds at most %d values", maxRange))
	}
	out := make([]json.RawMessage, 0, n+1)
	for i := int64(0); i <= n; i++ {
		out = append(out, json.RawMessage(strconv.FormatInt(lo+i*step, 10)))
	}
	return out, nil
}

func intOf(e expr) (int64, bool) {
	l, ok := e.(exLit)
	if !ok {
		return 0, false
	}
	var f float64
	if json.Unmarshal(l.raw, &f) != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

func (p *parser) sortClause(plan *Plan) error {
	for {
		t := p.peek()
		e, err := p.operand()
		if err != nil {
			return err
		}
		path, err := plan.path(p, e)
		if err != nil {
			return err
		}
		f := query.SortField{Path: path}
		if p.isKw("DESC") {
			p.next()
			f.Desc = true
		} else if p.isKw("ASC") {
			p.next()
		}
		if len(plan.Query.Sort) >= 16 {
			return p.fail(t, "at most 16 sort fields")
		}
		plan.Query.Sort = append(plan.Query.Sort, f)
		if !p.isPunct(",") {
			return nil
		}
		p.next()
	}
}

func (p *parser) limitClause(plan *Plan) error {
	num := func() (int, error) {
		t := p.peek()
		e, err := p.operand()
		if err != nil {
			return 0, err
		}
		n, ok := intOf(e)
		if !ok || n < 0 || n > 1<<31-1 {
			return 0, p.fail(t, "LIMIT takes whole numbers from 0")
		}
		return int(n), nil
	}
	a, err := num()
	if err != nil {
		return err
	}
	if p.isPunct(",") {
		t := p.next()
		b, err := num()
		if err != nil {
			return err
		}
		if a > query.MaxSkip {
			return p.fail(t, fmt.Sprintf("a LIMIT's offset is at most %d", query.MaxSkip))
		}
		plan.Query.Skip, plan.Query.Limit = a, b
	} else {
		plan.Query.Limit = a
	}
	if plan.Query.Limit == 0 {
		plan.zeroLimit = true
	}
	return nil
}

// returnQuery reads a RETURN without FOR: LENGTH, DOCUMENT or a constant.
func (p *parser) returnQuery() (*Plan, error) {
	p.next() // RETURN
	e, err := p.expression()
	if err != nil {
		return nil, err
	}
	switch x := e.(type) {
	case exLit:
		return &Plan{Kind: Value, Value: x.raw}, nil
	case exCall:
		return p.callPlan(x)
	}
	return nil, errAt(p.text, e.at(), "a RETURN without FOR returns LENGTH(coll), DOCUMENT(…) or a constant in hilodb's AQL subset")
}

func (p *parser) callPlan(c exCall) (*Plan, error) {
	collOf := func(e expr) (string, bool) {
		switch x := e.(type) {
		case exVar:
			return x.name, len(x.segs) == 0
		case exColl:
			return x.name, true
		case exLit:
			var s string
			return s, json.Unmarshal(x.raw, &s) == nil && s != ""
		}
		return "", false
	}
	switch c.name {
	case "LENGTH":
		if len(c.args) != 1 {
			return nil, errAt(p.text, c.pos, "LENGTH() takes one collection")
		}
		if _, ok := c.args[0].(exLit); !ok {
			if name, ok := collOf(c.args[0]); ok {
				return &Plan{Kind: Length, Collection: name}, nil
			}
		}
		return nil, errAt(p.text, c.pos, "LENGTH() of a collection is served outside FOR")
	case "DOCUMENT":
		plan := &Plan{Kind: Document}
		var arg expr
		switch len(c.args) {
		case 1:
			arg = c.args[0]
		case 2:
			coll, ok := collOf(c.args[0])
			if !ok {
				return nil, errAt(p.text, c.pos, "DOCUMENT(coll, key) takes a collection first")
			}
			plan.Collection = coll
			arg = c.args[1]
		default:
			return nil, errAt(p.text, c.pos, "DOCUMENT() takes an id, or a collection and a key")
		}
		l, ok := arg.(exLit)
		if !ok {
			return nil, errAt(p.text, arg.at(), "DOCUMENT() takes constant ids or keys in hilodb's AQL subset")
		}
		var one string
		var many []string
		switch {
		case json.Unmarshal(l.raw, &one) == nil:
			many = []string{one}
		case json.Unmarshal(l.raw, &many) == nil:
			plan.DocArray = true
		default:
			return nil, errAt(p.text, arg.at(), "DOCUMENT() takes a string or an array of strings")
		}
		if len(many) > 1000 {
			return nil, errAt(p.text, arg.at(), "DOCUMENT() takes at most 1000 ids")
		}
		for _, id := range many {
			if plan.Collection != "" && !containsSlash(id) {
				id = plan.Collection + "/" + id
			}
			plan.DocIDs = append(plan.DocIDs, id)
		}
		return plan, nil
	}
	return nil, errAt(p.text, c.pos, "unexpected function")
}

func containsSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return true
		}
	}
	return false
}
