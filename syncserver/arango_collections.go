package syncserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/hilodb/hilodb/auth"
	"github.com/hilodb/hilodb/errcode"
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

// arangoPropPrefix holds the ArangoDB door's collection properties:
// arangoprop/<db>/<collection> → arangoProps JSON.
const arangoPropPrefix = "arangoprop/"

func arangoPropKey(db, coll string) string { return arangoPropPrefix + db + "/" + coll }

// arangoProps are a collection's properties only ArangoDB's clients see.
type arangoProps struct {
	WaitForSync bool `json:"waitForSync"`
}

// removeBatch is how many documents one step of a truncate removes.
const removeBatch = 1000

// removeDocs removes db's live documents whose ids start with idPrefix,
// removeBatch at a time; it returns how many it removed.
func (s *Server) removeDocs(ctx context.Context, db, idPrefix string) (int, error) {
	n := 0
	for {
		var ids []string
		lo := storage.DocKey(db, idPrefix)
		err := s.store.View(func(tx storage.Tx) error {
			var derr error
			tx.AscendRange("", lo, lo+"\xff", func(k, v string) bool {
				rec, err := storage.DecodeStored(k, v)
				if err != nil {
					derr = err
					return false
				}
				if !rec.Deleted && len(rec.Doc) > 0 {
					ids = append(ids, strings.TrimPrefix(k, storage.DocKey(db, "")))
				}
				return len(ids) < removeBatch
			})
			return derr
		})
		if err != nil || len(ids) == 0 {
			return n, err
		}
		ws := make([]docWrite, len(ids))
		for i, id := range ids {
			ws[i] = docWrite{ID: id, Make: func(cur *storedDoc) (json.RawMessage, bool, error) {
				return nil, cur != nil, nil
			}}
		}
		res, err := s.writeDocs(ctx, db, ws, false)
		if err != nil {
			return n, err
		}
		for _, x := range res {
			if x.Err != nil {
				return n, x.Err
			}
			if x.Deleted {
				n++
			}
		}
	}
}

// arangoDefined returns coll's definition, answering 404/1203 (and false)
// when there is none.
func (s *Server) arangoDefined(w http.ResponseWriter, r *doorRequest, coll string) (CollectionDef, bool) {
	defs, err := s.collections(r.db)
	if err != nil {
		s.arangoFail(w, err)
		return CollectionDef{}, false
	}
	for _, d := range defs {
		if d.Name == coll {
			return d, true
		}
	}
	arangoError(w, errcode.CollectionNotFound, "collection or view not found: "+coll)
	return CollectionDef{}, false
}

// arangoDescribe is a collection's description with its door properties.
func (s *Server) arangoDescribe(db string, def CollectionDef) map[string]any {
	d := arangoCollection(def)
	var p arangoProps
	_ = s.store.View(func(tx storage.Tx) error {
		_, err := storage.GetJSON(tx, arangoPropKey(db, def.Name), &p)
		return err
	})
	d["waitForSync"] = p.WaitForSync
	return d
}

func (s *Server) arangoCollectionInfo(w http.ResponseWriter, r *doorRequest) {
	if def, ok := s.arangoDefined(w, r, r.PathValue("name")); ok {
		writeJSON(w, http.StatusOK, s.arangoDescribe(r.db, def))
	}
}

func (s *Server) arangoCount(w http.ResponseWriter, r *doorRequest) {
	def, ok := s.arangoDefined(w, r, r.PathValue("name"))
	if !ok {
		return
	}
	n, err := s.countDocs(r.db, def.Name+"/", nil)
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	d := s.arangoDescribe(r.db, def)
	d["count"] = n
	writeJSON(w, http.StatusOK, d)
}

// arangoRevision gives the collection's revision: the newest _rev of its
// documents ("0" when it has none).
func (s *Server) arangoRevision(w http.ResponseWriter, r *doorRequest) {
	def, ok := s.arangoDefined(w, r, r.PathValue("name"))
	if !ok {
		return
	}
	rev := "0"
	lo := storage.DocKey(r.db, def.Name+"/")
	err := s.store.View(func(tx storage.Tx) error {
		var derr error
		tx.AscendRange("", lo, lo+"\xff", func(k, v string) bool {
			rec, err := storage.DecodeStored(k, v)
			if err != nil {
				derr = err
				return false
			}
			if rec.Rev > rev {
				rev = rec.Rev
			}
			return true
		})
		return derr
	})
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	d := s.arangoDescribe(r.db, def)
	d["revision"] = rev
	writeJSON(w, http.StatusOK, d)
}

