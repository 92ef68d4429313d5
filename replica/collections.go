package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/errcode"
)

// Collection definitions travel beside the documents: a definition made
// here goes to the server with the next push, and the server's definitions
// come back with every Sync (so at every connect, too): with the last page
// of its pull, or, from a server that does not send them so, by a
// collection.list after it. The server keeps
// the first definition of a name; every replica adopts it, so all of them
// make keys for the collection the same way.

// pushCollections sends the definitions made here that the server has not
// confirmed, and adopts the server's answer for each.
func (r *Replicator) pushCollections(ctx context.Context) error {
	pend, err := r.store.PendingCollections()
	if err != nil || len(pend) == 0 {
		return err
	}
	for _, d := range pend {
		ko, err := json.Marshal(d.KeyOptions)
		if err != nil {
			return fmt.Errorf("push collection %s: %w", d.Name, err)
		}
		got, _, err := r.cli.DefineCollection(ctx, client.CollectionDef{Name: d.Name, KeyOptions: ko})
		if unknownOp(err) {
			return nil // a server that keeps no definitions: they stay local
		}
		if err != nil {
			return err
		}
		if err := r.adopt(got); err != nil {
			return err
		}
	}
	return nil
}

// pullCollections adopts every definition the server keeps, for a server
// that did not send them with the last page of a pull.
func (r *Replicator) pullCollections(ctx context.Context) error {
	defs, err := r.cli.Collections(ctx)
	if unknownOp(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return r.adoptAll(defs)
}

// adoptAll adopts each of the server's definitions.
func (r *Replicator) adoptAll(defs []client.CollectionDef) error {
	for _, d := range defs {
		if err := r.adopt(d); err != nil {
			return err
		}
	}
	return nil
}

func (r *Replicator) adopt(d client.CollectionDef) error {
	def := core.CollectionDef{Name: d.Name}
	if len(d.KeyOptions) > 0 {
		if err := json.Unmarshal(d.KeyOptions, &def.KeyOptions); err != nil {
			return fmt.Errorf("collection %s from the server: %w", d.Name, err)
		}
	}
	if cur, ok := r.store.CollectionInfo(d.Name); ok && sameOptions(cur, def.CollectionOptions) {
		if pend, _ := r.store.PendingCollections(); !hasName(pend, d.Name) {
			return nil // nothing to change: no write
		}
	}
	return r.store.AdoptCollection(def)
}

func sameOptions(a, b core.CollectionOptions) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func hasName(defs []core.CollectionDef, name string) bool {
	for _, d := range defs {
		if d.Name == name {
			return true
		}
	}
	return false
}

func unknownOp(err error) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Code == errcode.UnknownOp.Name
}
