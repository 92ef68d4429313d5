package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/internal/wire"
	"github.com/tidwall/gjson"
)

const (
	// maxBodyBytes bounds a request body, as the sync server bounds a message.
	maxBodyBytes = 8 << 20
	// serverTimeout bounds what one request asks of the sync server: the
	// lease of a range and the push of a write, or the read of a miss. It
	// is shorter than the glue's per-request deadline, so the Go side
	// answers first.
	serverTimeout = 10 * time.Second
	// cacheHeader tells whether a GET was answered from the isolate's
	// cache (hit) or read through from the sync server (miss).
	cacheHeader = "X-Hilodb-Cache"
)

// Error codes and numbers of the HTTP layer itself; document errors use the
// codes and numbers of package core.
var (
	codeUnknownPath, numUnknownPath           = errcode.UnknownPath.Name, errcode.UnknownPath.Num
	codeMethodNotAllowed, numMethodNotAllowed = errcode.MethodNotAllowed.Name, errcode.MethodNotAllowed.Num
	codeBadRequest, numBadRequest             = errcode.BadRequest.Name, errcode.BadRequest.Num
)

// errNoServer is the failure of every write, and of every read the cache
// cannot answer, in a worker without a sync server.
var errNoServer = errors.New("no sync server is configured (HILODB_URL)")

// origin is the sync server behind the cache: writes go through to it,
// misses are read from it. Calls happen inside the request they serve.
type origin interface {
	Push(ctx context.Context, items []client.PushItem) (client.PushOutcome, error)
	Get(ctx context.Context, ids []string) ([]client.Change, error)
}

// api is the worker's HTTP API: a write-through, read-through cache of the
// sync server.
type api struct {
	cache  *cache
	origin origin // nil without a sync server
}

// newHandler returns the HTTP API over store, a cache of o (nil for none).
func newHandler(store *core.Store, o origin) http.Handler {
	a := &api{cache: &cache{store: store}, origin: o}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /docs/{collection}", a.post)
	mux.HandleFunc("GET /docs/{id...}", a.get)
	mux.HandleFunc("/", a.unknown)
	return recoverJSON(mux)
}

// post stores the body in the collection named by the path, pushes it to
// the sync server, and answers 201 with the stored document once the server
// has acknowledged it.
//
// A write the server did not acknowledge is evicted from the cache: the
// answer tells the client it was not stored, so this isolate must not serve
// it either, and nothing would push it later (the worker does no work
// outside requests, and the isolate may be evicted at any time).
func (a *api) post(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			writeError(w, http.StatusRequestEntityTooLarge, wire.CodeTooBig, wire.NumTooBig,
				fmt.Sprintf("request body is larger than %d bytes", tooBig.Limit))
			return
		case err != nil:
			writeError(w, http.StatusBadRequest, codeBadRequest, numBadRequest, "read request body: "+err.Error())
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), serverTimeout)
	defer cancel()
	res, err := a.cache.put(ctx, r.PathValue("collection"), body)
	if err != nil {
		writeFailure(w, err)
		return
	}
	if err := a.writeThrough(ctx, res); err != nil {
		if eerr := a.cache.evict(res.ID, res.Rev); eerr != nil {
			log.Printf("edge: %v", eerr)
		}
		writeFailure(w, err)
		return
	}
	w.Header().Set("Location", (&url.URL{Path: "/docs/" + res.ID}).EscapedPath())
	writeJSON(w, http.StatusCreated, res.New)
}

// writeThrough pushes the write res to the sync server and records its
// acknowledgement. The base of the push is the revision the write replaced
// in the cache: none for a new document, the server's for a cached one.
func (a *api) writeThrough(ctx context.Context, res core.Result) error {
	if a.origin == nil {
		return errNoServer
	}
	out, err := a.origin.Push(ctx, []client.PushItem{{ID: res.ID, BaseRev: res.OldRev, Rev: res.Rev, Doc: res.New}})
	if err != nil {
		return err
	}
	if len(out.Results) != 1 {
		return fmt.Errorf("push %s: %d results for one write", res.ID, len(out.Results))
	}
	switch pr := out.Results[0]; {
	case pr.OK:
	case pr.Error != nil && pr.Error.Code == wire.CodeConflict:
		return &conflictError{ID: res.ID, Rev: gjson.GetBytes(pr.Current, "_rev").String()}
	case pr.Error != nil:
		return fmt.Errorf("push %s: %w", res.ID, pr.Error)
	default:
		return fmt.Errorf("push %s: refused without an error", res.ID)
	}
	// The write is durable now, whatever happens to the bookkeeping. Should
	// the acknowledgement not be recorded, the document stays pending: the
	// cache does not serve it and reads it through instead.
	if err := a.cache.ack(res.ID, res.Rev); err != nil {
		log.Printf("edge: acknowledge %s: %v", res.ID, err)
	}
	return nil
}

// conflictError is a write the sync server refused because the document's
// version there is not the one the write replaced: the cache did not have
// it, or had an older one.
type conflictError struct {
	ID  string
	Rev string // the server's _rev, when it sent one
}

