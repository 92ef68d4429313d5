//go:build js && wasm

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"syscall/js"

	"github.com/hilodb/hilodb/core"
	"github.com/tidwall/gjson"
)

// collectionArgs: collection(op, name, payload, options) runs an
// ArangoDB-style operation on collection name and resolves to its result as
// JSON text parsed by the host (index.js's Collection class calls it).
// payload is JSON text: the document, the selector, or the array of them;
// options is JSON text of the operation's options, any other one an error.
//
//	save, replace, update        payload doc (replace/update: with _key or _id)   → result
//	saveAll, replaceAll, updateAll, removeAll  payload [docs or selectors]        → [result | error]
//	remove, document             payload "selector"                               → result / the document
//	documents                    payload ["selector", …]                          → [document | error]
//	count                        no payload                                       → number
//	create                       payload {keyOptions}                             → {name}
//
// A result is ArangoDB's {_id, _key, _rev, _oldRev?, new?, old?} ({} when
// silent); a failed item of a multi-document call is {error: true,
// errorNum, errorMessage, errorCode}. Two more arguments, key and seq, ask
// a write (every operation but document, documents and count) to store a
// receipt in its transaction (receipts.go).
func (a *api) collectionArgs(args []js.Value) (func() (any, error), error) {
	id, err := storeNumber(args)
	if err != nil {
		return nil, err
	}
	op, err := stringArg(args, 1, "collection: op")
	if err != nil {
		return nil, err
	}
	name, err := stringArg(args, 2, "collection: name")
	if err != nil {
		return nil, err
	}
	payload := ""
	if v := arg(args, 3); v.Type() == js.TypeString {
		payload = v.String()
	}
	opts, err := writeOptions(op, arg(args, 4))
	if err != nil {
		return nil, err
	}
	rcpt, err := receiptArgAt(args, 5)
	if err != nil {
		return nil, err
	}
	return func() (any, error) {
		return a.call(id, func(h *handle) (any, error) {
			var out []byte
			err := withCause(h.ctx, func(ctx context.Context) (err error) {
				out, err = runCollectionOp(rcpt.onAnswer(ctx), h.store, op, name, payload, opts)
				return err
			})
			if err != nil {
				return nil, err
			}
			return parseJSON(out), nil
		})
	}, nil
}

// optionsOf lists the options each operation takes (ArangoDB's names).
var optionsOf = map[string][]string{
	"save":       {"returnNew", "returnOld", "silent", "overwriteMode", "keepNull", "mergeObjects"},
	"saveAll":    {"returnNew", "returnOld", "silent", "overwriteMode", "keepNull", "mergeObjects"},
	"replace":    {"returnNew", "returnOld", "silent", "ignoreRevs", "ifMatch", "rev"},
	"replaceAll": {"returnNew", "returnOld", "silent", "ignoreRevs"},
	"update":     {"returnNew", "returnOld", "silent", "ignoreRevs", "ifMatch", "rev", "keepNull", "mergeObjects"},
	"updateAll":  {"returnNew", "returnOld", "silent", "ignoreRevs", "keepNull", "mergeObjects"},
	"remove":     {"returnOld", "silent", "ignoreRevs", "ifMatch", "rev"},
	"removeAll":  {"returnOld", "silent", "ignoreRevs"},
	"document":   {},
	"documents":  {},
	"count":      {},
	"create":     {},
}

// writeOptions reads options (JSON text, or undefined) for op, refusing
// any option op does not take.
func writeOptions(op string, v js.Value) (*core.WriteOptions, error) {
	allowed, ok := optionsOf[op]
	if !ok {
		return nil, &argError{fmt.Sprintf("collection: unknown operation %q", op)}
	}
	opts := &core.WriteOptions{}
	if v.Type() == js.TypeUndefined || v.Type() == js.TypeNull {
		return opts, nil
	}
	if v.Type() != js.TypeString || !gjson.Valid(v.String()) || !gjson.Parse(v.String()).IsObject() {
		return nil, &argError{op + ": options must be an object"}
	}
	var bad error
	gjson.Parse(v.String()).ForEach(func(k, val gjson.Result) bool {
		known := false
		for _, a := range allowed {
			known = known || a == k.Str
		}
		if !known {
			bad = &argError{fmt.Sprintf("%s: unknown option %q", op, k.Str)}
			return false
		}
		boolean := func(dst **bool) {
			if val.Type != gjson.True && val.Type != gjson.False {
				bad = &argError{fmt.Sprintf("%s: %s must be true or false", op, k.Str)}
				return
			}
			b := val.Bool()
			*dst = &b
		}
		switch k.Str {
		case "returnNew", "returnOld", "silent":
			if val.Type != gjson.True && val.Type != gjson.False {
				bad = &argError{fmt.Sprintf("%s: %s must be true or false", op, k.Str)}
				return false
			}
			switch k.Str {
			case "returnNew":
				opts.ReturnNew = val.Bool()
			case "returnOld":
				opts.ReturnOld = val.Bool()
			default:
				opts.Silent = val.Bool()
			}
		case "keepNull":
			boolean(&opts.KeepNull)
		case "mergeObjects":
			boolean(&opts.MergeObjects)
		case "ignoreRevs":
			boolean(&opts.IgnoreRevs)
		case "overwriteMode":
			opts.OverwriteMode = core.OverwriteMode(val.String())
			if val.Type != gjson.String {
				bad = &argError{op + ": overwriteMode must be ignore, replace, update or conflict"}
			}
		case "ifMatch", "rev":
			if val.Type != gjson.String {
				bad = &argError{fmt.Sprintf("%s: %s must be a string", op, k.Str)}
			}
			opts.IfMatch = val.String()
		}
		return bad == nil
	})
	if bad != nil {
		return nil, bad
	}
	return opts, nil
}

