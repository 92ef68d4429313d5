package core

import (
	"fmt"
	"unsafe"

	"github.com/hilodb/hilodb/core/query"
)

// Plan is how a query ran: which index gave its candidates (none: a scan
// of the collection), how the index narrowed them, and what it cost.
type Plan struct {
	// Index names the index used; "" when the collection was scanned.
	Index string `json:"index"`
	// Fields are the index's fields.
	Fields []string `json:"fields,omitempty"`
	// Equality is how many of the index's leading fields the selector fixes.
	Equality int `json:"equality"`
	// Range reports whether the next field's range narrowed the scan.
	Range bool `json:"range"`
	// SortedByIndex reports whether the index gave the documents in the
	// query's order, so the scan stopped once the page was full.
	SortedByIndex bool `json:"sortedByIndex"`
	// Descending reports whether the index was read backwards.
	Descending bool `json:"descending"`
	// Sort is the order the documents came in (then _id): the query's,
	// or without one the index's fields; Order is the same, parsed.
	Sort  []string          `json:"sort"`
	Order []query.SortField `json:"-"`
	// Examined counts the documents read; Matched those the selector took.
	Examined int `json:"examined"`
	Matched  int `json:"matched"`
	// Fetched counts the documents the index did not hold, looked up by id
	// (entries restored from a snapshot written before index entries kept
	// their documents).
	Fetched int `json:"fetched,omitempty"`
	// Covered reports whether the index's keys proved the selector, so
	// the documents read were not checked against it (query.Selector.Covers).
	Covered bool `json:"covered,omitempty"`
	// Built reports whether the query first built the index from the
	// collection's documents: after a reopen, when the store's snapshot did
	// not keep its entries (an index never read since it was last built
	// from the documents is not kept).
	Built bool `json:"built,omitempty"`
}

// FindResult is one page of a query's documents, in its order, projected
// to its fields. Bookmark starts the next page (set when the page is full).
type FindResult struct {
	Docs     [][]byte
	Bookmark string
	Plan     Plan
}

// scanLimit is how many documents Find may examine before it gives up: a
// bound on one call's memory and time, far past any app's collection on a
// device.
const scanLimit = 10_000_000

// Find runs q over collection's documents: the planner picks the index
// that fixes the most leading fields by equality, then narrows by a range
// of the next, then serves the sort (see Plan), and scans the collection
// when none helps. Every candidate is checked against the whole selector,
// so an index only ever saves work. It fails with 1912 (bad_query) for a
// use_index that names no index, and 1208 for an illegal collection name.
func (s *Store) Find(collection string, q *query.Query) (FindResult, error) {
	var res FindResult
	built, err := s.viewBuilt(collection, q, func(tx *txn) error {
		var err error
		res, err = s.find(tx, collection, q, false)
		return err
	})
	res.Plan.Built = built
	return res, err
}

// viewBuilt runs fn in a read transaction once the index the planner
// takes for q is built: after a load, each index is built when a query
// first needs it.
func (s *Store) viewBuilt(collection string, q *query.Query, fn func(tx *txn) error) (built bool, err error) {
	for range 3 {
		var need *secIndex
		err := s.view(func(tx *txn) error {
			if p, err := s.planAll(tx, collection, q, true); err == nil && p.ix != nil && !p.ix.built.Load() {
				need = p.ix
				return nil
			}
			return fn(tx)
		})
		if err != nil || need == nil {
			return built, err
		}
		if err := s.ensureBuilt(need); err != nil {
			return built, err
		}
		built = true
	}
	return built, s.view(fn) // indexes defined and dropped meanwhile: what is built serves
}

// FindJSON is Find with the query as PouchDB's find takes it (query.Parse).
func (s *Store) FindJSON(collection string, q []byte) (FindResult, error) {
	pq, err := ParseQuery(q)
	if err != nil {
		return FindResult{}, err
	}
	return s.Find(collection, pq)
}

