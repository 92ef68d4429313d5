package arangodoor

import (
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/hilodb/hilodb/auth"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/syncserver"
	"github.com/hilodb/hilodb/syncserver/storage"
)

// ArangoDB's collection and database management over hilodb's: a
// collection's count, properties (waitForSync, kept for the door; every
// write is synced either way), rename (of an empty collection: a
// document's id holds its collection's name), truncate and drop (each
// document removed as any remove is, so replicas learn of it); databases
// created, listed, described and dropped (its documents removed, its
// definitions deleted; its HiLo counters stay, so no id is handed out
// twice).

// arangoProps are a collection's properties only ArangoDB's clients see.
type arangoProps struct {
	WaitForSync bool `json:"waitForSync"`
}

// arangoDefined returns coll's definition, answering 404/1203 (and false)
// when there is none.
func (s *door) arangoDefined(w http.ResponseWriter, r *syncserver.Request, coll string) (syncserver.CollectionDef, bool) {
	defs, err := s.Collections(r.DB)
	if err != nil {
		s.arangoFail(w, err)
		return syncserver.CollectionDef{}, false
	}
	for _, d := range defs {
		if d.Name == coll {
			return d, true
		}
	}
	arangoError(w, errcode.CollectionNotFound, "collection or view not found: "+coll)
	return syncserver.CollectionDef{}, false
}

// arangoDescribe is a collection's description with its door properties.
func (s *door) arangoDescribe(db string, def syncserver.CollectionDef) map[string]any {
	d := arangoCollection(def)
	var p arangoProps
	_ = s.CollectionProps(db, def.Name, &p)
	d["waitForSync"] = p.WaitForSync
	return d
}

func (s *door) arangoCollectionInfo(w http.ResponseWriter, r *syncserver.Request) {
	if def, ok := s.arangoDefined(w, r, r.PathValue("name")); ok {
		syncserver.WriteJSON(w, http.StatusOK, s.arangoDescribe(r.DB, def))
	}
}

func (s *door) arangoCount(w http.ResponseWriter, r *syncserver.Request) {
	def, ok := s.arangoDefined(w, r, r.PathValue("name"))
	if !ok {
		return
	}
	n, err := s.CountDocs(r.DB, def.Name+"/", nil)
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	d := s.arangoDescribe(r.DB, def)
	d["count"] = n
	syncserver.WriteJSON(w, http.StatusOK, d)
}

// arangoRevision gives the collection's revision: the newest _rev of its
// documents ("0" when it has none).
func (s *door) arangoRevision(w http.ResponseWriter, r *syncserver.Request) {
	def, ok := s.arangoDefined(w, r, r.PathValue("name"))
	if !ok {
		return
	}
	rev, err := s.CollectionRevision(r.DB, def.Name)
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	d := s.arangoDescribe(r.DB, def)
	d["revision"] = rev
	syncserver.WriteJSON(w, http.StatusOK, d)
}

func (s *door) arangoSetProperties(w http.ResponseWriter, r *syncserver.Request) {
	def, ok := s.arangoDefined(w, r, r.PathValue("name"))
	if !ok {
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.Data, &m); err != nil {
		s.arangoFail(w, syncserver.BadRequest("properties: malformed body: %v", err))
		return
	}
	var p arangoProps
	for k, v := range m {
		switch k {
		case "waitForSync":
			if json.Unmarshal(v, &p.WaitForSync) != nil {
				s.arangoFail(w, syncserver.BadRequest("waitForSync must be true or false"))
				return
			}
		case "replicationFactor", "writeConcern", "minReplicationFactor":
			// A single server has no replicas to set.
		default:
			s.arangoFail(w, syncserver.BadRequest("properties: %s cannot be changed here (waitForSync can; see docs/http.md)", syncserver.Quote(syncserver.Truncate(k, 40))))
			return
		}
	}
	if err := syncserver.NeedRole(r.Context(), auth.Write, "changing a collection's properties"); err != nil {
		s.arangoFail(w, err)
		return
	}
	if _, ok := m["waitForSync"]; ok {
		if err := s.SetCollectionProps(r.Context(), r.DB, def.Name, p); err != nil {
			s.arangoFail(w, err)
			return
		}
	}
	syncserver.WriteJSON(w, http.StatusOK, s.arangoDescribe(r.DB, def))
}

func (s *door) arangoTruncate(w http.ResponseWriter, r *syncserver.Request) {
	def, ok := s.arangoDefined(w, r, r.PathValue("name"))
	if !ok {
		return
	}
	if _, err := s.RemoveDocs(r.Context(), r.DB, def.Name+"/"); err != nil {
		s.arangoFail(w, err)
		return
	}
	syncserver.WriteJSON(w, http.StatusOK, s.arangoDescribe(r.DB, def))
}

