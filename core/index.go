package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/hilodb/hilodb/core/query"
)

// Secondary indexes. A definition is kept at ixdef/<collection>/<name> and
// journaled like any key. Its entries are derived from the documents and
// kept in memory beside buntdb, one B-tree an index: they are changed in
// the transaction of every write of a document of the collection (and put
// back if it fails), so an index is never stale; they are never journaled
// nor saved, and are built again after a load when a query first needs
// them.
const (
	ixdefPrefix  = "ixdef/"  // ixdef/<collection>/<name> → IndexDef JSON
	ixpendPrefix = "ixpend/" // ixpend/<collection>/<name> → "define"|"drop", not yet confirmed by the server
)

// MaxIndexes bounds the indexes of one collection: each costs every write
// of the collection an entry.
const MaxIndexes = 16

// maxIndexFields bounds the fields of one index.
const maxIndexFields = 8

// IndexDef defines a secondary index of a collection: the documents'
// values at Fields, in order, as one compound key. An index serves a query
// whose selector fixes a prefix of its fields by equality and then, maybe,
// a range of the next one, and a sort on its fields in their order (all
// ascending or all descending).
type IndexDef struct {
	Name   string   `json:"name"`
	Fields []string `json:"fields"`
}

// CollectionIndexes is a collection's index definitions, as they travel to
// and from the sync server.
type CollectionIndexes struct {
	Collection string     `json:"collection"`
	Indexes    []IndexDef `json:"indexes"`
}

// secIndex is a compiled definition.
type secIndex struct {
	coll   string
	def    IndexDef
	fields []query.Path
	tree   *query.Index // the entries, once built
	built  atomic.Bool  // tree is built and kept; false after a load until a query needs it
	docPfx string       // doc/<prefix><sep>: the collection's documents
}

// indexSet is the store's compiled definitions at one point; it is never
// changed, only replaced.
type indexSet struct {
	all []*secIndex // by collection, then name
}

// of returns the collection's indexes.
func (s *indexSet) of(coll string) []*secIndex {
	if s == nil {
		return nil
	}
	var out []*secIndex
	for _, ix := range s.all {
		if ix.coll == coll {
			out = append(out, ix)
		}
	}
	return out
}

func (s *indexSet) named(coll, name string) *secIndex {
	for _, ix := range s.of(coll) {
		if ix.def.Name == name {
			return ix
		}
	}
	return nil
}

// validIndexName reports whether name may name an index: 1 to 64 bytes of
// letters, digits, "_", "-" and ".".
func validIndexName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// defaultIndexName names an index after its fields: "idx-status-createdAt".
func defaultIndexName(fields []string) string {
	var b strings.Builder
	b.WriteString("idx")
	for _, f := range fields {
		b.WriteByte('-')
		for i := 0; i < len(f) && b.Len() < 64; i++ {
			c := f[i]
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' {
				b.WriteByte(c)
			} else {
				b.WriteByte('_')
			}
		}
	}
	n := b.String()
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// checkIndexDef validates def (naming it after its fields when it has no
// name) and compiles its fields.
func checkIndexDef(def *IndexDef) ([]query.Path, error) {
	if len(def.Fields) == 0 || len(def.Fields) > maxIndexFields {
		return nil, newError(ErrBadQuery, def.Name, "", "an index takes 1 to %d fields", maxIndexFields)
	}
	paths := make([]query.Path, len(def.Fields))
	for i, f := range def.Fields {
		p, err := query.ParsePath(f)
		if err != nil {
			return nil, newError(ErrBadQuery, def.Name, "", "index field: %v", err)
		}
		paths[i] = p
	}
	if def.Name == "" {
		def.Name = defaultIndexName(def.Fields)
	}
	if !validIndexName(def.Name) {
		return nil, newError(ErrBadQuery, def.Name, "", "index name %q: 1 to 64 letters, digits, _, - or .", def.Name)
	}
	return paths, nil
}