// ParseQuery parses a query (query.Parse) and reports a malformed one as
// an *Error with code bad_query.
func ParseQuery(q []byte) (*query.Query, error) {
	pq, err := query.Parse(q)
	if err != nil {
		return nil, newError(ErrBadQuery, "", "", "%v", err)
	}
	return pq, nil
}

// ParseSelector parses a selector (query.ParseSelector) and reports a
// malformed one as an *Error with code bad_query.
func ParseSelector(sel []byte) (*query.Selector, error) {
	ps, err := query.ParseSelector(sel)
	if err != nil {
		return nil, newError(ErrBadQuery, "", "", "%v", err)
	}
	return ps, nil
}

// CountWhere returns how many of collection's documents sel matches.
func (s *Store) CountWhere(collection string, sel *query.Selector) (int, error) {
	var n int
	_, err := s.viewBuilt(collection, &query.Query{Selector: sel}, func(tx *txn) error {
		res, err := s.find(tx, collection, &query.Query{Selector: sel}, true)
		n = res.Plan.Matched
		return err
	})
	return n, err
}

// find runs q inside tx; with countOnly it only counts the matches.
func (s *Store) find(tx *txn, collection string, q *query.Query, countOnly bool) (FindResult, error) {
	pager, plan, err := s.runQuery(tx, collection, q, countOnly)
	if err != nil {
		return FindResult{}, err
	}
	res := FindResult{Plan: plan}
	if !countOnly {
		res.Docs, res.Bookmark = pager.Page()
	}
	return res, nil
}

// AppendFind is Find with the page appended to dst as its JSON text,
// {"docs":[...],"bookmark":"..."} (query.Pager.AppendPage): the documents
// are not copied one by one.
func (s *Store) AppendFind(dst []byte, collection string, q *query.Query) ([]byte, Plan, error) {
	var plan Plan
	built, err := s.viewBuilt(collection, q, func(tx *txn) error {
		pager, p, err := s.runQuery(tx, collection, q, false)
		if err != nil {
			return err
		}
		dst, plan = pager.AppendPage(dst), p
		return nil
	})
	plan.Built = built
	return dst, plan, err
}

// runQuery reads q's candidates inside tx into a pager, and says how.
func (s *Store) runQuery(tx *txn, collection string, q *query.Query, countOnly bool) (*query.Pager, Plan, error) {
	if err := ValidateCollectionName(collection); err != nil {
		return nil, Plan{}, err
	}
	p, err := s.plan(tx, collection, q)
	if err != nil {
		return nil, Plan{}, err
	}
	// Without a sort of its own, a query comes in the order of the index
	// read (its fields, then _id), or of _id when the collection is
	// scanned: a page is then read straight from the index.
	if len(q.Sort) == 0 && p.ix != nil {
		q = q.Ordered(query.IndexOrder(p.ix.fields))
		p.plan.SortedByIndex, p.exact = true, true
	}
	p.plan.Order, p.plan.Sort = q.Sort, q.SortNames()
	pager, err := q.NewPager(query.PagerOptions{Ordered: p.plan.SortedByIndex, Exact: p.exact, CountOnly: countOnly, Covered: p.plan.Covered})
	if err != nil {
		return nil, Plan{}, newError(ErrBadQuery, "", "", "%v", err)
	}
	var ferr error
	visit := func(doc, tie string) bool {
		if pager.Examined >= scanLimit {
			ferr = newError(ErrBadQuery, "", "", "query examined more than %d documents", scanLimit)
			return false
		}
		if p.tied {
			return pager.AddTied(doc, tie)
		}
		return pager.Add(doc)
	}
	if err := p.scan(tx, visit); err != nil {
		return nil, Plan{}, fmt.Errorf("find: %w", err)
	}
	if ferr != nil {
		return nil, Plan{}, ferr
	}
	p.plan.Examined, p.plan.Matched = pager.Examined, pager.Matched
	return pager, p.plan, nil
}