func (s *Server) arangoSetProperties(w http.ResponseWriter, r *doorRequest) {
	def, ok := s.arangoDefined(w, r, r.PathValue("name"))
	if !ok {
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &m); err != nil {
		s.arangoFail(w, badRequest("properties: malformed body: %v", err))
		return
	}
	var p arangoProps
	for k, v := range m {
		switch k {
		case "waitForSync":
			if json.Unmarshal(v, &p.WaitForSync) != nil {
				s.arangoFail(w, badRequest("waitForSync must be true or false"))
				return
			}
		case "replicationFactor", "writeConcern", "minReplicationFactor":
			// A single server has no replicas to set.
		default:
			s.arangoFail(w, badRequest("properties: %s cannot be changed here (waitForSync can; see docs/http.md)", quote(truncate(k, 40))))
			return
		}
	}
	if err := needRole(r.Context(), auth.Write, "changing a collection's properties"); err != nil {
		s.arangoFail(w, err)
		return
	}
	if _, ok := m["waitForSync"]; ok {
		b, _ := json.Marshal(p)
		if err := s.store.Update(r.Context(), func(tx storage.Tx) error {
			_, _, err := tx.Set(arangoPropKey(r.db, def.Name), string(b), nil)
			return err
		}); err != nil {
			s.arangoFail(w, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, s.arangoDescribe(r.db, def))
}

func (s *Server) arangoTruncate(w http.ResponseWriter, r *doorRequest) {
	def, ok := s.arangoDefined(w, r, r.PathValue("name"))
	if !ok {
		return
	}
	if _, err := s.removeDocs(r.Context(), r.db, def.Name+"/"); err != nil {
		s.arangoFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.arangoDescribe(r.db, def))
}

// dropDefinitions deletes coll's definition, index definitions and door
// properties.
func (s *Server) dropDefinitions(ctx context.Context, db, coll string) error {
	return s.store.Update(ctx, func(tx storage.Tx) error {
		var keys []string
		ix := ixDefPrefix + db + "/" + coll + "/"
		tx.AscendRange("", ix, ix+"\xff", func(k, _ string) bool {
			keys = append(keys, k)
			return true
		})
		keys = append(keys, colDefKey(db, coll), arangoPropKey(db, coll))
		for _, k := range keys {
			_, _ = tx.Delete(k)
		}
		return nil
	})
}

func (s *Server) arangoDrop(w http.ResponseWriter, r *doorRequest) {
	if err := arangoParams(r, "isSystem"); err != nil {
		s.arangoFail(w, err)
		return
	}
	def, ok := s.arangoDefined(w, r, r.PathValue("name"))
	if !ok {
		return
	}
	if err := needRole(r.Context(), auth.Write, "dropping collections"); err != nil {
		s.arangoFail(w, err)
		return
	}
	if _, err := s.removeDocs(r.Context(), r.db, def.Name+"/"); err != nil {
		s.arangoFail(w, err)
		return
	}
	if err := s.dropDefinitions(r.Context(), r.db, def.Name); err != nil {
		s.arangoFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"error": false, "code": 200, "id": def.Name})
}

func (s *Server) arangoRename(w http.ResponseWriter, r *doorRequest) {
	def, ok := s.arangoDefined(w, r, r.PathValue("name"))
	if !ok {
		return
	}
	var req struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(r.body, &req); err != nil {
		s.arangoFail(w, badRequest("rename: malformed body: %v", err))
		return
	}
	to, err := parseCollectionDef(req.Name, nil)
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	if err := needRole(r.Context(), auth.Write, "renaming collections"); err != nil {
		s.arangoFail(w, err)
		return
	}
	if n, err := s.countDocs(r.db, def.Name+"/", nil); err != nil || n > 0 {
		if err == nil {
			err = badRequest("rename: collection %s holds documents, whose ids hold its name; only an empty collection is renamed", quote(def.Name))
		}
		s.arangoFail(w, err)
		return
	}
	moved := def
	moved.Name = to.Name
	b, _ := json.Marshal(moved)
	errTaken := errors.New("taken")
	err = s.store.Update(r.Context(), func(tx storage.Tx) error {
		if _, err := tx.Get(colDefKey(r.db, to.Name)); err == nil {
			return errTaken
		}
		ix := ixDefPrefix + r.db + "/" + def.Name + "/"
		moves := map[string]string{}
		tx.AscendRange("", ix, ix+"\xff", func(k, v string) bool {
			moves[ixDefPrefix+r.db+"/"+to.Name+"/"+strings.TrimPrefix(k, ix)] = v
			return true
		})
		if v, err := tx.Get(arangoPropKey(r.db, def.Name)); err == nil {
			moves[arangoPropKey(r.db, to.Name)] = v
		}
		moves[colDefKey(r.db, to.Name)] = string(b)
		for _, k := range []string{colDefKey(r.db, def.Name), arangoPropKey(r.db, def.Name)} {
			_, _ = tx.Delete(k)
		}
		tx.AscendRange("", ix, ix+"\xff", func(k, _ string) bool {
			moves[k] = ""
			return true
		})
		for k, v := range moves {
			if v == "" {
				_, _ = tx.Delete(k)
				continue
			}
			if _, _, err := tx.Set(k, v, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, errTaken) {
		arangoError(w, errcode.DuplicateName, "duplicate name: collection "+quote(to.Name)+" exists")
		return
	}
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.arangoDescribe(r.db, moved))
}

// arangoDBName is db as ArangoDB's clients name it.
func arangoDBName(db string) string {
	if db == arangoDefaultDB {
		return "_system"
	}
	return db
}

// databaseExists reports whether db was created (the default always is).
func (s *Server) databaseExists(db string) bool {
	if db == arangoDefaultDB {
		return true
	}
	found := false
	_ = s.store.View(func(tx storage.Tx) error {
		_, err := tx.Get(storage.DBPrefix + db)
		found = err == nil
		return nil
	})
	return found
}

func (s *Server) arangoCurrentDB(w http.ResponseWriter, r *doorRequest) {
	if !s.databaseExists(r.db) {
		arangoError(w, errcode.DatabaseNotFound, "database not found: "+r.db)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"error": false, "code": 200, "result": map[string]any{
		"name": arangoDBName(r.db), "id": arangoDBName(r.db), "path": "", "isSystem": r.db == arangoDefaultDB,
	}})
}

func (s *Server) arangoListDBs(w http.ResponseWriter, r *doorRequest) {
	names := []string{"_system"}
	err := s.store.View(func(tx storage.Tx) error {
		tx.AscendRange("", storage.DBPrefix, storage.DBPrefix+"\xff", func(k, _ string) bool {
			if db := strings.TrimPrefix(k, storage.DBPrefix); db != arangoDefaultDB {
				names = append(names, db)
			}
			return len(names) < 100000
		})
		return nil
	})
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	sort.Strings(names[1:])
	writeJSON(w, http.StatusOK, map[string]any{"error": false, "code": 200, "result": names})
}

func (s *Server) arangoCreateDB(w http.ResponseWriter, r *doorRequest) {
	var req struct {
		Name    string          `json:"name"`
		Options json.RawMessage `json:"options"`
		Users   json.RawMessage `json:"users"`
	}
	dec := json.NewDecoder(strings.NewReader(string(r.body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.arangoFail(w, badRequest("database: malformed body (name, options, users): %v", err))
		return
	}
	if len(req.Users) > 0 && string(req.Users) != "null" && string(req.Users) != "[]" {
		s.arangoFail(w, badRequest("database: users are not served (hilodb's tokens grant databases; see docs/operations.md)"))
		return
	}
	if !storage.ValidDBName(req.Name) {
		arangoError(w, errcode.IllegalName, "illegal database name "+quote(truncate(req.Name, 80))+": want a letter, then letters, digits, _ or -, at most 64 bytes")
		return
	}
	if err := needRole(r.Context(), auth.Admin, "creating databases"); err != nil {
		s.arangoFail(w, err)
		return
	}
	if s.databaseExists(req.Name) {
		arangoError(w, errcode.DuplicateName, "duplicate database name "+quote(req.Name))
		return
	}
	if err := s.touchDB(r.Context(), req.Name); err != nil {
		s.arangoFail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"error": false, "code": 201, "result": true})
}

func (s *Server) arangoDropDB(w http.ResponseWriter, r *doorRequest) {
	name := r.PathValue("name")
	if name == "_system" || name == arangoDefaultDB {
		arangoError(w, errcode.Forbidden, "the _system database cannot be dropped")
		return
	}
	if !storage.ValidDBName(name) || !s.databaseExists(name) {
		arangoError(w, errcode.DatabaseNotFound, "database not found: "+truncate(name, 80))
		return
	}
	if err := needRole(r.Context(), auth.Admin, "dropping databases"); err != nil {
		s.arangoFail(w, err)
		return
	}
	if _, err := s.removeDocs(r.Context(), name, ""); err != nil {
		s.arangoFail(w, err)
		return
	}
	err := s.store.Update(r.Context(), func(tx storage.Tx) error {
		var keys []string
		for _, p := range []string{colDefPrefix + name + "/", ixDefPrefix + name + "/", arangoPropPrefix + name + "/"} {
			tx.AscendRange("", p, p+"\xff", func(k, _ string) bool {
				keys = append(keys, k)
				return true
			})
		}
		keys = append(keys, storage.DBPrefix+name)
		for _, k := range keys {
			_, _ = tx.Delete(k)
		}
		return nil
	})
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"error": false, "code": 200, "result": true})
}
