package replica

import (
	"context"

	"github.com/hilodb/hilodb/core"
)

// Index definitions travel like collection definitions: one made or
// dropped here goes to the server with the next push, and the server's
// definitions are adopted at the end of every pull to the end (so at every
// connect). Each replica builds the indexes from its own documents.

// pushIndexes sends the definitions made or dropped here that the server
// has not confirmed.
func (r *Replicator) pushIndexes(ctx context.Context) error {
	defined, dropped, err := r.store.PendingIndexes()
	if err != nil || len(defined) == 0 && len(dropped) == 0 {
		return err
	}
	for _, c := range dropped {
		for _, d := range c.Indexes {
			_, err := r.cli.DropIndex(ctx, c.Collection, d.Name)
			if unknownOp(err) {
				return nil // a server that keeps no definitions: they stay local
			}
			if err != nil {
				return err
			}
			if err := r.store.ConfirmIndexDrop(c.Collection, d.Name); err != nil {
				return err
			}
		}
	}
	for _, c := range defined {
		for _, d := range c.Indexes {
			_, _, err := r.cli.DefineIndex(ctx, c.Collection, d)
			if unknownOp(err) {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	return r.pullIndexes(ctx)
}

// pullIndexes adopts the server's index definitions: every collection the
// server or this store has indexes for.
func (r *Replicator) pullIndexes(ctx context.Context) error {
	server, err := r.cli.Indexes(ctx)
	if unknownOp(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return r.adoptIndexes(server)
}

// adoptIndexes adopts server, the server's index definitions.
func (r *Replicator) adoptIndexes(server []core.CollectionIndexes) error {
	local, err := r.store.AllIndexes()
	if err != nil {
		return err
	}
	has := map[string]bool{}
	for _, c := range server {
		has[c.Collection] = true
	}
	changed := false
	for _, c := range local {
		if !has[c.Collection] {
			server = append(server, core.CollectionIndexes{Collection: c.Collection})
		}
	}
	byColl := map[string][]core.IndexDef{}
	for _, c := range local {
		byColl[c.Collection] = c.Indexes
	}
	for _, c := range server {
		if !sameIndexes(byColl[c.Collection], c.Indexes) {
			changed = true
		}
	}
	if pend, _, err := r.store.PendingIndexes(); err != nil || len(pend) > 0 {
		changed = true // their marks are cleared
	}
	if !changed {
		return nil // nothing to change: no write
	}
	return r.store.AdoptIndexes(server)
}

func sameIndexes(a, b []core.IndexDef) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]string{}
	for _, d := range a {
		m[d.Name] = fieldsKey(d.Fields)
	}
	for _, d := range b {
		if m[d.Name] != fieldsKey(d.Fields) {
			return false
		}
	}
	return true
}

func fieldsKey(f []string) string {
	out := ""
	for _, s := range f {
		out += s + "\x00"
	}
	return out
}
