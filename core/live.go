package core

import (
	"bytes"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hilodb/hilodb/core/query"
	"github.com/tidwall/gjson"
)

// LiveChange is one difference between two results of a live query.
// Kind is "added" (Doc is new at Index), "removed" (the document that was
// at OldIndex left), "changed" (its content changed where it stays in the
// order) or "moved" (its content changed and so did its place). A document
// that only shifts because others came or went gets no change of its own.
type LiveChange struct {
	Kind     string `json:"type"`
	ID       string `json:"id"`
	Index    int    `json:"index"`
	OldIndex int    `json:"oldIndex"`
	Doc      []byte `json:"-"`
}

// LiveResult is a live query's result: all its documents (projected, in
// its order) and what changed since the last result; the first result's
// changes add every document. Reran reports whether the query had to run
// again: most changes update the result from the written document alone.
type LiveResult struct {
	Docs    [][]byte
	Changes []LiveChange
	Reran   bool
}

// liveRow is a document in a live query's result.
type liveRow struct {
	id  string
	key []byte // the query's sort key
	doc string
}

// liveQuery is one watched query.
type liveQuery struct {
	s      *Store
	coll   string
	idPfx  string // the collection's ids start with it
	q      *query.Query
	order  *query.Query // q in the order its last run came in (see Plan.Sort)
	after  []byte
	window int // skip+limit; 0: no limit
	fn     func(LiveResult)

	mu      sync.Mutex
	pending map[string]struct{}
	rerun   bool
	wake    chan struct{}
	done    chan struct{}
	stop    sync.Once

	// Owned by the query's goroutine.
	rows     []liveRow // the first window rows that match, in order
	complete bool      // rows holds every match
	shown    []liveRow // the rows of the last result given
	reruns   int
	old      map[string]int  // result's: the places of the shown rows, by id
	seen     map[string]bool // result's: the ids of the new window
}

// liveQueries is a store's watched queries.
type liveQueries struct {
	n  atomic.Int32
	mu sync.Mutex
	qs map[*liveQuery]struct{}
}

func (l *liveQueries) active() bool { return l.n.Load() > 0 }

// written tells the live queries of a committed transaction's documents.
func (l *liveQueries) written(ids []string) {
	if !l.active() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for w := range l.qs {
		w.note(ids)
	}
}

// reloaded tells every live query to run again: the store was loaded.
func (l *liveQueries) reloaded() {
	if !l.active() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for w := range l.qs {
		w.mu.Lock()
		w.rerun = true
		w.mu.Unlock()
		w.signal()
	}
}

func (l *liveQueries) closeAll() {
	l.mu.Lock()
	qs := make([]*liveQuery, 0, len(l.qs))
	for w := range l.qs {
		qs = append(qs, w)
	}
	l.mu.Unlock()
	for _, w := range qs {
		w.close()
	}
}

// WatchQuery runs q over collection and keeps running it: fn gets the
// first result, then a new result after every local or remote write that
// changes it. A write of another collection's document costs the query
// nothing; one of this collection's costs a check of the written document
// against the selector and, where it matches, a place in the order; the
// query runs again only when the written document leaves a full page
// (the next document is not known) or the store is loaded anew. fn is
// called from a goroutine of the query's own, one result at a time; it
// must not block for long. stop ends the watch (fn is not called after it
// returns, unless from fn itself).
func (s *Store) WatchQuery(collection string, q *query.Query, fn func(LiveResult)) (stop func(), err error) {
	if err := ValidateCollectionName(collection); err != nil {
		return nil, err
	}
	w := &liveQuery{
		s: s, coll: collection, idPfx: s.Prefix(collection) + s.sep, q: q, order: q, fn: fn,
		pending: map[string]struct{}{}, wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
	if q.Limit > 0 {
		w.window = q.Skip + q.Limit
	}
	var err2 error
	if w.after, err2 = q.After(); err2 != nil {
		return nil, newError(ErrBadQuery, "", "", "%v", err2)
	}
	// Registered before the first run: no write between them is missed.
	s.live.mu.Lock()
	if s.live.qs == nil {
		s.live.qs = map[*liveQuery]struct{}{}
	}
	s.live.qs[w] = struct{}{}
	s.live.n.Add(1)
	s.live.mu.Unlock()
	if err := w.runAll(); err != nil {
		w.close()
		return nil, err
	}
	first := w.result(true)
	go w.loop(first)
	return w.close, nil
}

func (w *liveQuery) close() {
	w.stop.Do(func() {
		w.s.live.mu.Lock()
		if _, ok := w.s.live.qs[w]; ok {
			delete(w.s.live.qs, w)
			w.s.live.n.Add(-1)
		}
		w.s.live.mu.Unlock()
		close(w.done)
	})
}

// note queues the ids of the query's collection among ids.
func (w *liveQuery) note(ids []string) {
	any := false
	w.mu.Lock()
	for _, id := range ids {
		if strings.HasPrefix(id, w.idPfx) {
			w.pending[id] = struct{}{}
			any = true
		}
	}
	w.mu.Unlock()
	if any {
		w.signal()
	}
}

func (w *liveQuery) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *liveQuery) loop(first LiveResult) {
	select {
	case <-w.done:
		return
	default:
	}
	w.fn(first)
	for {
		select {
		case <-w.done:
			return
		case <-w.wake:
		}
		w.mu.Lock()
		ids := make([]string, 0, len(w.pending))
		for id := range w.pending {
			ids = append(ids, id)
		}
		clear(w.pending)
		rerun := w.rerun
		w.rerun = false
		w.mu.Unlock()
		reran := false
		if !rerun {
			var err error
			rerun, err = w.apply(ids)
			if err != nil {
				rerun = true
			}
		}
		if rerun {
			if err := w.runAll(); err != nil {
				continue // the store is closing
			}
			reran = true
		}
		res := w.result(false)
		res.Reran = reran
		if len(res.Changes) == 0 {
			continue
		}
		select {
		case <-w.done:
			return
		default:
		}
		w.fn(res)
	}
}

