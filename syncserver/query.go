package syncserver

import (
	"errors"
	"fmt"

	"github.com/hilodb/hilodb/core/query"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/syncserver/storage"
)

// Queries over a database's documents, for the doors that speak a query
// language (RavenDB's RQL, ArangoDB's AQL). The server runs the same
// engine as every replica (core/query): a query parsed by any front end
// is checked, ordered, paged and projected by a query.Pager. The server
// reads a collection's documents from its store in _id order, a scan of
// the collection (docs/queries.md, "On the server", says what it costs).

// FindResult is a page of a query run by the server.
type FindResult struct {
	Docs     [][]byte // the page, in the query's order, projected
	Bookmark string   // starts the next page when this one is full
	Total    int      // every match past the bookmark, when asked for
	Examined int      // documents read
}

// ScanLimit bounds the documents one query reads.
const ScanLimit = 5_000_000

// errScanLimit ends a scan that read ScanLimit documents.
var errScanLimit = errors.New("scan limit")

// FindDocs runs q over db's live documents whose ids start with idPrefix
// (a collection's prefix and separator). With total, every match is
// counted (Total), at the cost of reading the whole collection even when
// the page is full sooner. A page over the reply bound fails with
// reply_too_big; a bookmark of another order with bad_query.
func (s *Server) FindDocs(db, idPrefix string, q *query.Query, total bool) (FindResult, error) {
	var pager *query.Pager
	newPager := func(q *query.Query, o query.PagerOptions) error {
		o.MaxBytes = s.ReplyBudget()
		var err error
		if pager, err = q.NewPager(o); err != nil {
			return &protoError{code: errcode.BadQuery.Name, num: errcode.BadQuery.Num, msg: err.Error()}
		}
		return nil
	}
	lo := storage.DocKey(db, idPrefix)
	_, embedded := s.store.(*storage.File)
	err := s.store.View(func(tx storage.Tx) error {
		if embedded {
			// An index the database's clients defined, if one helps.
			d := s.qix.of(db)
			d.mu.Lock()
			defer d.mu.Unlock()
			x, pl, ok, err := s.planIndexed(tx, d, db, idPrefix, q)
			if err != nil {
				return err
			}
			if ok {
				if len(q.Sort) == 0 {
					q = q.Ordered(query.IndexOrder(x.ix.Fields()))
				}
				if err := newPager(q, query.PagerOptions{Ordered: pl.Sorted && !total, Exact: pl.Exact && !total}); err != nil {
					return err
				}
				return indexedFind(tx, db, x, pl, q, pager)
			}
		}
		// A scan in _id order: with no sort of its own, that is the
		// query's exact order, and a page ends it.
		if err := newPager(q, query.PagerOptions{Exact: len(q.Sort) == 0 && !total}); err != nil {
			return err
		}
		return scanDocs(tx, lo, pager)
	})
	if errors.Is(err, query.ErrTooBig) {
		return FindResult{}, &protoError{code: errcode.ReplyTooBig.Name, num: errcode.ReplyTooBig.Num,
			msg: fmt.Sprintf("the query's documents pass the reply bound of %d bytes; ask for fewer", s.ReplyBudget())}
	}
	if errors.Is(err, errScanLimit) {
		return FindResult{}, &protoError{code: errcode.BadQuery.Name, num: errcode.BadQuery.Num,
			msg: fmt.Sprintf("the query read %d documents, the most one query may; narrow it", ScanLimit)}
	}
	if err != nil {
		return FindResult{}, err
	}
	res := FindResult{Examined: pager.Examined, Total: pager.Matched}
	res.Docs, res.Bookmark = pager.Page()
	size := 0
	for _, d := range res.Docs {
		size += len(d) + 1
	}
	if size > s.ReplyBudget() {
		return FindResult{}, &protoError{code: errcode.ReplyTooBig.Name, num: errcode.ReplyTooBig.Num,
			msg: fmt.Sprintf("the query's page passes the reply bound of %d bytes; ask for fewer documents", s.ReplyBudget())}
	}
	return res, nil
}

// CountDocs counts db's live documents under idPrefix that sel matches
// (all, for nil), a scan as FindDocs's, holding no document.
func (s *Server) CountDocs(db, idPrefix string, sel *query.Selector) (int, error) {
	if sel == nil {
		sel = &query.Selector{}
	}
	pager, err := (&query.Query{Selector: sel}).NewPager(query.PagerOptions{CountOnly: true})
	if err != nil {
		return 0, err
	}
	lo := storage.DocKey(db, idPrefix)
	err = s.store.View(func(tx storage.Tx) error { return scanDocs(tx, lo, pager) })
	if errors.Is(err, errScanLimit) {
		return 0, &protoError{code: errcode.BadQuery.Name, num: errcode.BadQuery.Num,
			msg: fmt.Sprintf("the count read %d documents, the most one query may; narrow it", ScanLimit)}
	}
	return pager.Matched, err
}

// scanDocs gives pager the live documents whose keys start with lo, in key
// order, until the pager has its page (or its error), reading at most
// ScanLimit of them (errScanLimit past it).
func scanDocs(tx storage.Tx, lo string, pager *query.Pager) error {
	var stop error
	err := tx.AscendRange("", lo, lo+"\xff", func(k, v string) bool {
		if pager.Examined >= ScanLimit {
			stop = errScanLimit
			return false
		}
		rec, err := storage.DecodeStored(k, v)
		if err != nil {
			stop = err
			return false
		}
		if rec.Deleted || len(rec.Doc) == 0 {
			return true
		}
		if !pager.Add(string(rec.Doc)) {
			stop = pager.Err()
			return false
		}
		return true
	})
	if err == nil {
		err = stop
	}
	return err
}