func (s *door) arangoDrop(w http.ResponseWriter, r *syncserver.Request) {
	if err := arangoParams(r, "isSystem"); err != nil {
		s.arangoFail(w, err)
		return
	}
	def, ok := s.arangoDefined(w, r, r.PathValue("name"))
	if !ok {
		return
	}
	if err := syncserver.NeedRole(r.Context(), auth.Write, "dropping collections"); err != nil {
		s.arangoFail(w, err)
		return
	}
	if err := s.DropCollection(r.Context(), r.DB, def.Name); err != nil {
		s.arangoFail(w, err)
		return
	}
	syncserver.WriteJSON(w, http.StatusOK, map[string]any{"error": false, "code": 200, "id": def.Name})
}

func (s *door) arangoRename(w http.ResponseWriter, r *syncserver.Request) {
	def, ok := s.arangoDefined(w, r, r.PathValue("name"))
	if !ok {
		return
	}
	var req struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(r.Data, &req); err != nil {
		s.arangoFail(w, syncserver.BadRequest("rename: malformed body: %v", err))
		return
	}
	to, err := syncserver.ParseCollectionDef(req.Name, nil)
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	if err := syncserver.NeedRole(r.Context(), auth.Write, "renaming collections"); err != nil {
		s.arangoFail(w, err)
		return
	}
	if n, err := s.CountDocs(r.DB, def.Name+"/", nil); err != nil || n > 0 {
		if err == nil {
			err = syncserver.BadRequest("rename: collection %s holds documents, whose ids hold its name; only an empty collection is renamed", syncserver.Quote(def.Name))
		}
		s.arangoFail(w, err)
		return
	}
	moved, err := s.RenameCollection(r.Context(), r.DB, def, to.Name)
	if errors.Is(err, syncserver.ErrCollectionExists) {
		arangoError(w, errcode.DuplicateName, "duplicate name: collection "+syncserver.Quote(to.Name)+" exists")
		return
	}
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	syncserver.WriteJSON(w, http.StatusOK, s.arangoDescribe(r.DB, moved))
}

// maxDatabases bounds the databases listed.
const maxDatabases = 100000

// arangoDBExists reports whether db was created (the default always is).
func (s *door) arangoDBExists(db string) bool {
	return db == arangoDefaultDB || s.DatabaseExists(db)
}

// arangoDBName is db as ArangoDB's clients name it.
func arangoDBName(db string) string {
	if db == arangoDefaultDB {
		return "_system"
	}
	return db
}

func (s *door) arangoCurrentDB(w http.ResponseWriter, r *syncserver.Request) {
	if !s.arangoDBExists(r.DB) {
		arangoError(w, errcode.DatabaseNotFound, "database not found: "+r.DB)
		return
	}
	syncserver.WriteJSON(w, http.StatusOK, map[string]any{"error": false, "code": 200, "result": map[string]any{
		"name": arangoDBName(r.DB), "id": arangoDBName(r.DB), "path": "", "isSystem": r.DB == arangoDefaultDB,
	}})
}

func (s *door) arangoListDBs(w http.ResponseWriter, r *syncserver.Request) {
	dbs, err := s.Databases(maxDatabases + 1)
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	names := []string{"_system"}
	for _, db := range dbs {
		if db != arangoDefaultDB && len(names) < maxDatabases {
			names = append(names, db)
		}
	}
	sort.Strings(names[1:])
	syncserver.WriteJSON(w, http.StatusOK, map[string]any{"error": false, "code": 200, "result": names})
}

