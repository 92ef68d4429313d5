package query

import (
	"bytes"
	"container/heap"
	"errors"
	"slices"
	"sort"

	"github.com/tidwall/gjson"
)

// Pager gathers one page of a query from candidate documents: it checks
// each against the selector and the bookmark, keeps what may be on the
// page, and orders and cuts it. Every store that runs queries (a local
// store's planner, the sync server's scans) feeds one, so a page means the
// same everywhere.
type Pager struct {
	q      *Query
	after  []byte
	need   int  // stop once this many are held, where the order allows; -1: never
	exact  bool // the candidates come in the query's exact order, ties included
	proven bool // every candidate matches the selector (PagerOptions.Covered)
	lazy   bool // exact, with no bookmark: rows are held without their sort keys
	tied   bool // rows came through AddTied: in order but for ties, without sort keys
	group  int  // AddTied's count of tie groups
	tie    string
	count  bool // only count matches
	got    []pageRow
	last   []byte // the sort key without its _id of the last row held
	keyBuf []byte
	keep   int // with a limit and candidates in no order: hold only the first keep rows (a heap)
	bytes  int // the documents held
	max    int // PagerOptions.MaxBytes

	// Examined counts the candidates given; Matched those taken.
	Examined, Matched int
}

type pageRow struct {
	key   []byte // nil for rows held without (lazy, tied)
	doc   string
	group int // AddTied's tie group
}

// PagerOptions say in what order a Pager's candidates come.
type PagerOptions struct {
	// Ordered: the candidates come in the query's order but for ties (the
	// documents whose sort values are equal come in any order among
	// themselves), so a full page ends the feed once its last tie is in.
	Ordered bool
	// Exact: they come in the query's exact order, ties by _id included,
	// so a full page ends the feed at once.
	Exact bool
	// CountOnly: only count the matches (Matched).
	CountOnly bool
	// Covered: every candidate is known to match the selector (an index
	// whose keys prove it: Selector.Covers), so none is checked.
	Covered bool
	// MaxBytes bounds the documents a Pager holds: past it Add fails
	// (Err reports ErrTooBig). 0: no bound.
	MaxBytes int
}

// ErrTooBig is what a Pager reports when the documents it would hold pass
// PagerOptions.MaxBytes.
var ErrTooBig = errors.New("query page too big")

// NewPager returns a Pager for q. It fails with ErrBadQuery for a
// bookmark of a query that orders otherwise.
func (q *Query) NewPager(o PagerOptions) (*Pager, error) {
	after, err := q.After()
	if err != nil {
		return nil, err
	}
	p := &Pager{q: q, after: after, need: -1, exact: o.Exact, proven: o.Covered, count: o.CountOnly, max: o.MaxBytes}
	p.lazy = o.Exact && after == nil && !o.CountOnly
	if q.Limit > 0 && !o.CountOnly {
		if o.Ordered || o.Exact {
			p.need = q.Skip + q.Limit
		} else {
			p.keep = q.Skip + q.Limit
		}
		if n := q.Skip + q.Limit; n <= 1024 {
			p.got = make([]pageRow, 0, n) // room for a page, ties past it aside
		}
	}
	return p, nil
}

// Err reports why the last Add stopped the feed early, if it was not a
// full page: ErrTooBig.
func (p *Pager) Err() error {
	if p.max > 0 && p.bytes > p.max {
		return ErrTooBig
	}
	return nil
}

// Add offers the document doc; it reports false once the page is complete
// and no later candidate can be on it.
func (p *Pager) Add(doc string) bool {
	p.Examined++
	if !p.proven && !p.q.Selector.MatchString(doc) {
		return true
	}
	if p.count {
		p.Matched++
		return true
	}
	if p.lazy {
		// In the page's exact order from the first candidate: each match
		// is the page's next row, and only the last row's sort key is ever
		// needed (for the bookmark, made by Page).
		p.Matched++
		p.got = append(p.got, pageRow{doc: doc})
		p.bytes += len(doc)
		if p.max > 0 && p.bytes > p.max {
			return false
		}
		return p.need < 0 || len(p.got) < p.need
	}
	var idLen int
	p.keyBuf, idLen = p.q.appendSortKey(p.keyBuf[:0], gjson.Parse(doc))
	if p.after != nil && bytes.Compare(p.keyBuf, p.after) <= 0 {
		return true
	}
	prefix := p.keyBuf[:len(p.keyBuf)-idLen]
	if p.need >= 0 && len(p.got) >= p.need && (p.exact || !bytes.Equal(prefix, p.last)) {
		return false // past the page, and past every tie of its last document
	}
	p.Matched++
	if p.keep > 0 && len(p.got) == p.keep {
		// A full heap of the first rows: this one goes in only in place
		// of the last of them.
		if bytes.Compare(p.keyBuf, p.got[0].key) >= 0 {
			return true
		}
		p.bytes -= len(p.got[0].doc)
		p.got[0] = pageRow{key: append([]byte(nil), p.keyBuf...), doc: doc}
		heap.Fix((*lastFirst)(&p.got), 0)
		p.bytes += len(doc)
		return true
	}
	key := append([]byte(nil), p.keyBuf...)
	p.got = append(p.got, pageRow{key: key, doc: doc})
	p.last = key[:len(prefix)]
	p.bytes += len(doc)
	if p.keep > 0 && len(p.got) == p.keep {
		heap.Init((*lastFirst)(&p.got))
	}
	return p.max == 0 || p.bytes <= p.max
}