// CreateIndex defines an index of collection. A definition with the same
// fields as an existing index is not made again: created is false and name
// is the existing index's. The index is built in the same transaction,
// from the documents already stored, and kept by every later write; the
// replicator sends the definition to the server, which gives it to every
// client of the database. It fails with 1912 (bad_query) for a bad
// definition, a name taken by other fields or more than MaxIndexes
// indexes, and 1208 for an illegal collection name.
func (s *Store) CreateIndex(ctx context.Context, collection string, def IndexDef) (name string, created bool, err error) {
	if err := ValidateCollectionName(collection); err != nil {
		return "", false, err
	}
	if _, err := checkIndexDef(&def); err != nil {
		return "", false, err
	}
	err = s.updateN(ctx, 2, func(tx *txn) error {
		existing, err := readIndexDefs(tx, collection)
		if err != nil {
			return err
		}
		for _, d := range existing {
			if slices.Equal(d.Fields, def.Fields) {
				name = d.Name
				return nil
			}
			if d.Name == def.Name {
				return newError(ErrBadQuery, def.Name, "", "an index named %q exists with fields %q", d.Name, d.Fields)
			}
		}
		if len(existing) >= MaxIndexes {
			return newError(ErrBadQuery, def.Name, "", "collection %q has %d indexes, the most it may", collection, MaxIndexes)
		}
		b, err := json.Marshal(def)
		if err != nil {
			return err
		}
		if _, _, err := tx.Set(ixdefPrefix+collection+"/"+def.Name, string(b), nil); err != nil {
			return err
		}
		if _, _, err := tx.Set(ixpendPrefix+collection+"/"+def.Name, "define", nil); err != nil {
			return err
		}
		name, created = def.Name, true
		return nil
	})
	if err != nil {
		return "", false, asIndexError("create index", err)
	}
	if created {
		s.notifyWrite() // a replicator sends the definition
	}
	return name, created, nil
}

// DeleteIndex drops collection's index name and its entries. It fails
// with 1202 (not_found) when there is no such index.
func (s *Store) DeleteIndex(ctx context.Context, collection, name string) error {
	if err := ValidateCollectionName(collection); err != nil {
		return err
	}
	err := s.updateN(ctx, 2, func(tx *txn) error {
		key := ixdefPrefix + collection + "/" + name
		if _, err := tx.Get(key); err != nil {
			return newError(ErrNotFound, name, "", "collection %q has no index %q", collection, name)
		}
		if _, err := tx.Delete(key); err != nil {
			return err
		}
		_, _, err := tx.Set(ixpendPrefix+collection+"/"+name, "drop", nil)
		return err
	})
	if err != nil {
		return asIndexError("delete index", err)
	}
	s.notifyWrite()
	return nil
}

func asIndexError(op string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return fmt.Errorf("%s: %w", op, err)
}

// Indexes returns collection's index definitions, by name.
func (s *Store) Indexes(collection string) ([]IndexDef, error) {
	var out []IndexDef
	err := s.view(func(tx *txn) error {
		var err error
		out, err = readIndexDefs(tx, collection)
		return err
	})
	return out, err
}

// AllIndexes returns every collection's index definitions, by collection.
func (s *Store) AllIndexes() ([]CollectionIndexes, error) {
	var out []CollectionIndexes
	err := s.view(func(tx *txn) error {
		all, err := readAllIndexDefs(tx)
		if err != nil {
			return err
		}
		for _, ix := range all {
			if n := len(out); n == 0 || out[n-1].Collection != ix.coll {
				out = append(out, CollectionIndexes{Collection: ix.coll})
			}
			out[len(out)-1].Indexes = append(out[len(out)-1].Indexes, ix.def)
		}
		return nil
	})
	return out, err
}

// PendingIndexes returns the definitions made or dropped here that the
// server has not confirmed: the defined ones in Indexes, the dropped ones
// by name in Dropped.
func (s *Store) PendingIndexes() (defined []CollectionIndexes, dropped []CollectionIndexes, err error) {
	err = s.view(func(tx *txn) error {
		return ascendPrefix(tx, ixpendPrefix, func(k, v string) bool {
			coll, name, _ := strings.Cut(k[len(ixpendPrefix):], "/")
			add := func(list *[]CollectionIndexes, d IndexDef) {
				if n := len(*list); n == 0 || (*list)[n-1].Collection != coll {
					*list = append(*list, CollectionIndexes{Collection: coll})
				}
				(*list)[len(*list)-1].Indexes = append((*list)[len(*list)-1].Indexes, d)
			}
			if v == "drop" {
				add(&dropped, IndexDef{Name: name})
				return true
			}
			raw, gerr := tx.Get(ixdefPrefix + coll + "/" + name)
			var d IndexDef
			if gerr == nil && json.Unmarshal([]byte(raw), &d) == nil {
				add(&defined, d)
			}
			return true
		})
	})
	return defined, dropped, err
}