// runAll runs the query for its whole window.
func (w *liveQuery) runAll() error {
	q := *w.q
	q.Skip, q.Limit, q.Fields = 0, w.window, nil
	var rows []liveRow
	_, err := w.s.viewBuilt(w.coll, &q, func(tx *txn) error {
		res, err := w.s.find(tx, w.coll, &q, false)
		if err != nil {
			return err
		}
		w.order = w.q.Ordered(res.Plan.Order)
		rows = make([]liveRow, len(res.Docs))
		for i, d := range res.Docs {
			v := gjson.ParseBytes(d)
			rows[i] = liveRow{id: v.Get("_id").Str, key: w.order.AppendSortKey(nil, v), doc: string(d)}
		}
		return nil
	})
	if err != nil {
		return err
	}
	w.rows = rows
	w.complete = w.window == 0 || len(rows) < w.window
	w.reruns++
	return nil
}

// apply updates the rows from the written documents ids alone; rerun
// reports that it cannot (a row left a full window).
func (w *liveQuery) apply(ids []string) (rerun bool, err error) {
	sort.Strings(ids)
	err = w.s.view(func(tx *txn) error {
		for _, id := range ids {
			doc, gerr := tx.Get(docPrefix + id)
			at := -1
			for i := range w.rows {
				if w.rows[i].id == id {
					at = i
					break
				}
			}
			var row *liveRow
			if gerr == nil && w.q.Selector.MatchString(doc) {
				k := w.order.AppendSortKey(nil, gjson.Parse(doc))
				if w.after == nil || bytes.Compare(k, w.after) > 0 {
					row = &liveRow{id: id, key: k, doc: doc}
				}
			}
			if at < 0 && row == nil {
				continue // neither in the result nor now matching
			}
			full := w.window > 0 && !w.complete // more match past the rows
			if at >= 0 {
				w.rows = append(w.rows[:at], w.rows[at+1:]...)
			}
			if row != nil {
				pos := sort.Search(len(w.rows), func(i int) bool { return bytes.Compare(w.rows[i].key, row.key) > 0 })
				// Past the last row of a full window it is past the
				// window: documents not held here may come before it.
				if !full || pos < len(w.rows) {
					w.rows = append(w.rows, liveRow{})
					copy(w.rows[pos+1:], w.rows[pos:])
					w.rows[pos] = *row
					if w.window > 0 && len(w.rows) > w.window {
						w.rows = w.rows[:w.window]
						w.complete = false
					}
				}
			}
			if full && len(w.rows) < w.window {
				rerun = true // the window lost a row; what comes next is not held
				return nil
			}
		}
		return nil
	})
	return rerun, err
}

// result returns the current window as a result, with its changes since
// the last one given.
func (w *liveQuery) result(first bool) LiveResult {
	win := w.rows
	if w.q.Skip > 0 {
		if w.q.Skip >= len(win) {
			win = nil
		} else {
			win = win[w.q.Skip:]
		}
	}
	if w.q.Limit > 0 && len(win) > w.q.Limit {
		win = win[:w.q.Limit]
	}
	var res LiveResult
	res.Docs = make([][]byte, len(win))
	for i, r := range win {
		res.Docs[i] = w.q.Project([]byte(r.doc))
	}
	if w.old == nil {
		w.old, w.seen = map[string]int{}, map[string]bool{}
	}
	old, seen := w.old, w.seen // kept between results: no maps made for each
	clear(old)
	clear(seen)
	for i, r := range w.shown {
		old[r.id] = i
	}
	for i, r := range win {
		seen[r.id] = true
		j, ok := old[r.id]
		switch {
		case !ok || first:
			res.Changes = append(res.Changes, LiveChange{Kind: "added", ID: r.id, Index: i, OldIndex: -1, Doc: res.Docs[i]})
		case w.shown[j].doc != r.doc:
			kind := "changed"
			if !bytes.Equal(w.shown[j].key, r.key) && j != i {
				kind = "moved"
			}
			res.Changes = append(res.Changes, LiveChange{Kind: kind, ID: r.id, Index: i, OldIndex: j, Doc: res.Docs[i]})
		}
	}
	if !first {
		for j, r := range w.shown {
			if !seen[r.id] {
				res.Changes = append(res.Changes, LiveChange{Kind: "removed", ID: r.id, Index: -1, OldIndex: j})
			}
		}
	}
	w.shown = append(w.shown[:0:0], win...)
	return res
}
