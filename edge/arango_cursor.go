package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/query"
	"github.com/hilodb/hilodb/core/query/aql"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/internal/aqlcursor"
)

// ArangoDB's /_api/cursor at the edge: the same AQL subset as the sync
// server's (package aql), answered from the replica's store (core.Store's
// Find and CountWhere, with its indexes) after the same freshening as a
// read. Cursors live in this isolate's memory, within
// aqlcursor.DefaultLimits.

// replicaSource is the replica's documents as arangojs sees them.
type replicaSource struct{ store *core.Store }

var _ aqlcursor.Source = replicaSource{}

func (r replicaSource) Exists(coll string) (bool, error) {
	if core.ValidateCollectionName(coll) != nil {
		return false, nil
	}
	if _, ok := r.store.CollectionInfo(coll); ok {
		return true, nil
	}
	n, err := r.store.CountWhere(coll, &query.Selector{})
	return n > 0, err
}

func (r replicaSource) Find(coll string, q *query.Query, total bool) ([][]byte, int, error) {
	res, err := r.store.Find(coll, q)
	if err != nil {
		return nil, 0, err
	}
	for i, d := range res.Docs {
		res.Docs[i] = arangoView(d)
	}
	matches := 0
	if total {
		if matches, err = r.store.CountWhere(coll, q.Selector); err != nil {
			return nil, 0, err
		}
	}
	return res.Docs, matches, nil
}

func (r replicaSource) Count(coll string, sel *query.Selector) (int, error) {
	if sel == nil {
		sel = &query.Selector{}
	}
	return r.store.CountWhere(coll, sel)
}

func (r replicaSource) Get(ids []string) ([][]byte, error) {
	out := make([][]byte, len(ids))
	size := 0
	for i, id := range ids {
		d, err := r.store.Get(id)
		switch {
		case errors.Is(err, core.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			// Measured as they are read: past the bound, no more is.
			if size += len(d) + 1; size > maxReplyBytes && len(ids) > 1 {
				return nil, fmt.Errorf("%w: the documents DOCUMENT() names pass the reply bound of %d bytes; ask for fewer", aqlcursor.ErrTooBig, maxReplyBytes)
			}
			out[i] = arangoView(d)
		}
	}
	return out, nil
}

// cursor serves POST /_api/cursor, PUT and POST /_api/cursor/{id}, and
// DELETE /_api/cursor/{id}.
func (a *app) cursor(ctx context.Context, r *request, rt route) *response {
	const db = "" // an app is one database's replica
	var (
		body []byte
		err  error
	)
	switch {
	case rt.key == "" && r.method == "POST":
		fresh := a.freshen(ctx, r.noCache)
		var req aqlcursor.Request
		if req, err = aqlcursor.ParseRequest(r.body); err == nil {
			var plan *aql.Plan
			if plan, err = aql.Parse(req.Query, req.BindVars); err == nil {
				var res aqlcursor.Result
				if res, err = aqlcursor.Run(replicaSource{a.store}, plan, req.FullCount, maxReplyBytes); err == nil {
					body, err = a.cursors.Open(db, req, res)
				}
			}
		}
		if err == nil {
			out := jsonResponse(201, body)
			out.set(freshHeader, fresh)
			return out
		}
	case rt.key != "" && (r.method == "PUT" || r.method == "POST"):
		if body, err = a.cursors.Next(db, rt.key); err == nil {
			return jsonResponse(200, body)
		}
	case rt.key != "" && r.method == "DELETE":
		if err = a.cursors.Drop(db, rt.key); err == nil {
			return jsonResponse(202, []byte(`{"id":"`+rt.key+`","error":false,"code":202}`))
		}
	default:
		return errorResponse(errcode.MethodNotAllowed, "method "+r.method+" is not allowed on "+truncate(r.path, 200))
	}
	return cursorFailure(err)
}

// cursorFailure answers a query's failure with ArangoDB's numbers, as the
// sync server does.
func cursorFailure(err error) *response {
	var (
		se *aql.SyntaxError
		be *aql.BindError
		ce *aqlcursor.CollectionNotFoundError
	)
	switch {
	case errors.As(err, &se):
		return errorResponse(errcode.QueryParse, se.Error())
	case errors.As(err, &be):
		c, ok := errcode.ByNum(be.Num)
		if !ok {
			c = errcode.QueryParse
		}
		return errorResponse(c, be.Msg)
	case errors.As(err, &ce):
		return errorResponse(errcode.CollectionNotFound, ce.Error())
	case errors.Is(err, aqlcursor.ErrBadRequest):
		return errorResponse(errcode.BadRequest, err.Error())
	case errors.Is(err, aqlcursor.ErrTooBig):
		return errorResponse(errcode.ReplyTooBig, err.Error())
	case errors.Is(err, aqlcursor.ErrNotFound):
		return errorResponse(errcode.CursorNotFound, "cursor not found")
	case errors.Is(err, aqlcursor.ErrTooMany):
		return errorResponse(errcode.ServerBusy, "the edge holds its most open cursors; fetch or delete some, or wait for their ttl")
	case errors.Is(err, query.ErrBadQuery):
		return errorResponse(errcode.BadQuery, err.Error())
	}
	return failure(err)
}