func (s *door) arangoCreateDB(w http.ResponseWriter, r *syncserver.Request) {
	var req struct {
		Name    string          `json:"name"`
		Options json.RawMessage `json:"options"`
		Users   json.RawMessage `json:"users"`
	}
	dec := json.NewDecoder(strings.NewReader(string(r.Data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.arangoFail(w, syncserver.BadRequest("database: malformed body (name, options, users): %v", err))
		return
	}
	if len(req.Users) > 0 && string(req.Users) != "null" && string(req.Users) != "[]" {
		s.arangoFail(w, syncserver.BadRequest("database: users are not served (hilodb's tokens grant databases; see docs/operations.md)"))
		return
	}
	if !storage.ValidDBName(req.Name) {
		arangoError(w, errcode.IllegalName, "illegal database name "+syncserver.Quote(syncserver.Truncate(req.Name, 80))+": want a letter, then letters, digits, _ or -, at most 64 bytes")
		return
	}
	if err := syncserver.NeedRole(r.Context(), auth.Admin, "creating databases"); err != nil {
		s.arangoFail(w, err)
		return
	}
	if s.arangoDBExists(req.Name) {
		arangoError(w, errcode.DuplicateName, "duplicate database name "+syncserver.Quote(req.Name))
		return
	}
	if err := s.CreateDatabase(r.Context(), req.Name); err != nil {
		s.arangoFail(w, err)
		return
	}
	syncserver.WriteJSON(w, http.StatusCreated, map[string]any{"error": false, "code": 201, "result": true})
}

func (s *door) arangoDropDB(w http.ResponseWriter, r *syncserver.Request) {
	name := r.PathValue("name")
	if name == "_system" || name == arangoDefaultDB {
		arangoError(w, errcode.Forbidden, "the _system database cannot be dropped")
		return
	}
	if !storage.ValidDBName(name) || !s.arangoDBExists(name) {
		arangoError(w, errcode.DatabaseNotFound, "database not found: "+syncserver.Truncate(name, 80))
		return
	}
	if err := syncserver.NeedRole(r.Context(), auth.Admin, "dropping databases"); err != nil {
		s.arangoFail(w, err)
		return
	}
	if err := s.DropDatabase(r.Context(), name); err != nil {
		s.arangoFail(w, err)
		return
	}
	syncserver.WriteJSON(w, http.StatusOK, map[string]any{"error": false, "code": 200, "result": true})
}

// arangoCollection is a collection's description as ArangoDB gives it.
func arangoCollection(def syncserver.CollectionDef) map[string]any {
	ko := map[string]any{"type": "traditional", "allowUserKeys": true}
	if def.KeyOptions.Type != "" {
		ko["type"] = def.KeyOptions.Type
	}
	if def.KeyOptions.AllowUserKeys != nil {
		ko["allowUserKeys"] = *def.KeyOptions.AllowUserKeys
	}
	if def.KeyOptions.Increment != nil {
		ko["increment"] = *def.KeyOptions.Increment
	}
	if def.KeyOptions.Offset != nil {
		ko["offset"] = *def.KeyOptions.Offset
	}
	return map[string]any{
		"error": false, "code": 200, "id": def.Name, "name": def.Name, "globallyUniqueId": def.Name,
		"status": 3, "type": 2, "isSystem": false, "waitForSync": false, "keyOptions": ko,
	}
}

// arangoCollectionFields are the members of a collection's creation body
// that hilodb takes: its own, and those a single server has no use for
// (sharding and replication; every write is synced before it is answered).
// Any other (a schema, computed values, …) is refused, never ignored.
var arangoCollectionFields = map[string]bool{
	"name": true, "type": true, "keyOptions": true, "waitForSync": true, "isSystem": true,
	"numberOfShards": true, "replicationFactor": true, "writeConcern": true, "minReplicationFactor": true,
	"shardKeys": true, "shardingStrategy": true,
}

func (s *door) arangoCreateCollection(w http.ResponseWriter, r *syncserver.Request) {
	var req struct {
		Name       string          `json:"name"`
		KeyOptions json.RawMessage `json:"keyOptions"`
		Type       *int            `json:"type"`
		IsSystem   bool            `json:"isSystem"`
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(r.Data, &fields); err != nil {
		s.arangoFail(w, syncserver.BadRequest("collection: malformed body: %v", err))
		return
	}
	for k := range fields {
		if !arangoCollectionFields[k] {
			s.arangoFail(w, syncserver.BadRequest("collection: the property %s is not served (see docs/http.md)", syncserver.Quote(syncserver.Truncate(k, 40))))
			return
		}
	}
	if err := arangoParams(r, "waitForSyncReplication", "enforceReplicationFactor"); err != nil {
		s.arangoFail(w, err)
		return
	}
	if err := json.Unmarshal(r.Data, &req); err != nil {
		s.arangoFail(w, syncserver.BadRequest("collection: malformed body: %v", err))
		return
	}
	if req.IsSystem {
		s.arangoFail(w, syncserver.BadRequest("collection: system collections are not served"))
		return
	}
	if req.Type != nil && *req.Type != 2 {
		s.arangoFail(w, syncserver.BadRequest("collection: only document collections (type 2) are served"))
		return
	}
	ko := req.KeyOptions
	if len(ko) > 0 {
		// ArangoDB's keyOptions carry members hilodb's have no use for.
		var m map[string]json.RawMessage
		if err := json.Unmarshal(ko, &m); err != nil {
			s.arangoFail(w, &syncserver.DocError{Code: errcode.InvalidKeyGenerator, Msg: "keyOptions must be an object"})
			return
		}
		delete(m, "lastValue")
		ko, _ = json.Marshal(m)
	}
	// ArangoDB's keys are traditional unless keyOptions say otherwise
	// (hilodb's own API keeps its HiLo default).
	ko = withDefaultKeyType(ko)
	def, err := syncserver.ParseCollectionDef(req.Name, ko)
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	got, created, err := s.DefineCollection(r.Context(), r.DB, def)
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	if !created {
		arangoError(w, errcode.DuplicateName, "duplicate name: collection "+syncserver.Quote(req.Name)+" exists")
		return
	}
	syncserver.WriteJSON(w, http.StatusOK, arangoCollection(got))
}

func (s *door) arangoListCollections(w http.ResponseWriter, r *syncserver.Request) {
	defs, err := s.Collections(r.DB)
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	out := make([]map[string]any, len(defs))
	for i, d := range defs {
		out[i] = arangoCollection(d)
	}
	syncserver.WriteJSON(w, http.StatusOK, map[string]any{"error": false, "code": 200, "result": out})
}

// validCollection checks a collection name from a path.
func validCollection(name string) error {
	if _, err := syncserver.ParseCollectionDef(name, nil); err != nil {
		return err
	}
	return nil
}
