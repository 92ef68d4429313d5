package arangodoor

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/hilodb/hilodb/auth"
	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/syncserver"
)

// ArangoDB's /_api/index over hilodb's index definitions (the ones
// index.define, index.list and index.drop keep for the websocket's
// clients): a persistent, non-unique, non-sparse index on fields is a
// hilodb index of those fields, named as ArangoDB names it or after its
// fields; its id is "collection/name". Every collection also lists its
// primary index on _key, as ArangoDB's do. Other kinds answer at once with
// 400.

// arangoIndex is a hilodb index as ArangoDB describes it.
func arangoIndex(coll string, def core.IndexDef) map[string]any {
	return map[string]any{
		"id": coll + "/" + def.Name, "name": def.Name, "type": "persistent", "fields": def.Fields,
		"unique": false, "sparse": false, "deduplicate": true, "estimates": true, "cacheEnabled": false,
	}
}

func arangoPrimary(coll string) map[string]any {
	return map[string]any{"id": coll + "/0", "name": "primary", "type": "primary", "fields": []string{"_key"},
		"unique": true, "sparse": false, "selectivityEstimate": 1}
}

// arangoIndexDefs returns coll's hilodb index definitions.
func (s *door) arangoIndexDefs(db, coll string) ([]core.IndexDef, error) {
	all, err := s.Indexes(db)
	if err != nil {
		return nil, err
	}
	for _, c := range all {
		if c.Collection == coll {
			return c.Indexes, nil
		}
	}
	return nil, nil
}

func (s *door) arangoListIndexes(w http.ResponseWriter, r *syncserver.Request) {
	if err := arangoParams(r, "collection", "withStats", "withHidden"); err != nil {
		s.arangoFail(w, err)
		return
	}
	def, ok := s.arangoDefined(w, r, r.URL.Query().Get("collection"))
	if !ok {
		return
	}
	defs, err := s.arangoIndexDefs(r.DB, def.Name)
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	list := []map[string]any{arangoPrimary(def.Name)}
	ids := map[string]any{def.Name + "/0": list[0]}
	for _, d := range defs {
		x := arangoIndex(def.Name, d)
		list = append(list, x)
		ids[x["id"].(string)] = x
	}
	syncserver.WriteJSON(w, http.StatusOK, map[string]any{"error": false, "code": 200, "indexes": list, "identifiers": ids})
}

// arangoIndexFields are the members of an index's creation body served;
// those that change nothing for hilodb's indexes are accepted as well.
var arangoIndexFields = map[string]bool{
	"type": true, "fields": true, "name": true, "unique": true, "sparse": true, "deduplicate": true,
	"estimates": true, "inBackground": true, "cacheEnabled": true, "parallelism": true,
}

func (s *door) arangoCreateIndex(w http.ResponseWriter, r *syncserver.Request) {
	if err := arangoParams(r, "collection"); err != nil {
		s.arangoFail(w, err)
		return
	}
	def, ok := s.arangoDefined(w, r, r.URL.Query().Get("collection"))
	if !ok {
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.Data, &m); err != nil {
		s.arangoFail(w, syncserver.BadRequest("index: malformed body: %v", err))
		return
	}
	var req struct {
		Type   string   `json:"type"`
		Fields []string `json:"fields"`
		Name   string   `json:"name"`
		Unique bool     `json:"unique"`
		Sparse bool     `json:"sparse"`
	}
	if err := json.Unmarshal(r.Data, &req); err != nil {
		s.arangoFail(w, syncserver.BadRequest("index: malformed body: %v", err))
		return
	}
	switch req.Type {
	case "persistent", "hash", "skiplist":
	default:
		arangoError(w, errcode.BadParameter, "index type "+syncserver.Quote(syncserver.Truncate(req.Type, 40))+" is not served: hilodb's indexes are persistent indexes on fields (see docs/http.md)")
		return
	}
	for k := range m {
		if !arangoIndexFields[k] {
			arangoError(w, errcode.BadParameter, "index: the property "+syncserver.Quote(syncserver.Truncate(k, 40))+" is not served (see docs/http.md)")
			return
		}
	}
	if req.Unique || req.Sparse {
		arangoError(w, errcode.BadParameter, "index: unique and sparse indexes are not served; hilodb's indexes order every document")
		return
	}
	ix := core.IndexDef{Name: req.Name, Fields: req.Fields}
	if err := syncserver.CheckIndexDef(def.Name, &ix); err != nil {
		s.arangoFail(w, err)
		return
	}
	if err := syncserver.NeedRole(r.Context(), auth.Write, "defining indexes"); err != nil {
		s.arangoFail(w, err)
		return
	}
	got, created, err := s.DefineIndex(r.Context(), r.DB, def.Name, ix)
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	if !slices.Equal(got.Fields, ix.Fields) {
		arangoError(w, errcode.DuplicateName, "duplicate value: an index named "+syncserver.Quote(got.Name)+" exists on other fields")
		return
	}
	out := arangoIndex(def.Name, got)
	out["isNewlyCreated"] = created
	out["error"], out["code"] = false, http.StatusOK
	status := http.StatusOK
	if created {
		status, out["code"] = http.StatusCreated, http.StatusCreated
	}
	syncserver.WriteJSON(w, status, out)
}

// arangoIndexOf finds the index {coll}/{name} of the path; ok is false
// once it has answered 404.
func (s *door) arangoIndexOf(w http.ResponseWriter, r *syncserver.Request) (coll string, ix map[string]any, ok bool) {
	def, ok := s.arangoDefined(w, r, r.PathValue("coll"))
	if !ok {
		return "", nil, false
	}
	name := r.PathValue("name")
	if name == "0" || name == "primary" {
		return def.Name, arangoPrimary(def.Name), true
	}
	defs, err := s.arangoIndexDefs(r.DB, def.Name)
	if err != nil {
		s.arangoFail(w, err)
		return "", nil, false
	}
	for _, d := range defs {
		if d.Name == name {
			return def.Name, arangoIndex(def.Name, d), true
		}
	}
	arangoError(w, errcode.IndexNotFound, "index not found: "+def.Name+"/"+syncserver.Truncate(name, 80))
	return "", nil, false
}

func (s *door) arangoGetIndex(w http.ResponseWriter, r *syncserver.Request) {
	if _, ix, ok := s.arangoIndexOf(w, r); ok {
		ix["error"], ix["code"] = false, 200
		syncserver.WriteJSON(w, http.StatusOK, ix)
	}
}

func (s *door) arangoDropIndex(w http.ResponseWriter, r *syncserver.Request) {
	coll, ix, ok := s.arangoIndexOf(w, r)
	if !ok {
		return
	}
	if ix["type"] == "primary" {
		arangoError(w, errcode.Forbidden, "the primary index cannot be dropped")
		return
	}
	if err := syncserver.NeedRole(r.Context(), auth.Write, "dropping indexes"); err != nil {
		s.arangoFail(w, err)
		return
	}
	if err := s.DropIndex(r.Context(), r.DB, coll, ix["name"].(string)); err != nil {
		s.arangoFail(w, err)
		return
	}
	syncserver.WriteJSON(w, http.StatusOK, map[string]any{"error": false, "code": 200, "id": ix["id"]})
}
