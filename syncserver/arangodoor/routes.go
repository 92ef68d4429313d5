package arangodoor

import (
	"encoding/json"
	"net/http"

	"github.com/hilodb/hilodb/core/keygen"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/syncserver"
)

// arangoRoute is one route of the ArangoDB door: a pattern with %s where
// the /_db/{db} prefix goes, and its handler. noBody: the answer does not
// depend on the body, which is neither read nor checked.
type arangoRoute struct {
	pattern string
	fn      func(http.ResponseWriter, *syncserver.Request)
	noBody  bool
}

// arangoMoreRoutes are the routes beyond documents: server, queries,
// indexes, collection and database management, import.
func (s *door) arangoMoreRoutes() []arangoRoute {
	return []arangoRoute{
		{pattern: "GET %s/_admin/server/role", fn: s.arangoServerRole},
		{pattern: "POST %s/_api/cursor", fn: s.arangoQuery},
		{pattern: "POST %s/_api/cursor/{id}", fn: s.arangoCursorNext},
		{pattern: "PUT %s/_api/cursor/{id}", fn: s.arangoCursorNext},
		{pattern: "DELETE %s/_api/cursor/{id}", fn: s.arangoCursorDrop},
		{pattern: "GET %s/_api/collection/{name}", fn: s.arangoCollectionInfo},
		{pattern: "GET %s/_api/collection/{name}/properties", fn: s.arangoCollectionInfo},
		{pattern: "PUT %s/_api/collection/{name}/properties", fn: s.arangoSetProperties},
		{pattern: "GET %s/_api/collection/{name}/count", fn: s.arangoCount},
		{pattern: "GET %s/_api/collection/{name}/revision", fn: s.arangoRevision},
		{pattern: "PUT %s/_api/collection/{name}/truncate", fn: s.arangoTruncate},
		{pattern: "PUT %s/_api/collection/{name}/rename", fn: s.arangoRename},
		{pattern: "DELETE %s/_api/collection/{name}", fn: s.arangoDrop},
		{pattern: "GET %s/_api/index", fn: s.arangoListIndexes},
		{pattern: "POST %s/_api/index", fn: s.arangoCreateIndex},
		{pattern: "GET %s/_api/index/{coll}/{name}", fn: s.arangoGetIndex},
		{pattern: "DELETE %s/_api/index/{coll}/{name}", fn: s.arangoDropIndex},
		{pattern: "POST %s/_api/import", fn: s.arangoImport},
		{pattern: "GET %s/_api/database", fn: s.arangoListDBs},
		{pattern: "GET %s/_api/database/user", fn: s.arangoListDBs},
		{pattern: "GET %s/_api/database/current", fn: s.arangoCurrentDB},
		{pattern: "POST %s/_api/database", fn: s.arangoCreateDB},
		{pattern: "DELETE %s/_api/database/{name}", fn: s.arangoDropDB},
	}
}

// arangoVersionDetails is what GET /_api/version?details=true adds.
var arangoVersionDetails = map[string]any{
	"architecture": "64bit", "mode": "server", "role": "SINGLE", "server-version": "3.12.0",
	"license": "community", "engine": "hilodb", "hilodb": "true",
}

// arangoServerRole answers as a single server does.
func (s *door) arangoServerRole(w http.ResponseWriter, r *syncserver.Request) {
	syncserver.WriteJSON(w, http.StatusOK, map[string]any{"error": false, "code": 200, "role": "SINGLE", "mode": "default"})
}

// withDefaultKeyType adds ArangoDB's default key generator, traditional,
// to keyOptions that name none. Malformed keyOptions are left for
// syncserver.ParseCollectionDef to refuse.
func withDefaultKeyType(ko json.RawMessage) json.RawMessage {
	m := map[string]json.RawMessage{}
	if len(ko) > 0 && string(ko) != "null" {
		if json.Unmarshal(ko, &m) != nil {
			return ko
		}
	}
	if _, ok := m["type"]; ok {
		return ko
	}
	m["type"], _ = json.Marshal(keygen.Traditional)
	b, _ := json.Marshal(m)
	return b
}

// arangoUnknown answers a path the door does not serve: 404, errorNum
// 1911, which arangojs raises as an ArangoError.
func arangoUnknown(w http.ResponseWriter, r *syncserver.Request) {
	arangoError(w, errcode.UnknownPath, "unknown path "+syncserver.Quote(syncserver.Truncate(r.URL.Path, 200))+" (hilodb serves ArangoDB's document, collection, query and index API; see docs/http.md)")
}
