package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/errcode"
)

const (
	// maxBodyBytes bounds a request body, as the sync server bounds a message.
	maxBodyBytes = 8 << 20
	// requestTimeout bounds the work of one request: a lease, a pull, a
	// push waited for.
	requestTimeout = 10 * time.Second
	// syncHeader says whether a write is on the sync server yet: "synced"
	// (acknowledged by it) or "pending" (durable in the replica, pushed
	// when the server is reachable).
	syncHeader = "X-Hilodb-Sync"
	// freshHeader says how fresh a read is: "live" (the replica follows the
	// server's change feed), "pulled" (it pulled within the request) or
	// "stale" (the server could not be reached; the replica's copy).
	freshHeader = "X-Hilodb-Fresh"
)

// request is one HTTP request as the glue hands it over: no net/http, so
// the worker's build stays small and a read costs no conversions.
type request struct {
	method      string
	path        string // escaped path
	query       string // raw query, without "?"
	ifMatch     string // If-Match header
	ifNoneMatch string // If-None-Match header
	noCache     bool   // Cache-Control: no-cache: a read must be fresh within the bound, even while the replica starts
	body        []byte
}

// noCache reports whether a Cache-Control header's value has the no-cache
// directive.
func noCache(cacheControl string) bool {
	if cacheControl == "" {
		return false // most requests: no split, no allocation
	}
	for _, d := range strings.Split(cacheControl, ",") {
		if strings.EqualFold(strings.TrimSpace(d), "no-cache") {
			return true
		}
	}
	return false
}

// response is what the API answers.
type response struct {
	status int
	header []string // name, value, name, value, …
	body   []byte
}

func (r *response) set(name, value string) { r.header = append(r.header, name, value) }

// jsonResponse answers status with a JSON body.
func jsonResponse(status int, body []byte) *response {
	return &response{status: status, body: body}
}

// errorResponse answers in ArangoDB's error shape, the sync server's: code
// is the HTTP status, errorNum the number from errcode.
func errorResponse(c errcode.Code, msg string) *response {
	return errorWithRev(c, msg, "")
}

func errorWithRev(c errcode.Code, msg, rev string) *response {
	status := arangoStatus(c)
	if b, ok := appendErrorBody(nil, status, c.Num, msg, rev); ok {
		return jsonResponse(status, b)
	}
	m := map[string]any{"error": true, "code": status, "errorNum": c.Num, "errorMessage": msg}
	if rev != "" {
		m["_rev"] = rev
	}
	b, _ := json.Marshal(m)
	return jsonResponse(status, b)
}

// appendErrorBody appends the error body json.Marshal makes of
// errorWithRev's map (members in its order) when msg and rev need no
// escaping but of quotes and backslashes, which encoding/json escapes the
// same; ok is false otherwise, and errorWithRev marshals the map. An
// object's first answer may be an error, and encoding/json's code is then
// not compiled on its path.
func appendErrorBody(b []byte, status, num int, msg, rev string) (out []byte, ok bool) {
	b = append(b, '{')
	if rev != "" {
		if b, ok = appendPlainString(append(b, `"_rev":`...), rev); !ok {
			return nil, false
		}
		b = append(b, ',')
	}
	b = strconv.AppendInt(append(b, `"code":`...), int64(status), 10)
	b = append(b, `,"error":true,"errorMessage":`...)
	if b, ok = appendPlainString(b, msg); !ok {
		return nil, false
	}
	b = strconv.AppendInt(append(b, `,"errorNum":`...), int64(num), 10)
	return append(b, '}'), true
}

// appendPlainString appends s as a JSON string if it holds only printable
// ASCII other than <, > and & (which encoding/json escapes for HTML).
func appendPlainString(b []byte, s string) ([]byte, bool) {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c >= 0x7f || c == '<' || c == '>' || c == '&':
			return nil, false
		default:
			b = append(b, c)
		}
	}
	return append(b, '"'), true
}

// arangoStatus is the HTTP status ArangoDB answers an error number with, as
// the sync server's ArangoDB door does.
func arangoStatus(c errcode.Code) int {
	switch c {
	case errcode.Conflict:
		return 412
	case errcode.UniqueConstraint, errcode.DuplicateName:
		return 409
	}
	return c.Status
}

// failure answers err: a document error keeps its number (and the current
// _rev of a conflict); anything else is internal.
func failure(err error) *response {
	e := core.AsError(err)
	c, ok := errcode.ByNum(e.Num)
	if !ok {
		c = errcode.Internal
	}
	return errorWithRev(c, e.Message, e.Rev)
}

// route is a parsed API path.
type route struct {
	kind string // "docs", "doc" (short forms), "arango", "version", "status"
	coll string
	key  string // ArangoDB document key, or the _id of the short form
}

