package syncserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/naming"
	"github.com/hilodb/hilodb/core/query"
	"github.com/hilodb/hilodb/syncserver/storage"
)

// Indexes for the server's queries. On the embedded buntdb store the
// server keeps, per database, the indexes its clients defined
// (index.define) in memory, as every replica does: built from a scan of
// the collection when a query first needs one, then brought up to date
// from the database's change feed (the documents written since) at the
// start of each query that reads it, inside the query's own read
// transaction, so an index always matches what the query reads. On etcd
// a query scans the collection (docs/queries.md says what that costs).

// dbIndexes is one database's query indexes.
type dbIndexes struct {
	mu   sync.Mutex
	seq  int64       // the feed sequence the indexes are up to date with
	list []*srvIndex // built ones
}

// srvIndex is one index the server built.
type srvIndex struct {
	coll, name, fields string // fields joined, to tell a redefinition
	idPfx              string
	ix                 *query.Index
	keys               map[string]string // id → entry key
}

// queryIndexes holds every database's.
type queryIndexes struct {
	mu  sync.Mutex
	dbs map[string]*dbIndexes
}

func (q *queryIndexes) of(db string) *dbIndexes {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.dbs == nil {
		q.dbs = map[string]*dbIndexes{}
	}
	d := q.dbs[db]
	if d == nil {
		d = &dbIndexes{}
		q.dbs[db] = d
	}
	return d
}

// collectionOf returns the collection whose ids start with idPfx under
// the default conventions ("orders/" → "orders").
func idPrefixOf(coll string) string { return naming.Default().IDPrefix(coll) + "/" }

// planIndexed picks, for a query over the documents of idPfx, the best of
// db's index definitions; ok is false when none helps. Called inside tx.
func (s *Server) planIndexed(tx storage.Tx, d *dbIndexes, db, idPfx string, q *query.Query) (*srvIndex, query.IndexPlan, bool, error) {
	defs, err := indexDefsOf(tx, db)
	if err != nil {
		return nil, query.IndexPlan{}, false, err
	}
	conds := query.CondsByPath(q.Selector)
	var best *core.IndexDef
	var bestColl string
	var bestPlan query.IndexPlan
	bestScore := 0
	for _, c := range defs {
		if idPrefixOf(c.Collection) != idPfx {
			continue
		}
		for i := range c.Indexes {
			def := &c.Indexes[i]
			paths, err := pathsOf(def.Fields)
			if err != nil {
				continue
			}
			pl := query.PlanIndex(paths, conds, q.Sort)
			if sc := pl.Score(len(q.Sort) > 0); sc > bestScore {
				best, bestColl, bestPlan, bestScore = def, c.Collection, pl, sc
			}
		}
	}
	if best == nil {
		return nil, bestPlan, false, nil
	}
	ix, err := s.indexFor(tx, d, db, bestColl, *best)
	if err != nil {
		return nil, bestPlan, false, err
	}
	return ix, bestPlan, true, nil
}

