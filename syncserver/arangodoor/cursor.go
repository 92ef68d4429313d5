package arangodoor

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/hilodb/hilodb/core/query"
	"github.com/hilodb/hilodb/core/query/aql"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/internal/aqlcursor"
	"github.com/hilodb/hilodb/syncserver"
)

// ArangoDB's queries: POST /_api/cursor runs an AQL query of the subset
// package aql reads over the database's documents (the server's scan of a
// collection, FindDocs) and answers its first batch; the rest waits in a
// cursor, fetched with PUT or POST /_api/cursor/{id} and dropped with
// DELETE, within the bounds of aqlcursor.DefaultLimits.

// arangoCursors is the door's table of open cursors, made on first use.
func (s *door) arangoCursors() *aqlcursor.Table {
	s.cursorsOnce.Do(func() { s.cursors = aqlcursor.NewTable(aqlcursor.DefaultLimits, nil) })
	return s.cursors
}

// arangoSource is one database's documents, as arangojs sees them.
type arangoSource struct {
	s  *door
	db string
}

var _ aqlcursor.Source = arangoSource{}

func (a arangoSource) Exists(coll string) (bool, error) {
	if validCollection(coll) != nil {
		return false, nil
	}
	_, ok, err := a.s.CollectionOf(a.db, coll)
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
	return a.s.CountDocs(a.db, coll+"/", sel)
}

func (a arangoSource) Get(ids []string) ([][]byte, error) {
	docs, err := a.s.ReadDocs(a.db, ids)
	if err != nil {
		return nil, err
	}
	// Measured before anything is rendered, as documents() is.
	if err := a.s.CheckReply(syncserver.StoredSize(ids, docs), len(ids)); err != nil {
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

func (s *door) arangoQuery(w http.ResponseWriter, r *syncserver.Request) {
	if err := arangoParams(r); err != nil {
		s.arangoFail(w, err)
		return
	}
	req, err := aqlcursor.ParseRequest(r.Data)
	if err != nil {
		s.arangoCursorFail(w, err)
		return
	}
	plan, err := aql.Parse(req.Query, req.BindVars)
	if err != nil {
		s.arangoCursorFail(w, err)
		return
	}
	res, err := aqlcursor.Run(arangoSource{s: s, db: r.DB}, plan, req.FullCount, s.ReplyBudget())
	if err != nil {
		s.arangoCursorFail(w, err)
		return
	}
	body, err := s.arangoCursors().Open(r.DB, req, res)
	if err != nil {
		s.arangoCursorFail(w, err)
		return
	}
	writeRawJSON(w, http.StatusCreated, body)
}

func (s *door) arangoCursorNext(w http.ResponseWriter, r *syncserver.Request) {
	if err := arangoParams(r); err != nil {
		s.arangoFail(w, err)
		return
	}
	body, err := s.arangoCursors().Next(r.DB, r.PathValue("id"))
	if err != nil {
		s.arangoCursorFail(w, err)
		return
	}
	writeRawJSON(w, http.StatusOK, body)
}

func (s *door) arangoCursorDrop(w http.ResponseWriter, r *syncserver.Request) {
	if err := arangoParams(r); err != nil {
		s.arangoFail(w, err)
		return
	}
	id := r.PathValue("id")
	if err := s.arangoCursors().Drop(r.DB, id); err != nil {
		s.arangoCursorFail(w, err)
		return
	}
	syncserver.WriteJSON(w, http.StatusAccepted, map[string]any{"id": id, "error": false, "code": 202})
}

// arangoCursorFail answers a query's failure with ArangoDB's numbers.
func (s *door) arangoCursorFail(w http.ResponseWriter, err error) {
	var (
		se *aql.SyntaxError
		be *aql.BindError
		ce *aqlcursor.CollectionNotFoundError
	)
	fail := func(c errcode.Code, msg string) {
		s.CountError(c.Name)
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
	case errors.Is(err, aqlcursor.ErrTooBig):
		fail(errcode.ReplyTooBig, err.Error())
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