// parseRoute splits a path: /docs/{collection}, /docs/{id...},
// /_api/document/{coll}[/{key}] and the same under /_db/{db}.
func parseRoute(method, path string) (route, bool) {
	if rest, ok := strings.CutPrefix(path, "/docs/"); ok {
		p, err := pathUnescape(rest)
		if err != nil || p == "" {
			return route{}, false
		}
		if method == "POST" {
			return route{kind: "docs", coll: p}, true
		}
		return route{kind: "doc", key: p}, true
	}
	if path == "/_edge/status" {
		return route{kind: "status"}, true
	}
	if rest, ok := strings.CutPrefix(path, "/_db/"); ok {
		_, after, found := strings.Cut(rest, "/")
		if !found {
			return route{}, false
		}
		path = "/" + after
	}
	if path == "/_api/version" {
		return route{kind: "version"}, true
	}
	if path == "/_api/cursor" {
		return route{kind: "cursor"}, true
	}
	if id, ok := strings.CutPrefix(path, "/_api/cursor/"); ok && id != "" && !strings.Contains(id, "/") {
		return route{kind: "cursor", key: id}, true
	}
	rest, ok := strings.CutPrefix(path, "/_api/document/")
	if !ok {
		return route{}, false
	}
	coll, key, _ := strings.Cut(rest, "/")
	c, err1 := pathUnescape(coll)
	k, err2 := pathUnescape(key)
	if err1 != nil || err2 != nil || c == "" || strings.Contains(k, "/") {
		return route{}, false
	}
	return route{kind: "arango", coll: c, key: k}, true
}

// quick answers r at once if it can, without waiting for anything: a read
// while the replica follows the server's live feed, or one in its start
// window that does not insist on freshness (freshen). ok is false when r
// must be served by serve instead.
func (a *app) quick(r *request) (*response, bool) {
	if r.method != "GET" && r.method != "HEAD" {
		return nil, false
	}
	fresh := "live"
	if !a.following.Load() {
		if r.noCache || !a.starting() {
			return nil, false
		}
		fresh = "stale"
	}
	rt, ok := parseRoute(r.method, r.path)
	if !ok || rt.kind != "doc" && !(rt.kind == "arango" && rt.key != "") {
		return nil, false
	}
	res := a.read(r, rt)
	res.set(freshHeader, fresh)
	return res, true
}

// serve answers r. It may wait: for a lease, a pull, the durability of a
// write, a push.
func (a *app) serve(ctx context.Context, r *request) *response {
	if len(r.body) > maxBodyBytes {
		return errorResponse(errcode.TooBig, fmt.Sprintf("request body is larger than %d bytes", maxBodyBytes))
	}
	rt, ok := parseRoute(r.method, r.path)
	if !ok {
		return errorResponse(errcode.UnknownPath, "unknown path "+strconv.Quote(truncate(r.path, 200))+" (see edge/README.md)")
	}
	write := (r.method == "POST" || r.method == "PATCH" || r.method == "PUT" && !strings.Contains(r.query, "onlyget=true")) && rt.kind != "cursor"
	if bad := checkBody(r, write); bad != nil {
		return bad
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	switch {
	case rt.kind == "version" && r.method == "GET":
		return jsonResponse(200, []byte(`{"server":"arango","version":"3.12.0","license":"community","hilodb":true,"edge":true}`))
	case rt.kind == "status" && r.method == "GET":
		return a.status()
	case rt.kind == "docs":
		return a.postShort(ctx, r, rt)
	case rt.kind == "doc" && (r.method == "GET" || r.method == "HEAD"),
		rt.kind == "arango" && rt.key != "" && (r.method == "GET" || r.method == "HEAD"):
		fresh := a.freshen(ctx, r.noCache)
		res := a.read(r, rt)
		res.set(freshHeader, fresh)
		return res
	case rt.kind == "arango":
		return a.arango(ctx, r, rt)
	case rt.kind == "cursor":
		return a.cursor(ctx, r, rt)
	}
	return errorResponse(errcode.MethodNotAllowed, fmt.Sprintf("method %s is not allowed on %s", r.method, truncate(r.path, 200)))
}

// read answers a document read from the replica.
func (a *app) read(r *request, rt route) *response {
	doc, err := readDoc(a.store, rt)
	return docResponse(r, rt, doc, err)
}

// docSource reads documents: the replica's store, or a core.Reader of the
// bytes its storage held before it is loaded (starter).
type docSource interface {
	Get(id string) ([]byte, error)
	Document(collection, selector string) ([]byte, error)
}

// readDoc reads the document a read route names from src.
func readDoc(src docSource, rt route) ([]byte, error) {
	if rt.kind == "doc" {
		return src.Get(rt.key)
	}
	return src.Document(rt.coll, rt.key)
}

// docResponse answers a read of route rt that found doc, or err.
func docResponse(r *request, rt route, doc []byte, err error) *response {
	if err != nil {
		return failure(err)
	}
	if rt.kind == "doc" {
		return jsonResponse(200, doc)
	}
	return arangoRead(r, doc)
}

// postShort is POST /docs/{collection}: store the body, wait for the
// server's acknowledgement (at most a few seconds) unless
// waitForSync=false, and answer 201 once synced or 202 when it is durable
// here and pending.
func (a *app) postShort(ctx context.Context, r *request, rt route) *response {
	q, err := parseQuery(r.query)
	if err != nil {
		return errorResponse(errcode.BadRequest, "malformed query: "+err.Error())
	}
	a.learnCollection(ctx, rt.coll)
	res, err := a.store.Insert(ctx, rt.coll, r.body, &core.WriteOptions{ReturnNew: true, MadeIDsNew: true})
	if err != nil {
		return failure(err)
	}
	synced := false
	if q.Get("waitForSync") != "false" {
		synced = a.waitSynced(ctx, []string{res.ID})
	}
	out := jsonResponse(202, res.New)
	if synced {
		out.status = 201
	}
	out.set("Location", escapePath("/docs/"+res.ID))
	out.set(syncHeader, syncState(synced))
	return out
}

func syncState(synced bool) string {
	if synced {
		return "synced"
	}
	return "pending"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
