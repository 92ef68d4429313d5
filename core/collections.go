package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hilodb/hilodb/core/keygen"
	"github.com/tidwall/buntdb"
)

// CollectionDef is a named collection definition, as it travels between a
// store and the sync server.
type CollectionDef struct {
	Name string `json:"name"`
	CollectionOptions
}

// Collections returns every collection defined in the store, by name.
func (s *Store) Collections() ([]CollectionDef, error) {
	var out []CollectionDef
	err := s.view(func(tx *txn) error {
		var derr error
		tx.AscendRange("", colPrefix, colPrefix+"\xff", func(key, value string) bool {
			d := CollectionDef{Name: strings.TrimPrefix(key, colPrefix)}
			if err := json.Unmarshal([]byte(value), &d.CollectionOptions); err != nil {
				derr = fmt.Errorf("collection %q: %w", d.Name, err)
				return false
			}
			out = append(out, d)
			return true
		})
		return derr
	})
	if err != nil {
		return nil, fmt.Errorf("list collections: %w", err)
	}
	return out, nil
}

// PendingCollections returns the definitions made with CreateCollection
// that the server has not confirmed with AdoptCollection yet, by name.
func (s *Store) PendingCollections() ([]CollectionDef, error) {
	var names []string
	err := s.view(func(tx *txn) error {
		tx.AscendRange("", colPendingPrefix, colPendingPrefix+"\xff", func(key, _ string) bool {
			names = append(names, strings.TrimPrefix(key, colPendingPrefix))
			return true
		})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list pending collections: %w", err)
	}
	out := make([]CollectionDef, 0, len(names))
	for _, n := range names {
		if o, ok := s.CollectionInfo(n); ok {
			out = append(out, CollectionDef{Name: n, CollectionOptions: o})
		}
	}
	return out, nil
}

// AdoptCollection makes def the store's definition of its collection, as
// the server has it: it replaces a local definition of the same name (the
// server's first definition wins, so every client makes keys the same way)
// and clears its pending mark. It fails with 1208 for an illegal name and
// 1232 for invalid keyOptions, changing nothing.
func (s *Store) AdoptCollection(def CollectionDef) error {
	if err := validateCollection(def.Name); err != nil {
		return err
	}
	g, err := compileKeys(def.KeyOptions)
	if err != nil {
		return err
	}
	b, err := json.Marshal(def.CollectionOptions)
	if err != nil {
		return fmt.Errorf("encode collection options: %w", err)
	}
	err = s.update(func(tx *txn) error {
		old, gerr := tx.Get(colPrefix + def.Name)
		if gerr != nil && !errors.Is(gerr, buntdb.ErrNotFound) {
			return gerr
		}
		if gerr != nil || old != string(b) {
			if _, _, err := tx.Set(colPrefix+def.Name, string(b), nil); err != nil {
				return err
			}
		}
		return deleteKey(tx, colPendingPrefix+def.Name)
	})
	if err != nil {
		return fmt.Errorf("adopt collection %q: %w", def.Name, err)
	}
	s.colMu.Lock()
	s.cols[def.Name] = g
	s.colMu.Unlock()
	return nil
}

// compileKeys compiles a collection's keyOptions (keygen.Options.Compile),
// its errors numbered as the store's (1232).
func compileKeys(o keygen.Options) (keygen.Generator, error) {
	g, err := o.Compile()
	if err != nil {
		return g, keyGenError(err)
	}
	return g, nil
}

// keyGenError gives a key generator's error (a *keygen.Error) the store's
// number for its kind: 1232 invalid_key_generator, 1225 out_of_keys, or
// needs_server when it has no numbers. Any other error is returned as it
// is.
func keyGenError(err error) error {
	var e *keygen.Error
	if !errors.As(err, &e) {
		return err
	}
	kind := ErrInvalidKeyGenerator
	switch e.Kind {
	case keygen.ErrOutOfKeys:
		kind = ErrOutOfKeys
	case keygen.ErrNoNumbers:
		kind = ErrNeedsServer
	}
	return newError(kind, "", "", "%s", e.Message)
}