// runCollectionOp runs one collection operation and returns its result as
// JSON text.
func runCollectionOp(ctx context.Context, st *core.Store, op, name, payload string, opts *core.WriteOptions) ([]byte, error) {
	one := func(r core.Result, err error) ([]byte, error) {
		if err != nil {
			return nil, err
		}
		return json.Marshal(r)
	}
	many := func(rs []core.Result, err error) ([]byte, error) {
		if err != nil {
			return nil, err
		}
		return json.Marshal(rs)
	}
	switch op {
	case "save":
		return one(st.Insert(ctx, name, []byte(payload), opts))
	case "replace", "update", "remove":
		sel, doc, err := selectorOf(op, payload)
		if err != nil {
			return nil, err
		}
		switch op {
		case "replace":
			return one(st.Replace(ctx, name, sel, doc, opts))
		case "update":
			return one(st.Update(ctx, name, sel, doc, opts))
		}
		return one(st.Remove(ctx, name, sel, opts))
	case "saveAll", "replaceAll", "updateAll", "removeAll":
		items, err := arrayItems(op, payload)
		if err != nil {
			return nil, err
		}
		switch op {
		case "saveAll":
			return many(st.InsertMany(ctx, name, items, opts))
		case "replaceAll":
			return many(st.ReplaceMany(ctx, name, items, opts))
		case "updateAll":
			return many(st.UpdateMany(ctx, name, items, opts))
		}
		return many(st.RemoveMany(ctx, name, items, opts))
	case "document":
		sel := gjson.Parse(payload)
		if sel.Type != gjson.String {
			return nil, &argError{"document: want a key or an id"}
		}
		return st.Document(name, sel.Str)
	case "documents":
		items, err := arrayItems(op, payload)
		if err != nil {
			return nil, err
		}
		sels := make([]string, len(items))
		for i, it := range items {
			v := gjson.ParseBytes(it)
			if v.Type != gjson.String {
				return nil, &argError{"documents: want keys or ids"}
			}
			sels[i] = v.Str
		}
		rs, err := st.DocumentMany(name, sels)
		if err != nil {
			return nil, err
		}
		// The documents themselves, or the error objects.
		var b bytes.Buffer
		b.WriteByte('[')
		for i, r := range rs {
			if i > 0 {
				b.WriteByte(',')
			}
			if r.Err != nil {
				e, _ := json.Marshal(r)
				b.Write(e)
				continue
			}
			b.Write(r.New)
		}
		b.WriteByte(']')
		return b.Bytes(), nil
	case "count":
		n, err := st.Count(name)
		if err != nil {
			return nil, err
		}
		return json.Marshal(n)
	case "create":
		var o core.CollectionOptions
		if payload != "" {
			dec := json.NewDecoder(bytes.NewReader([]byte(payload)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&o); err != nil {
				return nil, &argError{"createCollection: options must be {keyOptions}: " + err.Error()}
			}
		}
		if err := st.CreateCollectionContext(ctx, name, o); err != nil {
			return nil, err
		}
		return json.Marshal(map[string]string{"name": name})
	}
	return nil, &argError{fmt.Sprintf("collection: unknown operation %q", op)}
}

// selectorOf reads a replace/update/remove payload: a document with _key or
// _id (replace, update), or a key or id (remove).
func selectorOf(op, payload string) (string, []byte, error) {
	v := gjson.Parse(payload)
	switch {
	case op == "remove" && v.Type == gjson.String:
		return v.Str, nil, nil
	case v.IsObject():
		if key := v.Get("_key"); key.Type == gjson.String {
			return key.Str, []byte(payload), nil
		}
		if id := v.Get("_id"); id.Type == gjson.String {
			return id.Str, []byte(payload), nil
		}
	}
	return "", nil, &argError{op + ": the document needs a _key or an _id"}
}

// arrayItems splits a JSON array payload into its items.
func arrayItems(op, payload string) ([][]byte, error) {
	v := gjson.Parse(payload)
	if !gjson.Valid(payload) || !v.IsArray() {
		return nil, &argError{op + ": want an array"}
	}
	var items [][]byte
	v.ForEach(func(_, it gjson.Result) bool {
		items = append(items, []byte(it.Raw))
		return true
	})
	return items, nil
}
