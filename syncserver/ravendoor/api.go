package ravendoor

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/syncserver"
)

// RavenDB's HTTP API, the subset its clients need for sessions and ids
// (docs/http.md lists what is served): topology with this server as the one
// node, HiLo next/return, identities, batches and documents. Numbers come
// from the same counters as the websocket ops, so the doors never hand out
// one twice; documents are the ones browsers replicate.

// register adds the door's routes to mux.
func (s *door) register(mux *http.ServeMux) {
	byName := func(r *http.Request) string { return r.URL.Query().Get("name") }
	byPath := func(r *http.Request) string { return r.PathValue("db") }
	h := func(dbOf func(*http.Request) string, fn func(http.ResponseWriter, *syncserver.Request)) http.HandlerFunc {
		return s.Guard("ravendb", dbOf, ravenError, true, fn)
	}
	mux.HandleFunc("GET /topology", h(byName, s.ravenTopology))
	mux.HandleFunc("GET /cluster/topology", h(func(*http.Request) string { return "default" }, s.ravenClusterTopology))
	mux.HandleFunc("GET /databases/{db}/configuration/client", h(byPath, func(w http.ResponseWriter, r *syncserver.Request) {
		syncserver.WriteJSON(w, http.StatusOK, map[string]any{"Etag": 0, "Configuration": nil})
	}))
	mux.HandleFunc("GET /databases/{db}/hilo/next", h(byPath, s.ravenHiloNext))
	mux.HandleFunc("PUT /databases/{db}/hilo/return", h(byPath, s.ravenHiloReturn))
	mux.HandleFunc("POST /databases/{db}/identity/next", h(byPath, s.ravenIdentityNext))
	mux.HandleFunc("POST /databases/{db}/identity/seed", h(byPath, s.ravenIdentitySeed))
	mux.HandleFunc("POST /databases/{db}/bulk_docs", h(byPath, s.ravenBatch))
	mux.HandleFunc("GET /databases/{db}/docs", h(byPath, s.ravenGetDocs))
	mux.HandleFunc("POST /databases/{db}/docs", h(byPath, s.ravenGetDocs))
	mux.HandleFunc("PUT /databases/{db}/docs", h(byPath, s.ravenPutDoc))
	mux.HandleFunc("DELETE /databases/{db}/docs", h(byPath, s.ravenDeleteDoc))
	s.registerRavenQueries(mux, h)
	mux.HandleFunc("/databases/{db}/", h(byPath, func(w http.ResponseWriter, r *syncserver.Request) {
		ravenError(w, errcode.UnknownPath, r.Method+" "+r.URL.Path+" is not served by hilodb's RavenDB API (see docs/http.md)")
	}))
}

// ravenExceptions are the exception types RavenDB's clients map error
// bodies to.
var ravenExceptions = map[string]string{
	errcode.Conflict.Name:     "Raven.Client.Exceptions.ConcurrencyException",
	errcode.NotFound.Name:     "Raven.Client.Exceptions.Documents.DocumentDoesNotExistException",
	errcode.Unauthorized.Name: "Raven.Client.Exceptions.Security.AuthorizationException",
	errcode.UnknownPath.Name:  "Raven.Client.Exceptions.Routing.RouteNotFoundException",
	errcode.BadQuery.Name:     "Raven.Client.Exceptions.InvalidQueryException",
}

// ravenError writes an error body as RavenDB does ({Type, Message, Error}),
// with hilodb's code and number beside.
func ravenError(w http.ResponseWriter, c errcode.Code, msg string) {
	typ, ok := ravenExceptions[c.Name]
	if !ok {
		typ = "Raven.Client.Exceptions.BadRequestException"
		if c.Status >= 500 {
			typ = "Raven.Client.Exceptions.RavenException"
		}
	}
	status := c.Status
	switch c {
	case errcode.Conflict:
		status = http.StatusConflict // RavenDB answers a concurrency violation with 409
	case errcode.UnknownPath:
		// RavenDB's clients take a 404 as "no such item" (an attachment,
		// revisions, …): an unserved route must not look like an empty
		// answer, so it is 501, which the clients raise with this message.
		status = http.StatusNotImplemented
	}
	syncserver.WriteJSON(w, status, map[string]any{"Type": typ, "Message": msg, "Error": msg, "Code": c.Name, "Num": c.Num})
}

// ravenFail writes err, giving internal failures a generic text.
func (s *door) ravenFail(w http.ResponseWriter, err error) {
	var de *syncserver.DocError
	if errors.As(err, &de) {
		s.CountError(de.Code.Name)
		ravenError(w, de.Code, de.Msg)
		return
	}
	c, msg := s.ErrorOf(err)
	s.CountError(c.Name)
	ravenError(w, c, msg)
}

func (s *door) nodeURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (s *door) ravenTopology(w http.ResponseWriter, r *syncserver.Request) {
	syncserver.WriteJSON(w, http.StatusOK, map[string]any{
		"Etag": 1,
		"Nodes": []map[string]any{{
			"Url": s.nodeURL(r.Request), "ClusterTag": s.Tag(), "Database": r.DB, "ServerRole": "Member",
		}},
	})
}

