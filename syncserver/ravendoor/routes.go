package ravendoor

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/syncserver"
)

// The RavenDB routes beside documents and ids: queries, multi_get (lazy
// operations), identities and collection statistics; the features that are
// not served answer at once, saying so; and RavenDB's server-level routes
// answer in RavenDB's error shape, never with a plain-text 404.

// registerRavenQueries adds the routes of this file to mux.
func (s *door) registerRavenQueries(mux *http.ServeMux, h func(func(*http.Request) string, func(http.ResponseWriter, *syncserver.Request)) http.HandlerFunc) {
	byPath := func(r *http.Request) string { return r.PathValue("db") }
	mux.HandleFunc("POST /databases/{db}/queries", h(byPath, s.ravenQueries))
	mux.HandleFunc("GET /databases/{db}/queries", h(byPath, s.ravenQueries))
	mux.HandleFunc("POST /databases/{db}/multi_get", h(byPath, s.ravenMultiGet))
	mux.HandleFunc("GET /databases/{db}/debug/identities", h(byPath, s.ravenIdentities))
	mux.HandleFunc("GET /databases/{db}/collections/stats", h(byPath, s.ravenCollectionStats))
	for _, p := range ravenNotServed {
		msg := p.what + " is not served by hilodb's RavenDB API (dynamic collection queries and documents are; see docs/http.md)"
		mux.HandleFunc("/databases/{db}/"+p.route, h(byPath, func(w http.ResponseWriter, r *syncserver.Request) {
			ravenError(w, errcode.UnknownPath, msg)
		}))
	}
	// Server-level routes: database management, the studio, operations.
	// They are not served, and say so as RavenDB's errors do.
	server := func(w http.ResponseWriter, r *http.Request) {
		s.CountRequest("ravendb")
		s.CountError(errcode.UnknownPath.Name)
		ravenError(w, errcode.UnknownPath, r.Method+" "+syncserver.Truncate(r.URL.Path, 200)+" is a RavenDB server-level route, not served by hilodb: databases are made on first use (see docs/http.md)")
	}
	for _, p := range []string{"/databases", "/admin/", "/build/", "/info/", "/monitoring/", "/operations/", "/server/",
		"/setup/", "/studio/", "/studio-auth", "/certificates/", "/license/", "/debug/", "/rachis/", "/periodic-backup/", "/cluster/", "/eula/"} {
		mux.HandleFunc(p, server)
	}
}

// ravenNotServed are the features a RavenDB client reaches that hilodb
// does not serve, by route under /databases/{db}/.
var ravenNotServed = []struct{ route, what string }{
	{"indexes", "Static indexes (indexes)"},
	{"indexes/", "Static indexes (indexes)"},
	{"queries/", "Query operations (patch and delete by query, facets, suggestions)"},
	{"streams/", "Streaming"},
	{"revisions", "Revisions"},
	{"revisions/", "Revisions"},
	{"counters", "Counters"},
	{"timeseries", "Time series"},
	{"timeseries/", "Time series"},
	{"subscriptions", "Subscriptions"},
	{"subscriptions/", "Subscriptions"},
	{"attachments", "Attachments"},
	{"operations/", "Operations"},
	{"admin/", "Database administration"},
	{"smuggler/", "Import and export (smuggler)"},
	{"cmpxchg", "Compare-exchange"},
	{"changes", "The Changes API"},
}

// ravenIdentities answers GetIdentitiesOperation: each identity of the
// database with its value, named as RavenDB names them ("users|").
func (s *door) ravenIdentities(w http.ResponseWriter, r *syncserver.Request) {
	ids, err := s.Identities(r.DB, 100_000)
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	out := make(map[string]int64, len(ids))
	for name, v := range ids {
		out[name+"|"] = v
	}
	syncserver.WriteJSON(w, http.StatusOK, out)
}

// ravenCollectionStats answers GetCollectionStatisticsOperation: the live
// documents of each collection, by the rule queries use
// (ravenCollectionOf). It reads every document of the database.
func (s *door) ravenCollectionStats(w http.ResponseWriter, r *syncserver.Request) {
	counts := map[string]int{}
	total := 0
	err := s.ScanDocs(r.DB, "", func(_ string, doc json.RawMessage) bool {
		total++
		counts[ravenCollectionOf(doc)]++
		return total < syncserver.ScanLimit
	})
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	syncserver.WriteJSON(w, http.StatusOK, map[string]any{"CountOfDocuments": total, "CountOfConflicts": 0, "Collections": counts})
}