func (e *conflictError) Error() string {
	if e.Rev == "" {
		return fmt.Sprintf("document %q has a newer version on the sync server; read it and write again", e.ID)
	}
	return fmt.Sprintf("document %q has a newer version on the sync server (_rev %s); read it and write again", e.ID, e.Rev)
}

// get answers the document whose _id is the rest of the path: from the
// cache, or on a miss from the sync server, caching what it sends.
func (a *api) get(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	doc, ok, err := a.cache.lookup(id)
	if err != nil {
		writeFailure(w, err)
		return
	}
	if ok {
		w.Header().Set(cacheHeader, "hit")
		writeJSON(w, http.StatusOK, doc)
		return
	}
	w.Header().Set(cacheHeader, "miss")
	if a.origin == nil {
		writeFailure(w, errNoServer)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), serverTimeout)
	defer cancel()
	chs, err := a.origin.Get(ctx, []string{id})
	if err != nil {
		writeFailure(w, err)
		return
	}
	if len(chs) != 1 {
		writeFailure(w, fmt.Errorf("get %s: %d documents for one id", id, len(chs)))
		return
	}
	ch := chs[0]
	if ch.Rev == "" || ch.Deleted || len(ch.Doc) == 0 {
		writeError(w, http.StatusNotFound, "not_found", core.NumDocumentNotFound, fmt.Sprintf("document %q not found", id))
		return
	}
	if err := a.cache.fill(ch); err != nil {
		log.Printf("edge: cache %s: %v", id, err) // the answer is right all the same
	}
	writeJSON(w, http.StatusOK, ch.Doc)
}

// unknown answers every path and method the API does not serve.
func (a *api) unknown(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/docs/") {
		w.Header().Set("Allow", "GET, HEAD, POST")
		writeError(w, http.StatusMethodNotAllowed, codeMethodNotAllowed, numMethodNotAllowed,
			fmt.Sprintf("method %s is not allowed on %s", r.Method, r.URL.Path))
		return
	}
	writeError(w, http.StatusNotFound, codeUnknownPath, numUnknownPath, "unknown path "+r.URL.Path)
}

// failure is how an error is answered: HTTP status, stable code, number and
// message.
type failure struct {
	status int
	code   string
	num    int
	msg    string
}

// classify maps an error to its answer. A write the sync server refused
// as a conflict is 409. Other refusals by the server keep the server's code
// and number (502). An unreachable server, or one that did not answer in
// time, is needs_server (503): the worker can neither lease ids, make a
// write durable nor read a miss without it. Everything else is a
// document-layer error.
func classify(err error) failure {
	var ce *conflictError
	if errors.As(err, &ce) {
		return failure{http.StatusConflict, wire.CodeConflict, core.NumConflict, err.Error()}
	}
	var we *client.Error
	if errors.As(err, &we) {
		return failure{http.StatusBadGateway, we.Code, we.Num, err.Error()}
	}
	if errors.Is(err, errNoServer) || errors.Is(err, errRequestGone) ||
		errors.Is(err, client.ErrDisconnected) || errors.Is(err, client.ErrClosed) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return failure{http.StatusServiceUnavailable, wire.CodeNeedsServer, core.NumNeedsServer,
			"the sync server is needed and could not be reached: " + err.Error()}
	}
	e := core.AsError(err)
	msg := e.Message
	if errors.Is(err, core.ErrInternal) {
		msg = err.Error() // keep the operation context of unexpected errors
	}
	return failure{e.HTTPStatus(), e.Code, e.Num, msg}
}

func writeFailure(w http.ResponseWriter, err error) {
	f := classify(err)
	if f.status >= http.StatusInternalServerError {
		log.Printf("edge: %d %s: %v", f.status, f.code, err)
	}
	writeError(w, f.status, f.code, f.num, f.msg)
}

// errorBody is the JSON shape of every error answer, ArangoDB's with a
// stable code word.
type errorBody struct {
	Error        bool   `json:"error"`
	Code         string `json:"code"`
	ErrorNum     int    `json:"errorNum"`
	ErrorMessage string `json:"errorMessage"`
}

func writeError(w http.ResponseWriter, status int, code string, num int, msg string) {
	b, err := json.Marshal(errorBody{Error: true, Code: code, ErrorNum: num, ErrorMessage: msg})
	if err != nil { // cannot happen for these field types
		b = []byte(`{"error":true,"code":"internal","errorNum":4,"errorMessage":"encode error"}`)
	}
	writeJSON(w, status, b)
}

// writeJSON writes body with a Content-Length, which lets the runtime send
// it as one fixed-length stream.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// recoverJSON turns a panic in h into a 500 answer. In the worker a panic
// that escaped a request goroutine would end the Go program, and with it
// every leased range and cached document.
func recoverJSON(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				log.Printf("edge: panic serving %s %s: %v", r.Method, r.URL.Path, v)
				writeError(w, http.StatusInternalServerError, "internal", core.NumInternal, fmt.Sprint("internal error: ", v))
			}
		}()
		h.ServeHTTP(w, r)
	})
}
