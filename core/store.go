package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tidwall/buntdb"
)

// IDSource hands out HiLo ids for an id prefix ("orders" → "orders/1-A").
// *idgen.Generator implements it.
type IDSource interface {
	NextID(ctx context.Context, tag string) (string, error)
}

// Options configure a Store.
type Options struct {
	// Node is this replica's node tag, used in revisions. Empty gives a
	// random local stand-in until Clock().SetNode is called.
	Node string
	// IDs hands out HiLo ids for documents stored without one. Without it,
	// such a put fails with ErrNeedsServer.
	IDs IDSource
	// Separator joins an id prefix and a key. Default "/".
	Separator string
}

// Store is a JSON document store over buntdb. Documents are addressed by
// _id = prefix + separator + _key.
//
// A Store is safe for concurrent use.
type Store struct {
	db    *buntdb.DB
	clock *Clock
	ids   IDSource
	sep   string
}

const docPrefix = "doc/"

// Open opens a store at path; ":memory:" keeps it in memory (use Save and
// Load to persist it elsewhere, as the browser build does with IndexedDB).
func Open(path string, opts Options) (*Store, error) {
	db, err := buntdb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if opts.Separator == "" {
		opts.Separator = "/"
	}
	return &Store{db: db, clock: NewClock(opts.Node), ids: opts.IDs, sep: opts.Separator}, nil
}

// Clock returns the store's revision clock.
func (s *Store) Clock() *Clock { return s.clock }

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// Save writes the whole store to w, for Load to read back.
func (s *Store) Save(w io.Writer) error {
	if err := s.db.Save(w); err != nil {
		return fmt.Errorf("save store: %w", err)
	}
	return nil
}

// Load reads a store written by Save, adding its documents to this one.
func (s *Store) Load(r io.Reader) error {
	if err := s.db.Load(r); err != nil {
		return fmt.Errorf("load store: %w", err)
	}
	return nil
}

// IDPrefix returns the id prefix of a collection: a name with a single
// upper-case letter is lower-cased ("Orders" → "orders"), any other is kept
// ("LineItems" → "LineItems").
func IDPrefix(collection string) string {
	upper := 0
	for i := 0; i < len(collection); i++ {
		if c := collection[i]; c >= 'A' && c <= 'Z' {
			upper++
		}
	}
	if upper == 1 {
		return strings.ToLower(collection)
	}
	return collection
}

// Put stores doc, a JSON object, in collection and returns the stored
// document with _id, _key, _rev and @metadata.@collection set. The id comes
// from the document's _id, else from its _key, else from a HiLo range.
func (s *Store) Put(ctx context.Context, collection string, doc []byte) ([]byte, error) {
	if err := ValidateCollectionName(collection); err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(doc, &fields); err != nil || fields == nil {
		return nil, newError(ErrBadJSON, "", "", "document must be a JSON object")
	}
	prefix := IDPrefix(collection)
	id, err := s.resolveID(ctx, prefix, fields)
	if err != nil {
		return nil, err
	}
	key, ok := strings.CutPrefix(id, prefix+s.sep)
	if !ok {
		return nil, newError(ErrIllegalKey, id, "", "document id %q does not start with %q", id, prefix+s.sep)
	}
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := fields["@metadata"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil || meta == nil {
			return nil, newError(ErrBadJSON, key, "", "@metadata must be a JSON object")
		}
	}
	meta["@collection"], _ = json.Marshal(collection)
	rev := s.clock.NextRev()
	fields["_id"], _ = json.Marshal(id)
	fields["_key"], _ = json.Marshal(key)
	fields["_rev"], _ = json.Marshal(rev)
	fields["@metadata"], _ = json.Marshal(meta)
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("encode document: %w", err)
	}
	err = s.db.Update(func(tx *buntdb.Tx) error {
		_, _, err := tx.Set(docPrefix+id, string(out), nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store document: %w", err)
	}
	return out, nil
}

func (s *Store) resolveID(ctx context.Context, prefix string, fields map[string]json.RawMessage) (string, error) {
	if raw, ok := fields["_id"]; ok && string(raw) != "null" {
		var id string
		if err := json.Unmarshal(raw, &id); err != nil {
			return "", newError(ErrIllegalKey, "", "", "_id must be a string")
		}
		return id, nil
	}
	if raw, ok := fields["_key"]; ok && string(raw) != "null" {
		var key string
		if err := json.Unmarshal(raw, &key); err != nil {
			return "", newError(ErrIllegalKey, "", "", "_key must be a string")
		}
		return prefix + s.sep + key, nil
	}
	if s.ids == nil {
		return "", newError(ErrNeedsServer, "", "", "no id source to give %q documents HiLo ids", prefix)
	}
	id, err := s.ids.NextID(ctx, prefix)
	if err != nil {
		return "", fmt.Errorf("generate id: %w", err)
	}
	return id, nil
}

// Get returns the document with the given id, or an *Error with number 1202.
func (s *Store) Get(id string) ([]byte, error) {
	var out string
	err := s.db.View(func(tx *buntdb.Tx) error {
		var err error
		out, err = tx.Get(docPrefix + id)
		return err
	})
	if errors.Is(err, buntdb.ErrNotFound) {
		return nil, newError(ErrNotFound, id, "", "document %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("get document: %w", err)
	}
	return []byte(out), nil
}

// Delete removes the document with the given id, or returns an *Error with
// number 1202 when there is none.
func (s *Store) Delete(id string) error {
	err := s.db.Update(func(tx *buntdb.Tx) error {
		_, err := tx.Delete(docPrefix + id)
		return err
	})
	if errors.Is(err, buntdb.ErrNotFound) {
		return newError(ErrNotFound, id, "", "document %q not found", id)
	}
	if err != nil {
		return fmt.Errorf("delete document: %w", err)
	}
	return nil
}