// plannedScan is a chosen way to read a query's candidates.
type plannedScan struct {
	plan   Plan
	ix     *secIndex // nil: the collection's documents
	exact  bool      // the index gives the query's exact order, ties included
	tied   bool      // the index gives it but for ties, which its keys tell (IndexPlan.Whole)
	lo, hi string    // the keys to read (the index's, or the documents'): lo inclusive, hi exclusive
}

// scan calls visit with each candidate document until it returns false;
// from an index, with its key but for the id (its tie).
func (p *plannedScan) scan(tx *txn, visit func(doc, tie string) bool) error {
	if p.ix == nil {
		return tx.AscendRange("", p.lo, p.hi, func(_, v string) bool { return visit(v, "") })
	}
	var gerr error
	var key []byte
	p.ix.tree.Scan(p.lo, p.hi, p.plan.Descending, func(e query.Entry) bool {
		doc := e.Doc // the entry's own, kept with every write of the document
		if doc == "" {
			// Not known (entries saved before they kept documents): looked
			// up. The key lives only for the lookup: one buffer serves all.
			p.plan.Fetched++
			key = append(append(key[:0], docPrefix...), e.ID...)
			var err error
			if doc, err = tx.Get(unsafe.String(unsafe.SliceData(key), len(key))); err != nil {
				gerr = fmt.Errorf("index %q lists %q, which is not stored: %w", p.ix.def.Name, e.ID, err)
				return false
			}
		}
		return visit(doc, e.Key[:len(e.Key)-len(e.ID)])
	})
	return gerr
}

// plan picks how to read collection for q, from the indexes built.
func (s *Store) plan(tx *txn, collection string, q *query.Query) (*plannedScan, error) {
	return s.planAll(tx, collection, q, false)
}

// planAll is plan; with unbuilt, it also considers indexes not built yet.
func (s *Store) planAll(tx *txn, collection string, q *query.Query, unbuilt bool) (*plannedScan, error) {
	docs := docPrefix + s.Prefix(collection) + s.sep
	scan := &plannedScan{lo: docs, hi: docs + "\xff"}
	indexes := tx.ixs.of(collection)
	conds := query.CondsByPath(q.Selector)
	best, bestScore := (*secIndex)(nil), 0
	var bestPlan query.IndexPlan
	for _, ix := range indexes {
		if !unbuilt && !ix.built.Load() {
			continue
		}
		if q.UseIndex != "" && ix.def.Name != q.UseIndex {
			continue
		}
		pl := query.PlanIndex(ix.fields, conds, q.Sort)
		score := pl.Score(len(q.Sort) > 0)
		if best == nil && q.UseIndex != "" || score > bestScore {
			best, bestScore, bestPlan = ix, score, pl
		}
	}
	if q.UseIndex != "" && best == nil {
		return nil, newError(ErrBadQuery, q.UseIndex, "", "use_index: collection %q has no index %q", collection, q.UseIndex)
	}
	if best == nil {
		scan.plan.SortedByIndex = len(q.Sort) == 0 || onlyID(q.Sort)
		scan.exact = scan.plan.SortedByIndex
		return scan, nil
	}
	scan.ix, scan.exact, scan.tied = best, bestPlan.Exact, bestPlan.Whole && !bestPlan.Exact
	scan.plan = Plan{Index: best.def.Name, Fields: best.def.Fields, Equality: bestPlan.Equality, Range: bestPlan.Range,
		SortedByIndex: bestPlan.Sorted, Descending: bestPlan.Descending, Covered: q.Selector.Covers(best.fields, bestPlan)}
	scan.lo, scan.hi = bestPlan.Lo, bestPlan.Hi
	return scan, nil
}

func onlyID(sortBy []query.SortField) bool {
	return len(sortBy) == 1 && sortBy[0].Path.String() == "_id" && !sortBy[0].Desc
}
