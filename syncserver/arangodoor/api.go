package arangodoor

import (
	"errors"
	"net/http"
	"strings"

	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/syncserver"
)

// ArangoDB's HTTP API, the document and collection subset arangojs needs
// (docs/http.md lists what is served), under /_db/{db}/_api/… and /_api/…
// for the default database. ArangoDB's _system database is hilodb's
// database "default" (a hilodb database name starts with a letter).

const arangoDefaultDB = "default"

// register adds the door's routes to mux.
func (s *door) register(mux *http.ServeMux) {
	byPath := func(r *http.Request) string {
		db := r.PathValue("db")
		if db == "_system" {
			return arangoDefaultDB
		}
		return db
	}
	byDefault := func(*http.Request) string { return arangoDefaultDB }
	routes := []arangoRoute{
		{pattern: "GET %s/_api/version", fn: s.arangoVersion},
		{pattern: "POST %s/_api/collection", fn: s.arangoCreateCollection},
		{pattern: "GET %s/_api/collection", fn: s.arangoListCollections},
		{pattern: "POST %s/_api/document/{coll}", fn: s.arangoCreate},
		{pattern: "PUT %s/_api/document/{coll}", fn: s.arangoMany},
		{pattern: "PATCH %s/_api/document/{coll}", fn: s.arangoMany},
		{pattern: "DELETE %s/_api/document/{coll}", fn: s.arangoMany},
		{pattern: "GET %s/_api/document/{coll}/{key}", fn: s.arangoRead},
		{pattern: "HEAD %s/_api/document/{coll}/{key}", fn: s.arangoRead},
		{pattern: "PUT %s/_api/document/{coll}/{key}", fn: s.arangoOne},
		{pattern: "PATCH %s/_api/document/{coll}/{key}", fn: s.arangoOne},
		{pattern: "DELETE %s/_api/document/{coll}/{key}", fn: s.arangoOne},
	}
	routes = append(routes, s.arangoMoreRoutes()...)
	// An unknown path's answer needs no body: a zip (a Foxx service) gets
	// it too, not a complaint about its bytes.
	routes = append(routes, arangoRoute{pattern: "%s/_api/", noBody: true, fn: arangoUnknown},
		arangoRoute{pattern: "%s/_admin/", noBody: true, fn: arangoUnknown})
	for _, rt := range routes {
		for _, at := range []struct {
			prefix string
			dbOf   func(*http.Request) string
		}{{"/_db/{db}", byPath}, {"", byDefault}} {
			h := s.Guard("arango", at.dbOf, arangoError, !rt.noBody, rt.fn)
			mux.HandleFunc(strings.Replace(rt.pattern, "%s", at.prefix, 1), func(w http.ResponseWriter, r *http.Request) {
				// Requests are served as they come: none waits in a queue.
				w.Header().Set("X-Arango-Queue-Time-Seconds", "0")
				h(w, r)
			})
		}
	}
}

// arangoStatus is the HTTP status ArangoDB answers an error number with.
func arangoStatus(c errcode.Code) int {
	switch c {
	case errcode.Conflict:
		return http.StatusPreconditionFailed
	case errcode.UniqueConstraint, errcode.DuplicateName:
		return http.StatusConflict
	}
	return c.Status
}

// arangoError writes ArangoDB's error body.
func arangoError(w http.ResponseWriter, c errcode.Code, msg string) {
	status := arangoStatus(c)
	syncserver.WriteJSON(w, status, map[string]any{"error": true, "code": status, "errorNum": c.Num, "errorMessage": msg})
}

func (s *door) arangoFail(w http.ResponseWriter, err error) {
	var de *syncserver.DocError
	if errors.As(err, &de) {
		s.CountError(de.Code.Name)
		status := arangoStatus(de.Code)
		body := map[string]any{"error": true, "code": status, "errorNum": de.Code.Num, "errorMessage": de.Msg}
		if de.Rev != "" {
			body["_rev"] = de.Rev
		}
		if de.ID != "" {
			_, key, _ := strings.Cut(de.ID, "/")
			body["_id"], body["_key"] = de.ID, key
		}
		syncserver.WriteJSON(w, status, body)
		return
	}
	c, msg := s.ErrorOf(err)
	s.CountError(c.Name)
	arangoError(w, c, msg)
}

func (s *door) arangoVersion(w http.ResponseWriter, r *syncserver.Request) {
	v := map[string]any{"server": "arango", "version": "3.12.0", "license": "community", "hilodb": true}
	if r.URL.Query().Get("details") == "true" {
		v["details"] = arangoVersionDetails
	}
	syncserver.WriteJSON(w, http.StatusOK, v)
}