// AddTied is Add for candidates that come in the query's order but for
// ties (PagerOptions.Ordered), each with tie: a text equal for two
// candidates exactly when their sort values are (an index's key without
// its id, when the query sorts by every field the index reads after its
// equalities). No candidate's sort key is made: Page puts each run of
// ties in order of _id. With a bookmark it is Add.
func (p *Pager) AddTied(doc, tie string) bool {
	if p.after != nil || p.count || p.keep > 0 || p.lazy {
		return p.Add(doc)
	}
	p.Examined++
	if !p.proven && !p.q.Selector.MatchString(doc) {
		return true
	}
	newGroup := len(p.got) == 0 || tie != p.tie
	if p.need >= 0 && len(p.got) >= p.need && newGroup {
		return false // past the page, and past every tie of its last document
	}
	p.Matched++
	if newGroup {
		p.group++
		p.tie = tie
	}
	p.tied = true
	p.got = append(p.got, pageRow{doc: doc, group: p.group})
	p.bytes += len(doc)
	return p.max == 0 || p.bytes <= p.max
}

// sortTies puts each run of rows of one tie group in order of _id.
func sortTies(rows []pageRow) {
	for i := 0; i < len(rows); {
		j := i + 1
		for j < len(rows) && rows[j].group == rows[i].group {
			j++
		}
		if j-i > 1 {
			run := rows[i:j]
			sort.SliceStable(run, func(a, b int) bool {
				return idPath().getIn(gjson.Parse(run[a].doc)).Str < idPath().getIn(gjson.Parse(run[b].doc)).Str
			})
		}
		i = j
	}
}

// lastFirst orders rows as a max-heap: the row that sorts last on top.
type lastFirst []pageRow

func (h lastFirst) Len() int           { return len(h) }
func (h lastFirst) Less(i, j int) bool { return bytes.Compare(h[i].key, h[j].key) > 0 }
func (h lastFirst) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *lastFirst) Push(x any)        { *h = append(*h, x.(pageRow)) }
func (h *lastFirst) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Page returns the page: the documents in the query's order, after its
// skip, at most its limit, projected to its fields; and the bookmark of
// the page after it when the page is full.
func (p *Pager) Page() (docs [][]byte, bookmark string) {
	rows, bookmark := p.page()
	docs = make([][]byte, len(rows))
	for i, r := range rows {
		docs[i] = p.q.Project([]byte(r.doc))
	}
	return docs, bookmark
}

// AppendPage appends the page to dst as the JSON text
// {"docs":[...],"bookmark":"..."} (no bookmark when the page is the
// last), the documents as Page gives them, in one allocation at most.
func (p *Pager) AppendPage(dst []byte) []byte {
	rows, bookmark := p.page()
	var projected [][]byte
	size := len(`{"docs":[]}`) + len(rows)
	if len(p.q.Fields) > 0 {
		projected = make([][]byte, len(rows))
		for i, r := range rows {
			projected[i] = p.q.Project([]byte(r.doc))
			size += len(projected[i])
		}
	} else {
		for _, r := range rows {
			size += len(r.doc)
		}
	}
	if bookmark != "" {
		size += len(`,"bookmark":""`) + len(bookmark) // base64url: nothing to escape
	}
	dst = slices.Grow(dst, size)
	dst = append(dst, `{"docs":[`...)
	for i, r := range rows {
		if i > 0 {
			dst = append(dst, ',')
		}
		if projected != nil {
			dst = append(dst, projected[i]...)
		} else {
			dst = append(dst, r.doc...)
		}
	}
	dst = append(dst, ']')
	if bookmark != "" {
		dst = append(append(append(dst, `,"bookmark":"`...), bookmark...), '"')
	}
	return append(dst, '}')
}

// page returns the rows of the page, in order, and its bookmark.
func (p *Pager) page() (rows []pageRow, bookmark string) {
	rows = p.got
	switch {
	case p.tied:
		sortTies(rows)
	case !p.lazy: // lazy rows came in order
		sort.Slice(rows, func(i, j int) bool { return bytes.Compare(rows[i].key, rows[j].key) < 0 })
	}
	if p.q.Skip >= len(rows) {
		rows = nil
	} else {
		rows = rows[p.q.Skip:]
	}
	if p.q.Limit > 0 && len(rows) > p.q.Limit {
		rows = rows[:p.q.Limit]
	}
	if p.q.Limit > 0 && len(rows) == p.q.Limit {
		last := rows[len(rows)-1]
		if last.key == nil {
			last.key = p.q.SortKey([]byte(last.doc))
		}
		bookmark = p.q.BookmarkFor(last.key)
	}
	return rows, bookmark
}

// SortNames returns q's order as text, a field a name ("createdAt desc").
func (q *Query) SortNames() []string {
	var out []string
	for _, f := range q.Sort {
		d := f.Path.raw
		if f.Desc {
			d += " desc"
		}
		out = append(out, d)
	}
	return out
}
