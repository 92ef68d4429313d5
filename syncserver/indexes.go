package syncserver

import (
	"slices"

	"github.com/hilodb/hilodb/auth"
	"github.com/hilodb/hilodb/syncserver/storage"

	"context"
	"encoding/json"
	"strings"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/errcode"
)

// Index definitions kept per database, so that every client of a database
// builds the same secondary indexes (docs/protocol.md, index.define). As
// with collections, the first definition of a name wins; a definition with
// the fields of an existing index gets that index back. The indexes
// themselves are built by each replica from its own documents.

const ixDefPrefix = "ixdef/" // ixdef/<db>/<collection>/<name> → core.IndexDef JSON

// maxIndexDefs bounds the index definitions of one database, so index.list
// stays a bounded reply.
const maxIndexDefs = 4096

func ixDefKey(db, coll, name string) string { return ixDefPrefix + db + "/" + coll + "/" + name }

func init() {
	registerOp("index.define", (*conn).indexDefine)
	registerOp("index.drop", (*conn).indexDrop)
	registerOp("index.list", (*conn).indexList)
}

type indexDefineReq struct {
	Collection string        `json:"collection"`
	Index      core.IndexDef `json:"index"`
}

type indexDefineReply struct {
	ID      int64         `json:"id"`
	OK      bool          `json:"ok"`
	Index   core.IndexDef `json:"index"`
	Created bool          `json:"created"`
}

type indexDropReq struct {
	Collection string `json:"collection"`
	Name       string `json:"name"`
}

type indexDropReply struct {
	ID      int64 `json:"id"`
	OK      bool  `json:"ok"`
	Dropped bool  `json:"dropped"`
}

type indexListReply struct {
	ID      int64                    `json:"id"`
	OK      bool                     `json:"ok"`
	Indexes []core.CollectionIndexes `json:"indexes"`
}

func badQuery(msg string) error {
	return &protoError{code: errcode.BadQuery.Name, num: errcode.BadQuery.Num, msg: msg}
}

// CheckIndexDef validates a collection name and an index definition as
// core does.
func CheckIndexDef(coll string, def *core.IndexDef) error {
	if err := core.ValidateCollectionName(coll); err != nil {
		return &protoError{code: errcode.IllegalName.Name, num: errcode.IllegalName.Num, msg: err.Error()}
	}
	if err := core.CheckIndexDef(def); err != nil {
		return badQuery(err.Error())
	}
	return nil
}

func (c *conn) indexDefine(ctx context.Context, id int64, data []byte) (any, error) {
	var req indexDefineReq
	if err := decode(data, &req); err != nil {
		return nil, err
	}
	if err := CheckIndexDef(req.Collection, &req.Index); err != nil {
		return nil, err
	}
	got, created, err := c.srv.DefineIndex(ctx, c.db, req.Collection, req.Index)
	if err != nil {
		return nil, err
	}
	return indexDefineReply{ID: id, OK: true, Index: got, Created: created}, nil
}

func (c *conn) indexDrop(ctx context.Context, id int64, data []byte) (any, error) {
	var req indexDropReq
	if err := decode(data, &req); err != nil {
		return nil, err
	}
	def := core.IndexDef{Name: req.Name, Fields: []string{"_id"}}
	if err := CheckIndexDef(req.Collection, &def); err != nil || req.Name == "" {
		if err == nil {
			err = badQuery("index.drop needs the index's name")
		}
		return nil, err
	}
	if err := NeedRole(ctx, auth.Write, "dropping indexes"); err != nil {
		return nil, err
	}
	dropped := false
	err := c.srv.store.Update(ctx, func(tx storage.Tx) error {
		_, err := tx.Delete(ixDefKey(c.db, req.Collection, req.Name))
		dropped = err == nil
		return nil
	})
	if err != nil {
		return nil, err
	}
	return indexDropReply{ID: id, OK: true, Dropped: dropped}, nil
}

func (c *conn) indexList(ctx context.Context, id int64, data []byte) (any, error) {
	list, err := c.srv.Indexes(c.db)
	if err != nil {
		return nil, err
	}
	return indexListReply{ID: id, OK: true, Indexes: list}, nil
}

// DefineIndex keeps def for db's collection coll unless an index of its
// name or of its fields exists; it returns the kept definition and whether
// this call made it.
func (s *Server) DefineIndex(ctx context.Context, db, coll string, def core.IndexDef) (core.IndexDef, bool, error) {
	if err := NeedRole(ctx, auth.Write, "defining indexes"); err != nil {
		return def, false, err
	}
	b, err := json.Marshal(def)
	if err != nil {
		return def, false, err
	}
	var (
		kept    = def
		created bool
	)
	err = s.store.Update(ctx, func(tx storage.Tx) error {
		kept, created = def, false
		prefix := ixDefPrefix + db + "/" + coll + "/"
		n := 0
		var found, derr error
		tx.AscendRange("", prefix, prefix+"\xff", func(_, v string) bool {
			n++
			var d core.IndexDef
			if derr = json.Unmarshal([]byte(v), &d); derr != nil {
				return false
			}
			if d.Name == def.Name || slices.Equal(d.Fields, def.Fields) {
				kept, found = d, errFound
				return false
			}
			return true
		})
		if derr != nil || found != nil {
			return derr
		}
		if n >= core.MaxIndexes {
			return badQuery("collection " + Quote(coll) + " has the most indexes it may")
		}
		total := 0
		all := ixDefPrefix + db + "/"
		tx.AscendRange("", all, all+"\xff", func(_, _ string) bool {
			total++
			return total < maxIndexDefs
		})
		if total >= maxIndexDefs {
			return badQuery("database " + Quote(db) + " has the most index definitions it keeps")
		}
		created = true
		_, _, err := tx.Set(ixDefKey(db, coll, def.Name), string(b), nil)
		return err
	})
	if err != nil {
		return core.IndexDef{}, false, err
	}
	return kept, created, nil
}

// errFound ends a walk that found what it looked for.
var errFound = errorString("found")

type errorString string

func (e errorString) Error() string { return string(e) }

// Indexes returns db's index definitions by collection, then name.
func (s *Server) Indexes(db string) ([]core.CollectionIndexes, error) {
	out := []core.CollectionIndexes{}
	err := s.store.View(func(tx storage.Tx) error {
		var derr error
		prefix := ixDefPrefix + db + "/"
		tx.AscendRange("", prefix, prefix+"\xff", func(key, value string) bool {
			var d core.IndexDef
			if derr = json.Unmarshal([]byte(value), &d); derr != nil {
				return false
			}
			coll, _, _ := strings.Cut(strings.TrimPrefix(key, prefix), "/")
			if n := len(out); n == 0 || out[n-1].Collection != coll {
				out = append(out, core.CollectionIndexes{Collection: coll})
			}
			out[len(out)-1].Indexes = append(out[len(out)-1].Indexes, d)
			return true
		})
		return derr
	})
	return out, err
}