// maxMultiGet bounds the requests of one multi_get.
const maxMultiGet = 256

// ravenMultiGet answers a session's lazy operations: each request is run
// as its own route of this database (documents, queries, startsWith), and
// the answers come back together, bounded as one reply.
func (s *door) ravenMultiGet(w http.ResponseWriter, r *syncserver.Request) {
	var req struct {
		Requests []struct {
			URL     string            `json:"Url"`
			Query   string            `json:"Query"`
			Method  string            `json:"Method"`
			Headers map[string]string `json:"Headers"`
			Content json.RawMessage   `json:"Content"`
		} `json:"Requests"`
	}
	if err := json.Unmarshal(r.Data, &req); err != nil {
		s.ravenFail(w, syncserver.BadRequest("multi_get: malformed body: %v", err))
		return
	}
	if len(req.Requests) > maxMultiGet {
		s.ravenFail(w, syncserver.BadRequest("multi_get: at most %d requests, got %d", maxMultiGet, len(req.Requests)))
		return
	}
	base := "/databases/" + r.DB
	type result struct {
		Result     json.RawMessage   `json:"Result"`
		StatusCode int               `json:"StatusCode"`
		Headers    map[string]string `json:"Headers"`
	}
	out := make([]result, len(req.Requests))
	size := 0
	for i, g := range req.Requests {
		route, ok := strings.CutPrefix(g.URL, base)
		method := g.Method
		if method == "" {
			method = http.MethodGet
		}
		var fn func(http.ResponseWriter, *syncserver.Request)
		switch {
		case ok && route == "/docs" && method == http.MethodGet:
			fn = s.ravenGetDocs
		case ok && route == "/queries" && (method == http.MethodPost || method == http.MethodGet):
			fn = s.ravenQueries
		default:
			s.ravenFail(w, syncserver.BadRequest("multi_get: request %d: %s %s is not served in a multi_get (documents and queries of this database are)", i, syncserver.Quote(syncserver.Truncate(method, 10)), syncserver.Quote(syncserver.Truncate(g.URL, 100))))
			return
		}
		body := []byte(g.Content)
		var text string
		if json.Unmarshal(g.Content, &text) == nil {
			body = []byte(text) // the Node client sends the body as a string
		}
		if string(body) == "null" {
			body = nil
		}
		u, err := url.Parse(g.URL + g.Query)
		if err != nil {
			s.ravenFail(w, syncserver.BadRequest("multi_get: request %d: bad Url or Query", i))
			return
		}
		sub, err := http.NewRequestWithContext(r.Context(), method, u.String(), bytes.NewReader(body))
		if err != nil {
			s.ravenFail(w, syncserver.BadRequest("multi_get: request %d: %v", i, err))
			return
		}
		for k, v := range g.Headers {
			sub.Header.Set(k, v)
		}
		sub.Header.Set(ravenClientHeader, r.Header.Get(ravenClientHeader))
		rec := &bufferedResponse{header: http.Header{}, status: http.StatusOK}
		fn(rec, &syncserver.Request{Request: sub, DB: r.DB, Data: body})
		if route == "/docs" && rec.status == http.StatusNotFound && rec.body.Len() == 0 {
			// A lazy load of one missing document: the client reads a
			// body in any case, and null is its answer.
			rec.body.WriteString(`{"Results":[null],"Includes":{}}`)
		}
		size += rec.body.Len()
		if size > s.ReplyBudget() {
			s.ravenFail(w, syncserver.Refusal(errcode.ReplyTooBig, "multi_get: the answers pass the reply bound; ask for less at a time"))
			return
		}
		res := result{StatusCode: rec.status, Headers: map[string]string{}}
		for k := range rec.header {
			if k != "Content-Type" {
				res.Headers[k] = rec.header.Get(k)
			}
		}
		if rec.body.Len() > 0 {
			res.Result = json.RawMessage(bytes.Clone(rec.body.Bytes()))
		} else {
			res.Result = json.RawMessage("null")
		}
		out[i] = res
	}
	syncserver.WriteJSON(w, http.StatusOK, map[string]any{"Results": out})
}

// bufferedResponse holds a sub-request's answer in memory.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header         { return b.header }
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *bufferedResponse) WriteHeader(status int)      { b.status = status }
