package syncserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/hilodb/hilodb/syncserver/storage"
)

// Collections and databases as wholes, for the HTTP doors: a collection
// found by its definition or its documents, its newest revision, its
// door properties, truncate, drop and rename (of an empty collection: a
// document's id holds its collection's name); databases listed, created
// and dropped (its documents removed as any remove is, so replicas learn
// of it; its definitions deleted; its HiLo counters stay, so no id is
// handed out twice).

// propPrefix holds the properties a door keeps for a collection (the
// ArangoDB door's waitForSync): arangoprop/<db>/<collection> → JSON, the
// key the first data files have.
const propPrefix = "arangoprop/"

func propKey(db, coll string) string { return propPrefix + db + "/" + coll }

// ErrCollectionExists refuses a rename onto a defined collection.
var ErrCollectionExists = errors.New("collection exists")

// removeBatch is how many documents one step of RemoveDocs removes.
const removeBatch = 1000

// RemoveDocs removes db's live documents whose ids start with idPrefix,
// removeBatch at a time; it returns how many it removed.
func (s *Server) RemoveDocs(ctx context.Context, db, idPrefix string) (int, error) {
	n := 0
	for {
		var ids []string
		err := s.scanRecords(db, idPrefix, func(id string, rec *storage.Record) bool {
			if !rec.Deleted && len(rec.Doc) > 0 {
				ids = append(ids, id)
			}
			return len(ids) < removeBatch
		})
		if err != nil || len(ids) == 0 {
			return n, err
		}
		ws := make([]DocWrite, len(ids))
		for i, id := range ids {
			ws[i] = DocWrite{ID: id, Make: func(cur *StoredDoc) (json.RawMessage, bool, error) {
				return nil, cur != nil, nil
			}}
		}
		res, err := s.WriteDocs(ctx, db, ws, false)
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

// CollectionOf returns coll's definition in db, and whether the
// collection exists: defined, or holding documents that hilodb's own API
// wrote (an implicit collection, with hilodb's default keys).
func (s *Server) CollectionOf(db, coll string) (CollectionDef, bool, error) {
	defs, err := s.Collections(db)
	if err != nil {
		return CollectionDef{}, false, err
	}
	for _, d := range defs {
		if d.Name == coll {
			return d, true, nil
		}
	}
	found := false
	lo := storage.DocKey(db, coll+"/")
	err = s.store.View(func(tx storage.Tx) error {
		return tx.AscendRange("", lo, lo+"\xff", func(_, _ string) bool {
			found = true
			return false
		})
	})
	return CollectionDef{Name: coll}, found, err
}

// CollectionRevision is the newest _rev of coll's documents, tombstones
// included ("0" when it has none).
func (s *Server) CollectionRevision(db, coll string) (string, error) {
	rev := "0"
	err := s.scanRecords(db, coll+"/", func(_ string, rec *storage.Record) bool {
		rev = max(rev, rec.Rev)
		return true
	})
	return rev, err
}

// scanRecords visits the records (tombstones too) of db's documents whose
// ids start with idPrefix, in id order, in one read transaction, until
// visit returns false.
func (s *Server) scanRecords(db, idPrefix string, visit func(id string, rec *storage.Record) bool) error {
	lo := storage.DocKey(db, idPrefix)
	return s.store.View(func(tx storage.Tx) error {
		var derr error
		tx.AscendRange("", lo, lo+"\xff", func(k, v string) bool {
			rec, err := storage.DecodeStored(k, v)
			if err != nil {
				derr = err
				return false
			}
			return visit(k[len(lo)-len(idPrefix):], &rec)
		})
		return derr
	})
}

// CollectionProps reads coll's door properties into v; absent ones leave
// it as it is.
func (s *Server) CollectionProps(db, coll string, v any) error {
	return s.store.View(func(tx storage.Tx) error {
		_, err := storage.GetJSON(tx, propKey(db, coll), v)
		return err
	})
}

// SetCollectionProps stores v as coll's door properties.
func (s *Server) SetCollectionProps(ctx context.Context, db, coll string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.store.Update(ctx, func(tx storage.Tx) error {
		_, _, err := tx.Set(propKey(db, coll), string(b), nil)
		return err
	})
}

// DropCollection removes coll's documents, then its definition, index
// definitions and door properties.
func (s *Server) DropCollection(ctx context.Context, db, coll string) error {
	if _, err := s.RemoveDocs(ctx, db, coll+"/"); err != nil {
		return err
	}
	return s.store.Update(ctx, func(tx storage.Tx) error {
		var keys []string
		ix := ixDefPrefix + db + "/" + coll + "/"
		tx.AscendRange("", ix, ix+"\xff", func(k, _ string) bool {
			keys = append(keys, k)
			return true
		})
		keys = append(keys, colDefKey(db, coll), propKey(db, coll))
		for _, k := range keys {
			_, _ = tx.Delete(k)
		}
		return nil
	})
}

// RenameCollection gives the empty collection def the name to, with its
// index definitions and door properties; it fails with
// ErrCollectionExists when to is defined. It returns def renamed.
func (s *Server) RenameCollection(ctx context.Context, db string, def CollectionDef, to string) (CollectionDef, error) {
	moved := def
	moved.Name = to
	b, _ := json.Marshal(moved)
	err := s.store.Update(ctx, func(tx storage.Tx) error {
		if _, err := tx.Get(colDefKey(db, to)); err == nil {
			return ErrCollectionExists
		}
		ix := ixDefPrefix + db + "/" + def.Name + "/"
		moves := map[string]string{}
		tx.AscendRange("", ix, ix+"\xff", func(k, v string) bool {
			moves[ixDefPrefix+db+"/"+to+"/"+strings.TrimPrefix(k, ix)] = v
			return true
		})
		if v, err := tx.Get(propKey(db, def.Name)); err == nil {
			moves[propKey(db, to)] = v
		}
		moves[colDefKey(db, to)] = string(b)
		for _, k := range []string{colDefKey(db, def.Name), propKey(db, def.Name)} {
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
	return moved, err
}

// DropIndex deletes the definition of coll's index name.
func (s *Server) DropIndex(ctx context.Context, db, coll, name string) error {
	return s.store.Update(ctx, func(tx storage.Tx) error {
		_, _ = tx.Delete(ixDefKey(db, coll, name))
		return nil
	})
}

// DatabaseExists reports whether db was used or created.
func (s *Server) DatabaseExists(db string) bool {
	found := false
	_ = s.store.View(func(tx storage.Tx) error {
		_, err := tx.Get(storage.DBPrefix + db)
		found = err == nil
		return nil
	})
	return found
}

// Databases lists the databases used or created, in name order, up to
// max of them.
func (s *Server) Databases(max int) ([]string, error) {
	var names []string
	err := s.store.View(func(tx storage.Tx) error {
		tx.AscendRange("", storage.DBPrefix, storage.DBPrefix+"\xff", func(k, _ string) bool {
			names = append(names, strings.TrimPrefix(k, storage.DBPrefix))
			return len(names) < max
		})
		return nil
	})
	return names, err
}

// CreateDatabase records db as existing.
func (s *Server) CreateDatabase(ctx context.Context, db string) error { return s.touchDB(ctx, db) }

// DropDatabase removes db's documents, then its collection, index and
// door definitions and the database itself. Its HiLo counters and
// identities stay, so no id is handed out twice.
func (s *Server) DropDatabase(ctx context.Context, db string) error {
	if _, err := s.RemoveDocs(ctx, db, ""); err != nil {
		return err
	}
	return s.store.Update(ctx, func(tx storage.Tx) error {
		var keys []string
		for _, p := range []string{colDefPrefix + db + "/", ixDefPrefix + db + "/", propPrefix + db + "/"} {
			tx.AscendRange("", p, p+"\xff", func(k, _ string) bool {
				keys = append(keys, k)
				return true
			})
		}
		keys = append(keys, storage.DBPrefix+db)
		for _, k := range keys {
			_, _ = tx.Delete(k)
		}
		return nil
	})
}

// ScanDocs visits db's live documents whose ids start with idPrefix, in
// id order, in one read transaction, until visit returns false.
func (s *Server) ScanDocs(db, idPrefix string, visit func(id string, doc json.RawMessage) bool) error {
	return s.scanRecords(db, idPrefix, func(id string, rec *storage.Record) bool {
		if rec.Deleted || len(rec.Doc) == 0 {
			return true
		}
		return visit(id, rec.Doc)
	})
}
