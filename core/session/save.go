package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/hilodb/hilodb/core"
)

// body encodes a tracked entity as a document body: its JSON without the
// identity property.
func (ss *Session) body(t *tracked) ([]byte, error) {
	b, err := json.Marshal(t.entity)
	if err != nil {
		return nil, core.NewError(core.ErrBadJSON, t.id, "", "encode %T: %v", t.entity, err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil || fields == nil {
		return nil, core.NewError(core.ErrBadJSON, t.id, "", "%T does not encode as a JSON object", t.entity)
	}
	conv := ss.conv
	if _, isLit := t.entity.(map[string]any); isLit {
		delete(fields, conv.IdentityPropertyName(t.collection))
	} else if prop, err := findIDProperty(conv, derefType(reflect.TypeOf(t.entity)), t.collection); err == nil && prop.field != nil {
		delete(fields, prop.jsonName)
	}
	for _, k := range []string{"_id", "_key", "_rev", "@metadata"} {
		delete(fields, k)
	}
	return json.Marshal(fields)
}

// SaveChanges writes every new, changed and deleted entity in one
// transaction (the store's SaveBatch). Ids that wait for the sync server
// (ending in "|") are allocated first, in one call; if that fails, or any
// write fails, nothing is saved and the session is as it was.
func (ss *Session) SaveChanges(ctx context.Context) error {
	type item struct {
		t    *tracked
		body []byte
	}
	var batch []core.BatchItem
	var items []item // parallel to batch; t is nil for deletes by id
	for _, id := range ss.deletes {
		batch = append(batch, core.BatchItem{Delete: true, ID: id})
		items = append(items, item{})
	}
	var dropped []*tracked // deleted before they were ever saved
	for _, t := range ss.order {
		if t.deleted {
			if t.isNew {
				dropped = append(dropped, t)
				continue
			}
			b := core.BatchItem{Delete: true, ID: t.id}
			if ss.opts.UseOptimisticConcurrency {
				b.IfRev = t.rev
			}
			batch = append(batch, b)
			items = append(items, item{t: t})
			continue
		}
		body, err := ss.body(t)
		if err != nil {
			return err
		}
		if !t.isNew && bytes.Equal(body, t.snapshot) {
			continue
		}
		b := core.BatchItem{ID: t.id, Collection: t.collection, Body: body, Loaded: t.loaded, TypeName: t.typeName}
		if ss.opts.UseOptimisticConcurrency {
			if t.isNew {
				b.MustBeNew = true
			} else {
				b.IfRev = t.rev
			}
		}
		batch = append(batch, b)
		items = append(items, item{t: t, body: body})
	}
	if len(batch) == 0 {
		for _, t := range dropped {
			ss.untrack(t)
		}
		return nil
	}
	results, err := ss.store.SaveBatch(ctx, batch)
	if err != nil {
		return fmt.Errorf("save changes: %w", err)
	}
	for _, t := range dropped {
		ss.untrack(t)
	}
	ss.deletes = nil
	for i, it := range items {
		t := it.t
		if t == nil {
			if old := ss.byID[batch[i].ID]; old != nil {
				old.deleted = true
			}
			continue
		}
		if t.deleted {
			ss.untrack(t)
			continue
		}
		r := results[i]
		if !t.final {
			t.id, t.final = r.ID, true
			ss.byID[r.ID] = t
			prop, err := ss.propertyOf(t)
			if err == nil {
				err = prop.set(t.entity, r.ID, ss.conv)
			}
			if err != nil {
				return fmt.Errorf("save changes: set id of %T: %w", t.entity, err)
			}
		}
		t.rev, t.snapshot, t.isNew = r.Rev, it.body, false
	}
	return nil
}

func (ss *Session) untrack(t *tracked) {
	if k, err := keyOf(t.entity); err == nil {
		delete(ss.byPtr, k)
	}
	if ss.byID[t.id] == t {
		delete(ss.byID, t.id)
	}
	for i, o := range ss.order {
		if o == t {
			ss.order = append(ss.order[:i], ss.order[i+1:]...)
			break
		}
	}
}

func (ss *Session) propertyOf(t *tracked) (idProperty, error) {
	conv := ss.conv
	if _, isLit := t.entity.(map[string]any); isLit {
		return idProperty{mapKey: conv.IdentityPropertyName(t.collection)}, nil
	}
	return findIDProperty(conv, derefType(reflect.TypeOf(t.entity)), t.collection)
}
