package rql

import (
	"github.com/hilodb/hilodb/core/query"
)

// Compile returns the query the engine runs: the selector (and'ed with
// scope, a selector that picks the collection's documents, when not nil),
// the order, and the page. A limit of 0 asks for no documents (a count):
// the caller checks q.Limit, since the engine's 0 means no limit.
func (q *Query) Compile(scope []byte) (*query.Query, error) {
	sel := q.Selector
	if len(scope) > 0 {
		sel = obj("$and", array([][]byte{scope, q.Selector}))
	}
	s, err := query.ParseSelector(sel)
	if err != nil {
		return nil, err
	}
	out := &query.Query{Selector: s, Skip: q.Offset}
	if q.Offset > query.MaxSkip {
		return nil, errorAt(0, "offset %d is past the most a query may pass over (%d)", q.Offset, query.MaxSkip)
	}
	if q.Limit > 0 {
		out.Limit = q.Limit
	}
	for _, f := range q.Sort {
		p, err := query.ParsePath(f.Field)
		if err != nil {
			return nil, err
		}
		out.Sort = append(out.Sort, query.SortField{Path: p, Desc: f.Desc})
	}
	return out, nil
}

// IndexName is the name RavenDB gives the automatic index that serves the
// query: Auto/<Collection>/By<Field>And<Field> from the fields the where
// and order by clauses name; the collection's name for a query that names
// none, AllDocs for @all_docs.
func (q *Query) IndexName() string {
	coll := q.Collection
	if q.AllDocs {
		coll = "AllDocs"
	}
	if len(q.Fields) == 0 {
		return coll
	}
	name := "Auto/" + coll + "/By"
	for i, f := range q.Fields {
		if i > 0 {
			name += "And"
		}
		name += f
	}
	return name
}