func (s *door) ravenClusterTopology(w http.ResponseWriter, r *syncserver.Request) {
	url, tag := s.nodeURL(r.Request), s.Tag()
	nodes := map[string]string{tag: url}
	syncserver.WriteJSON(w, http.StatusOK, map[string]any{
		"Topology": map[string]any{
			"TopologyId": "hilodb-" + tag, "AllNodes": nodes, "Members": nodes,
			"Promotables": map[string]string{}, "Watchers": map[string]string{}, "LastNodeId": tag, "Etag": 1,
		},
		"Etag": 1, "Leader": tag, "NodeTag": tag, "Status": map[string]any{},
	})
}

// ravenLeaseNode owns every HiLo range leased over HTTP, and a return over
// HTTP is ignored: its unused numbers are skipped, as when a client stops
// without returning. Nothing in a RavenDB client's return proves that it
// comes from the leaser (the tag and two numbers anyone can guess; not its
// connection, which the official client changes as it disposes; not its
// address, which every process on a host and every client behind a proxy
// shares), and a return taken from anyone else would hand the leaser's
// numbers out again. Numbers are plentiful (2^53); ids must never repeat.
const ravenLeaseNode = "http"

// ravenClientHeader is a header RavenDB's clients send with every request.
// A request a page can make cross-site without asking the server first (an
// <img>, a form) cannot carry it, so hilo/next, a GET that changes state,
// is served only with it.
const ravenClientHeader = "Raven-Client-Version"

func (s *door) ravenHiloNext(w http.ResponseWriter, r *syncserver.Request) {
	if r.Header.Get(ravenClientHeader) == "" {
		s.ravenFail(w, syncserver.Refusal(errcode.Forbidden, "hilo/next leases numbers, so it needs the "+ravenClientHeader+" header (RavenDB's clients send it; a cross-site request cannot)"))
		return
	}
	q := r.URL.Query()
	tag := q.Get("tag")
	if err := syncserver.CheckTag(tag); err != nil {
		s.ravenFail(w, err)
		return
	}
	sep := q.Get("identityPartsSeparator")
	if sep == "" {
		sep = "/"
	}
	if len(sep) != 1 || sep[0] < 0x21 || sep[0] > 0x7e || sep == "|" {
		s.ravenFail(w, syncserver.BadRequest("identityPartsSeparator must be one printable ASCII character other than | and space"))
		return
	}
	if err := r.Touch(); err != nil {
		s.ravenFail(w, err)
		return
	}
	lastSize, err1 := queryInt(q.Get("lastBatchSize"))
	lastMax, err2 := queryInt(q.Get("lastMax"))
	at, err3 := ravenTime(q.Get("lastRangeAt"))
	if err := errors.Join(err1, err2, err3); err != nil {
		s.ravenFail(w, syncserver.BadRequest("hilo/next: %v", err))
		return
	}
	rg, err := s.NextRange(r.Context(), r.DB, tag, ravenLeaseNode, syncserver.LastLease{Size: lastSize, Max: lastMax, At: at})
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	syncserver.WriteJSON(w, http.StatusOK, map[string]any{
		"Prefix": tag + sep, "Low": rg.Low, "High": rg.High, "LastSize": rg.Size,
		"ServerTag": s.Tag(), "LastRangeAt": rg.At.Format("2006-01-02T15:04:05.0000000Z"),
	})
}

func (s *door) ravenHiloReturn(w http.ResponseWriter, r *syncserver.Request) {
	q := r.URL.Query()
	tag := q.Get("tag")
	if err := syncserver.CheckTag(tag); err != nil {
		s.ravenFail(w, err)
		return
	}
	end, err1 := queryInt(q.Get("end"))
	last, err2 := queryInt(q.Get("last"))
	if err := errors.Join(err1, err2); err != nil {
		s.ravenFail(w, syncserver.BadRequest("hilo/return: %v", err))
		return
	}
	if end < 1 || last < 0 || last > end {
		s.ravenFail(w, syncserver.BadRequest("hilo/return: need 0 <= last <= end and end >= 1"))
		return
	}
	// Checked, answered as RavenDB does, and ignored: see ravenLeaseNode.
	s.CountError("hilo_return_ignored")
	w.WriteHeader(http.StatusNoContent)
}

func (s *door) ravenIdentityNext(w http.ResponseWriter, r *syncserver.Request) {
	name := strings.TrimSuffix(r.URL.Query().Get("name"), "|")
	if err := syncserver.CheckTag(name); err != nil {
		s.ravenFail(w, err)
		return
	}
	v, err := s.NextIdentity(r.Context(), r.DB, name)
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	syncserver.WriteJSON(w, http.StatusOK, map[string]any{"NewIdentityValue": v})
}

func (s *door) ravenIdentitySeed(w http.ResponseWriter, r *syncserver.Request) {
	q := r.URL.Query()
	name := strings.TrimSuffix(q.Get("name"), "|")
	if err := syncserver.CheckTag(name); err != nil {
		s.ravenFail(w, err)
		return
	}
	value, err := queryInt(q.Get("value"))
	if err != nil {
		s.ravenFail(w, syncserver.BadRequest("identity/seed: %v", err))
		return
	}
	v, err := s.SeedIdentity(r.Context(), r.DB, name, value, q.Get("force") == "true")
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	syncserver.WriteJSON(w, http.StatusOK, map[string]any{"NewSeedValue": v})
}

func queryInt(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

// ravenTime parses RavenDB's dates ("2026-11-24T10:00:00.0000000Z", or
// without the zone); "" is the zero time.
func ravenTime(v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.9999999", "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("lastRangeAt: want an ISO 8601 date, got " + syncserver.Quote(syncserver.Truncate(v, 64)))
}
