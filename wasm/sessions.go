//go:build js && wasm

package main

import (
	"context"
	"encoding/json"
	"syscall/js"

	"github.com/hilodb/hilodb/core"
)

// The bridge of the npm package's sessions (js/session.js), which track
// entities in JavaScript and write them through core.Store.SaveBatch.

// batchItem is one item of saveBatch's JSON.
type batchItem struct {
	Delete     bool            `json:"delete"`
	ID         string          `json:"id"`
	Collection string          `json:"collection"`
	Body       json.RawMessage `json:"body"`
	TypeName   string          `json:"typeName"`
	IfRev      string          `json:"ifRev"`
	MustBeNew  bool            `json:"mustBeNew"`
}

// saveBatchArgs: saveBatch(itemsJSON) writes the items in one transaction
// (all or nothing) and resolves to one {_id, _key, _rev} per item.
func (a *api) saveBatchArgs(args []js.Value) (func() (any, error), error) {
	id, err := storeNumber(args)
	if err != nil {
		return nil, err
	}
	text, err := stringArg(args, 1, "saveChanges: items")
	if err != nil {
		return nil, err
	}
	var in []batchItem
	if err := json.Unmarshal([]byte(text), &in); err != nil {
		return nil, &argError{"saveChanges: malformed items: " + err.Error()}
	}
	rcpt, err := receiptArgAt(args, 2)
	if err != nil {
		return nil, err
	}
	items := make([]core.BatchItem, len(in))
	for i, it := range in {
		items[i] = core.BatchItem{Delete: it.Delete, ID: it.ID, Collection: it.Collection, Body: it.Body,
			TypeName: it.TypeName, IfRev: it.IfRev, MustBeNew: it.MustBeNew}
	}
	return func() (any, error) {
		return a.call(id, func(h *handle) (any, error) {
			var rs []core.Result
			err := withCause(rcpt.on(h.ctx), func(ctx context.Context) (err error) {
				rs, err = h.store.SaveBatch(ctx, items)
				return err
			})
			if err != nil {
				return nil, err
			}
			return jsonValue(rs)
		})
	}, nil
}

// generateIDArgs: generateId(collection) resolves to a new id for a
// document of collection (a HiLo id by default), as a session's store does.
func (a *api) generateIDArgs(args []js.Value) (func() (any, error), error) {
	return a.withString(args, "store: collection", func(h *handle, coll string) (any, error) {
		var out string
		err := withCause(h.ctx, func(ctx context.Context) (err error) {
			out, err = h.store.GenerateID(ctx, coll)
			return err
		})
		return out, err
	})
}

// namesCall: names(kind, name) answers the conventions' defaults at once,
// without a Promise (they are synchronous in the JavaScript API): kind
// "collection" → the collection of a class name (pluralized), "prefix" →
// the id prefix of a collection, "separator" → the identity parts
// separator. It returns the string, or an Error.
func (a *api) namesCall(id int, args []js.Value) any {
	kind, err := stringArg(args, 1, "conventions: kind")
	if err != nil {
		return toJSError(err)
	}
	name, err := stringArg(args, 2, "conventions: name")
	if err != nil {
		return toJSError(err)
	}
	out, err := a.call(id, func(h *handle) (any, error) {
		switch kind {
		case "collection":
			return h.store.Conventions().CollectionName(name), nil
		case "prefix":
			return h.store.Prefix(name), nil
		case "separator":
			return h.store.Separator(), nil
		}
		return nil, &argError{"conventions: unknown kind " + quoteJS(kind)}
	})
	if err != nil {
		return toJSError(err)
	}
	return out
}

func quoteJS(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// identityArgs: identity(op, prefix, value, force) — op "next" resolves to
// the next identity of prefix ("companies" → 1, 2, …; nextIdentityFor), op
// "seed" sets it (seedIdentityFor: only upwards without force) and
// resolves to the value it has then.
func (a *api) identityArgs(args []js.Value) (func() (any, error), error) {
	id, err := storeNumber(args)
	if err != nil {
		return nil, err
	}
	op, err := stringArg(args, 1, "identity: op")
	if err != nil {
		return nil, err
	}
	prefix, err := stringArg(args, 2, "identity: prefix")
	if err != nil {
		return nil, err
	}
	var value int64
	force := false
	if op == "seed" {
		v := arg(args, 3)
		if v.Type() != js.TypeNumber || v.Float() != float64(int64(v.Float())) || v.Float() < 0 {
			return nil, &argError{"seedIdentityFor: value must be a whole number of 0 or more"}
		}
		value = int64(v.Float())
		if f := arg(args, 4); f.Type() == js.TypeBoolean {
			force = f.Bool()
		} else if f.Type() != js.TypeUndefined {
			return nil, &argError{"seedIdentityFor: force must be true or false"}
		}
	} else if op != "next" {
		return nil, &argError{"identity: unknown op " + quoteJS(op)}
	}
	return func() (any, error) {
		return a.call(id, func(h *handle) (any, error) {
			var v int64
			err := withCause(h.ctx, func(ctx context.Context) (err error) {
				if op == "next" {
					v, err = h.store.NextIdentityFor(ctx, prefix)
				} else {
					v, err = h.store.SeedIdentityFor(ctx, prefix, value, force)
				}
				return err
			})
			return v, err
		})
	}, nil
}
