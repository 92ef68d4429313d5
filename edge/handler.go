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
	"github.com/hilodb/hilodb/internal/wire"
)

const (
	// maxBodyBytes bounds a request body, as the sync server bounds a message.
	maxBodyBytes = 8 << 20
	// putTimeout bounds a write, including a lease from the sync server. It
	// is shorter than the glue's per-request deadline, so the Go side
	// answers first.
	putTimeout = 10 * time.Second
)

// Error codes and numbers of the HTTP layer itself; document errors use the
// codes and numbers of package core.
const (
	codeUnknownPath      = "unknown_path"
	numUnknownPath       = 404
	codeMethodNotAllowed = "method_not_allowed"
	numMethodNotAllowed  = 405
	codeBadRequest       = "bad_request"
	numBadRequest        = 400
)

// api is the worker's HTTP API over one resident store.
type api struct {
	store *core.Store
}

// newHandler returns the HTTP API over store.
func newHandler(store *core.Store) http.Handler {
	a := &api{store: store}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /docs/{collection}", a.post)
	mux.HandleFunc("GET /docs/{id...}", a.get)
	mux.HandleFunc("/", a.unknown)
	return recoverJSON(mux)
}

// post stores the body in the collection named by the path and answers 201
// with the stored document.
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
	ctx, cancel := context.WithTimeout(r.Context(), putTimeout)
	defer cancel()
	doc, err := a.store.Put(ctx, r.PathValue("collection"), body)
	if err != nil {
		writeFailure(w, err)
		return
	}
	if id := storedID(doc); id != "" {
		w.Header().Set("Location", (&url.URL{Path: "/docs/" + id}).EscapedPath())
	}
	writeJSON(w, http.StatusCreated, doc)
}

// storedID returns the _id of a stored document.
func storedID(doc []byte) string {
	var head struct {
		ID string `json:"_id"`
	}
	if json.Unmarshal(doc, &head) != nil {
		return ""
	}
	return head.ID
}

// get answers the document whose _id is the rest of the path.
func (a *api) get(w http.ResponseWriter, r *http.Request) {
	doc, err := a.store.Get(r.PathValue("id"))
	if err != nil {
		writeFailure(w, err)
		return
	}
	writeJSON(w, http.StatusOK, doc)
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

// classify maps an error to its answer. Refusals by the sync server keep
// the server's code and number; an unreachable server or a lease that ran
// out of time is needs_server (503): the worker has no range left and
// cannot lease one now. Everything else is a document-layer error.
func classify(err error) failure {
	var we *client.Error
	if errors.As(err, &we) {
		return failure{http.StatusBadGateway, we.Code, we.Num, err.Error()}
	}
	if errors.Is(err, client.ErrDisconnected) || errors.Is(err, client.ErrClosed) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return failure{http.StatusServiceUnavailable, "needs_server", core.NumNeedsServer,
			"cannot lease ids from the sync server: " + err.Error()}
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