func pathsOf(fields []string) ([]query.Path, error) {
	out := make([]query.Path, len(fields))
	for i, f := range fields {
		p, err := query.ParsePath(f)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

func indexDefsOf(tx storage.Tx, db string) ([]core.CollectionIndexes, error) {
	var out []core.CollectionIndexes
	prefix := ixDefPrefix + db + "/"
	var derr error
	err := tx.AscendRange("", prefix, prefix+"\xff", func(k, v string) bool {
		var d core.IndexDef
		if derr = json.Unmarshal([]byte(v), &d); derr != nil {
			return false
		}
		coll, _, _ := strings.Cut(k[len(prefix):], "/")
		if n := len(out); n == 0 || out[n-1].Collection != coll {
			out = append(out, core.CollectionIndexes{Collection: coll})
		}
		out[len(out)-1].Indexes = append(out[len(out)-1].Indexes, d)
		return true
	})
	if err == nil {
		err = derr
	}
	return out, err
}

// indexFor returns the built index of def, building it (a scan of the
// collection) or bringing it up to date (the feed since) as needed. d.mu
// is held.
func (s *Server) indexFor(tx storage.Tx, d *dbIndexes, db, coll string, def core.IndexDef) (*srvIndex, error) {
	fields := strings.Join(def.Fields, "\x00")
	cur, err := storage.GetInt(tx, storage.SeqCounterKey(db))
	if err != nil {
		return nil, err
	}
	purged, err := storage.GetInt(tx, storage.PurgedKey(db))
	if err != nil {
		return nil, err
	}
	if purged > d.seq || cur < d.seq {
		d.list = nil // tombstones the feed no longer holds, or a restore: build anew
	}
	// Bring the built ones up to date with what was written since.
	if len(d.list) > 0 && cur > d.seq {
		if err := d.catchUp(tx, db, cur); err != nil {
			return nil, err
		}
	}
	for _, x := range d.list {
		if x.coll == coll && x.name == def.Name && x.fields == fields {
			return x, nil
		}
	}
	paths, err := pathsOf(def.Fields)
	if err != nil {
		return nil, err
	}
	x := &srvIndex{coll: coll, name: def.Name, fields: fields, idPfx: idPrefixOf(coll), ix: query.NewIndex(paths), keys: map[string]string{}}
	b := x.ix.Builder()
	lo := storage.DocKey(db, x.idPfx)
	var derr error
	err = tx.AscendRange("", lo, lo+"\xff", func(k, v string) bool {
		rec, err := storage.DecodeStored(k, v)
		if err != nil {
			derr = err
			return false
		}
		if rec.Deleted || len(rec.Doc) == 0 {
			return true
		}
		id := k[len("rdoc/"+db+"/"):]
		b.Add(string(rec.Doc), id)
		x.keys[id] = string(x.ix.AppendKey(nil, string(rec.Doc), id))
		return true
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, fmt.Errorf("build index %s: %w", def.Name, err)
	}
	b.Finish()
	if len(d.list) == 0 {
		d.seq = cur
	}
	d.list = append(d.list, x)
	return x, nil
}

// catchUp applies the documents written after d.seq, up to cur, to the
// built indexes.
func (d *dbIndexes) catchUp(tx storage.Tx, db string, cur int64) error {
	var ids []string
	err := tx.AscendRange("", storage.SeqKey(db, d.seq+1), storage.SeqKey(db, cur)+"\xff", func(_, id string) bool {
		ids = append(ids, id)
		return true
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		rec, found, err := storage.GetRecord(tx, db, id)
		if err != nil {
			return err
		}
		for _, x := range d.list {
			if !strings.HasPrefix(id, x.idPfx) {
				continue
			}
			if old, ok := x.keys[id]; ok {
				x.ix.Delete(old)
				delete(x.keys, id)
			}
			if found && !rec.Deleted && len(rec.Doc) > 0 {
				e := x.ix.Put(string(rec.Doc), id)
				x.keys[id] = e.Key
			}
		}
	}
	d.seq = cur
	return nil
}

// indexedFind runs q through ix inside tx; the page's documents are read
// by id and checked against the whole selector.
func indexedFind(tx storage.Tx, db string, x *srvIndex, pl query.IndexPlan, q *query.Query, pager *query.Pager) error {
	var stop error
	x.ix.Scan(pl.Lo, pl.Hi, pl.Descending, func(e query.Entry) bool {
		if pager.Examined >= ScanLimit {
			stop = errScanLimit
			return false
		}
		rec, found, err := storage.GetRecord(tx, db, e.ID)
		if err != nil {
			stop = err
			return false
		}
		if !found || rec.Deleted || len(rec.Doc) == 0 {
			return true
		}
		if !pager.Add(string(rec.Doc)) {
			stop = pager.Err()
			return false
		}
		return true
	})
	return stop
}
