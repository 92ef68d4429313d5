package syncserver

import (
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/hilodb/hilodb/core/query"
	"github.com/hilodb/hilodb/core/query/aql"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/internal/aqlcursor"
	"github.com/hilodb/hilodb/syncserver/storage"
)

// ArangoDB's queries: POST /_api/cursor runs an AQL query of the subset
// package aql reads over the database's documents (the server's scan of a
// collection, FindDocs) and answers its first batch; the rest waits in a
// cursor, fetched with PUT or POST /_api/cursor/{id} and dropped with
// DELETE, within the bounds of aqlcursor.DefaultLimits.

// arangoState is the ArangoDB door's state on the server.
type arangoState struct {
	once    sync.Once
	cursors *aqlcursor.Table
}

func (s *Server) arangoCursors() *aqlcursor.Table {
	s.arango.once.Do(func() { s.arango.cursors = aqlcursor.NewTable(aqlcursor.DefaultLimits, nil) })
	return s.arango.cursors
}

// arangoSource is one database's documents, as arangojs sees them.
type arangoSource struct {
	s  *Server
	db string
}

var _ aqlcursor.Source = arangoSource{}

func (a arangoSource) Exists(coll string) (bool, error) {
	if validCollection(coll) != nil {
		return false, nil
	}
	_, ok, err := a.s.arangoCollectionDef(a.db, coll)
	return ok, err
}

func (a arangoSource) Find(coll string, q *query.Query, total bool) ([][]byte, int, error) {
	res, err := a.s.FindDocs(a.db, coll+"/", q, total)
	if err != nil {
		return nil, 0, err
	}
	for i, d := range res.Docs {
		res.Docs[i] = arangoView(d)
	}
	return res.Docs, res.Total, nil
}

func (a arangoSource) Count(coll string, sel *query.Selector) (int, error) {
	return a.s.countDocs(a.db, coll+"/", sel)
}

func (a arangoSource) Get(ids []string) ([][]byte, error) {
	docs, err := a.s.readDocs(a.db, ids)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(docs))
	for i, d := range docs {
		if d != nil {
			out[i] = arangoView(d.Doc)
		}
	}
	return out, nil
}

// countDocs counts db's live documents under idPrefix that sel matches
// (all, for nil), a scan as FindDocs's, holding no document.
func (s *Server) countDocs(db, idPrefix string, sel *query.Selector) (int, error) {
	if sel == nil {
		sel = &query.Selector{}
	}
	pager, err := (&query.Query{Selector: sel}).NewPager(query.PagerOptions{CountOnly: true})
	if err != nil {
		return 0, err
	}
	lo := storage.DocKey(db, idPrefix)
	err = s.store.View(func(tx storage.Tx) error {
		var stop error
		err := tx.AscendRange("", lo, lo+"\xff", func(k, v string) bool {
			if pager.Examined >= serverScanLimit {
				stop = errScanLimit
				return false
			}
			rec, err := storage.DecodeStored(k, v)
			if err != nil {
				stop = err
				return false
			}
			if !rec.Deleted && len(rec.Doc) > 0 {
				pager.Add(string(rec.Doc))
			}
			return true
		})
		if err == nil {
			err = stop
		}
		return err
	})
	if errors.Is(err, errScanLimit) {
		return 0, &protoError{code: errcode.BadQuery.Name, num: errcode.BadQuery.Num,
			msg: fmt.Sprintf("the count read %d documents, the most one query may; narrow it", serverScanLimit)}
	}
	return pager.Matched, err
}

func (s *Server) arangoQuery(w http.ResponseWriter, r *doorRequest) {
	if err := arangoParams(r); err != nil {
		s.arangoFail(w, err)
		return
	}
	req, err := aqlcursor.ParseRequest(r.body)
	if err != nil {
		s.arangoCursorFail(w, err)
		return
	}
	plan, err := aql.Parse(req.Query, req.BindVars)
	if err != nil {
		s.arangoCursorFail(w, err)
		return
	}
	res, err := aqlcursor.Run(arangoSource{s: s, db: r.db}, plan, req.FullCount)
	if err != nil {
		s.arangoCursorFail(w, err)
		return
	}
	body, err := s.arangoCursors().Open(r.db, req, res)
	if err != nil {
		s.arangoCursorFail(w, err)
		return
	}
	writeRawJSON(w, http.StatusCreated, body)
}

func (s *Server) arangoCursorNext(w http.ResponseWriter, r *doorRequest) {
	if err := arangoParams(r); err != nil {
		s.arangoFail(w, err)
		return
	}
	body, err := s.arangoCursors().Next(r.db, r.PathValue("id"))
	if err != nil {
		s.arangoCursorFail(w, err)
		return
	}
	writeRawJSON(w, http.StatusOK, body)
}

func (s *Server) arangoCursorDrop(w http.ResponseWriter, r *doorRequest) {
	if err := arangoParams(r); err != nil {
		s.arangoFail(w, err)
		return
	}
	id := r.PathValue("id")
	if err := s.arangoCursors().Drop(r.db, id); err != nil {
		s.arangoCursorFail(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"id": id, "error": false, "code": 202})
}

// arangoCursorFail answers a query's failure with ArangoDB's numbers.
func (s *Server) arangoCursorFail(w http.ResponseWriter, err error) {
	var (
		se *aql.SyntaxError
		be *aql.BindError
		ce *aqlcursor.CollectionNotFoundError
	)
	fail := func(c errcode.Code, msg string) {
		s.metrics.countError(c.Name)
		arangoError(w, c, msg)
	}
	switch {
	case errors.As(err, &se):
		fail(errcode.QueryParse, se.Error())
	case errors.As(err, &be):
		c, ok := errcode.ByNum(be.Num)
		if !ok {
			c = errcode.QueryParse
		}
		fail(c, be.Msg)
	case errors.As(err, &ce):
		fail(errcode.CollectionNotFound, ce.Error())
	case errors.Is(err, aqlcursor.ErrBadRequest):
		fail(errcode.BadRequest, err.Error())
	case errors.Is(err, aqlcursor.ErrNotFound):
		fail(errcode.CursorNotFound, "cursor not found")
	case errors.Is(err, aqlcursor.ErrTooMany):
		fail(errcode.ServerBusy, fmt.Sprintf("the database holds its most open cursors (%d; %d in all), or their bytes; fetch or delete some, or wait for their ttl", aqlcursor.DefaultLimits.PerDB, aqlcursor.DefaultLimits.Total))
	case errors.Is(err, query.ErrBadQuery):
		fail(errcode.BadQuery, err.Error())
	default:
		s.arangoFail(w, err)
	}
}

// writeRawJSON writes a JSON body made elsewhere.
func writeRawJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
