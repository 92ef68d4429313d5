package syncserver

import (
	"github.com/hilodb/hilodb/auth"
	"github.com/hilodb/hilodb/core/keygen"
	"github.com/hilodb/hilodb/syncserver/storage"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/errcode"
)

// Collection definitions (ArangoDB's keyOptions) kept per database, so that
// every client of a database makes keys for a collection the same way. The
// first definition of a name wins: later ones get it back, not an error, so
// clients that defined a collection offline converge on the server's.

const colDefPrefix = "coldef/" // coldef/<db>/<name> → CollectionDef JSON

// maxCollections bounds the definitions of one database, so collection.list
// stays a bounded reply.
const maxCollections = 4096

func colDefKey(db, name string) string { return colDefPrefix + db + "/" + name }

// CollectionDef is a collection's definition as the server keeps it and
// sends it: its name and keyOptions.
type CollectionDef struct {
	Name       string         `json:"name"`
	KeyOptions keygen.Options `json:"keyOptions"`
}

func init() {
	registerOp("collection.define", (*conn).collectionDefine)
	registerOp("collection.list", (*conn).collectionList)
}

type collectionDefineReq struct {
	Name       string          `json:"name"`
	KeyOptions json.RawMessage `json:"keyOptions"`
}

type collectionDefineReply struct {
	ID         int64         `json:"id"`
	OK         bool          `json:"ok"`
	Collection CollectionDef `json:"collection"`
	Created    bool          `json:"created"`
}

type collectionListReply struct {
	ID          int64           `json:"id"`
	OK          bool            `json:"ok"`
	Collections []CollectionDef `json:"collections"`
}

func (c *conn) collectionDefine(ctx context.Context, id int64, data []byte) (any, error) {
	var req collectionDefineReq
	if err := decode(data, &req); err != nil {
		return nil, err
	}
	def, err := ParseCollectionDef(req.Name, req.KeyOptions)
	if err != nil {
		return nil, err
	}
	got, created, err := c.srv.DefineCollection(ctx, c.db, def)
	if err != nil {
		return nil, err
	}
	return collectionDefineReply{ID: id, OK: true, Collection: got, Created: created}, nil
}

func (c *conn) collectionList(ctx context.Context, id int64, data []byte) (any, error) {
	defs, err := c.srv.Collections(c.db)
	if err != nil {
		return nil, err
	}
	return collectionListReply{ID: id, OK: true, Collections: defs}, nil
}

// ParseCollectionDef validates a definition as core does (names: 1208,
// keyOptions: 1232), refusing members keyOptions does not have.
func ParseCollectionDef(name string, keyOptions json.RawMessage) (CollectionDef, error) {
	def := CollectionDef{Name: name}
	if err := core.ValidateCollectionName(name); err != nil {
		return def, &protoError{code: errcode.IllegalName.Name, num: errcode.IllegalName.Num, msg: err.Error()}
	}
	if len(keyOptions) > 0 && !bytes.Equal(keyOptions, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(keyOptions))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&def.KeyOptions); err != nil {
			return def, &protoError{code: errcode.InvalidKeyGenerator.Name, num: errcode.InvalidKeyGenerator.Num, msg: "keyOptions: " + err.Error()}
		}
	}
	if err := def.KeyOptions.Validate(); err != nil {
		var ce *core.Error
		msg := err.Error()
		if errors.As(err, &ce) {
			msg = ce.Message
		}
		return def, &protoError{code: errcode.InvalidKeyGenerator.Name, num: errcode.InvalidKeyGenerator.Num, msg: msg}
	}
	return def, nil
}

// DefineCollection keeps def for db unless a definition of its name exists;
// it returns the kept definition and whether this call made it.
func (s *Server) DefineCollection(ctx context.Context, db string, def CollectionDef) (CollectionDef, bool, error) {
	if err := NeedRole(ctx, auth.Write, "defining collections"); err != nil {
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
		found, err := storage.GetJSON(tx, colDefKey(db, def.Name), &kept)
		if err != nil || found {
			return err
		}
		n := 0
		tx.AscendRange("", colDefPrefix+db+"/", colDefPrefix+db+"0", func(_, _ string) bool {
			n++
			return n < maxCollections
		})
		if n >= maxCollections {
			return BadRequest("database %s has %d collection definitions, the most it keeps", Quote(db), maxCollections)
		}
		created = true
		_, _, err = tx.Set(colDefKey(db, def.Name), string(b), nil)
		return err
	})
	if err != nil {
		return CollectionDef{}, false, err
	}
	return kept, created, nil
}

// Collections returns db's definitions by name.
func (s *Server) Collections(db string) ([]CollectionDef, error) {
	defs := []CollectionDef{}
	err := s.store.View(func(tx storage.Tx) error {
		var derr error
		prefix := colDefPrefix + db + "/"
		tx.AscendRange("", prefix, colDefPrefix+db+"0", func(key, value string) bool {
			var d CollectionDef
			if err := json.Unmarshal([]byte(value), &d); err != nil {
				derr = err
				return false
			}
			d.Name = strings.TrimPrefix(key, prefix)
			defs = append(defs, d)
			return true
		})
		return derr
	})
	return defs, err
}