// AdoptIndexes makes the server's definitions of the collections in defs
// the store's: an index the server has is defined (replacing a local one
// of the same name with other fields), a local one the server lacks stays
// only while it is pending (made here, not yet sent), and the pending
// marks of what the server now agrees with are cleared. Collections not in
// defs are left alone.
func (s *Store) AdoptIndexes(defs []CollectionIndexes) error {
	for _, c := range defs {
		if err := ValidateCollectionName(c.Collection); err != nil {
			return err
		}
		for i := range c.Indexes {
			if _, err := checkIndexDef(&c.Indexes[i]); err != nil {
				return err
			}
		}
	}
	err := s.update(func(tx *txn) error {
		for _, c := range defs {
			local, err := readIndexDefs(tx, c.Collection)
			if err != nil {
				return err
			}
			server := map[string]IndexDef{}
			for _, d := range c.Indexes {
				server[d.Name] = d
			}
			for _, d := range local {
				pend, _ := tx.Get(ixpendPrefix + c.Collection + "/" + d.Name)
				sd, ok := server[d.Name]
				switch {
				case ok && slices.Equal(sd.Fields, d.Fields):
					if pend == "define" {
						if err := deleteKey(tx, ixpendPrefix+c.Collection+"/"+d.Name); err != nil {
							return err
						}
					}
				case !ok && pend == "define" && !hasFields(c.Indexes, d.Fields):
					// Made here, not sent yet: it stays. (One the server
					// has under another name is dropped for that one.)
				default:
					if _, err := tx.Delete(ixdefPrefix + c.Collection + "/" + d.Name); err != nil {
						return err
					}
					if err := deleteKey(tx, ixpendPrefix+c.Collection+"/"+d.Name); err != nil {
						return err
					}
				}
			}
			for _, d := range c.Indexes {
				if pend, _ := tx.Get(ixpendPrefix + c.Collection + "/" + d.Name); pend == "drop" {
					continue // dropped here, not sent yet
				}
				key := ixdefPrefix + c.Collection + "/" + d.Name
				b, _ := json.Marshal(d)
				if old, err := tx.Get(key); err == nil && old == string(b) {
					continue
				}
				if _, _, err := tx.Set(key, string(b), nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return asIndexError("adopt indexes", err)
	}
	return nil
}

// ConfirmIndexDrop clears the pending mark of a dropped index the server
// has dropped too.
func (s *Store) ConfirmIndexDrop(collection, name string) error {
	return s.update(func(tx *txn) error {
		if v, _ := tx.Get(ixpendPrefix + collection + "/" + name); v != "drop" {
			return nil
		}
		return deleteKey(tx, ixpendPrefix+collection+"/"+name)
	})
}

func readIndexDefs(tx *txn, collection string) ([]IndexDef, error) {
	var out []IndexDef
	var derr error
	err := ascendPrefix(tx, ixdefPrefix+collection+"/", func(_, v string) bool {
		var d IndexDef
		if derr = json.Unmarshal([]byte(v), &d); derr != nil {
			return false
		}
		out = append(out, d)
		return true
	})
	if err == nil {
		err = derr
	}
	return out, err
}

// readAllIndexDefs compiles every definition in the store.
func readAllIndexDefs(tx *txn) ([]*secIndex, error) {
	var out []*secIndex
	var derr error
	err := ascendPrefix(tx, ixdefPrefix, func(k, v string) bool {
		coll, _, _ := strings.Cut(k[len(ixdefPrefix):], "/")
		var d IndexDef
		if derr = json.Unmarshal([]byte(v), &d); derr != nil {
			derr = fmt.Errorf("index %q: %w", k, derr)
			return false
		}
		paths, err := checkIndexDef(&d)
		if err != nil {
			derr = err
			return false
		}
		out = append(out, &secIndex{coll: coll, def: d, fields: paths})
		return true
	})
	if err == nil {
		err = derr
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].coll < out[j].coll })
	return out, err
}

// CheckIndexDef validates def as CreateIndex does, naming it after its
// fields when it has no name; a bad one fails with 1912 (bad_query).
func CheckIndexDef(def *IndexDef) error {
	_, err := checkIndexDef(def)
	return err
}

func hasFields(defs []IndexDef, fields []string) bool {
	for _, d := range defs {
		if slices.Equal(d.Fields, fields) {
			return true
		}
	}
	return false
}
