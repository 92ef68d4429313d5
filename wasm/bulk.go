//go:build js && wasm

package main

import (
	"context"
	"encoding/json"
	"errors"
	"syscall/js"
	"unsafe"

	"github.com/hilodb/hilodb/core"
)

// maxPutMany bounds the documents of one putMany call.
const maxPutMany = 100000

// putManyArgs: putMany(collection, docs) stores docs, an array, in one
// transaction (one durable append) and resolves to one entry per document,
// in order: the stored document, or {__hiloError: {code, num, message}} for
// one that failed (index.js turns those into Errors). A failed document
// does not stop the others. putMany(collection, docs, key, seq, true)
// resolves to the same array as one JSON text instead.
func (a *api) putManyArgs(args []js.Value) (func() (any, error), error) {
	id, err := storeNumber(args)
	if err != nil {
		return nil, err
	}
	collection := arg(args, 1)
	if collection.Type() != js.TypeString {
		return nil, &argError{"putMany: collection must be a string"}
	}
	coll := collection.String()
	docs, text, err := docsArg(arg(args, 2))
	if err != nil {
		return nil, err
	}
	rcpt, err := receiptArgAt(args, 3)
	if err != nil {
		return nil, err
	}
	// The results as one JSON array text rather than parsed: a shared
	// store's host hands them to the tab as they are (index.js's
	// _putManyText).
	asText := arg(args, 5).Truthy()
	return func() (any, error) {
		return a.call(id, func(h *handle) (any, error) {
			var rs []core.Result
			// core.InsertMany tells the HiLo how many numbers the batch may
			// take: one journal write and one lease per range it needs.
			err := withCause(rcpt.on(h.ctx), func(ctx context.Context) (err error) {
				// A _rev in a document is a precondition, as in put.
				honour := false
				opts := &core.WriteOptions{OverwriteMode: core.OverwriteReplace, ReturnNew: true, ShareNew: true, IgnoreRevs: &honour}
				if text == nil {
					rs, err = h.store.InsertMany(ctx, coll, docs, opts)
					return err
				}
				rs, err = h.store.InsertArray(ctx, coll, text, maxPutMany, opts)
				switch {
				case errors.Is(err, core.ErrBadParameter):
					return &argError{"putMany: at most 100,000 documents per call"}
				case errors.Is(err, core.ErrBadJSON):
					return &argError{"putMany: docs must be an array"}
				}
				return err
			})
			if err != nil {
				return nil, err
			}
			size := 2
			for _, r := range rs {
				size += len(r.New) + 1
			}
			out := make([]byte, 0, size) // the errors' few bytes aside, the size it ends at
			out = append(out, '[')
			for i, r := range rs {
				if i > 0 {
					out = append(out, ',')
				}
				if r.Err != nil {
					code, num := describe(r.Err)
					e, _ := json.Marshal(map[string]any{"__hiloError": map[string]any{"code": code, "num": num, "message": r.Err.Error()}})
					out = append(out, e...)
					continue
				}
				out = append(out, r.New...)
			}
			out = append(out, ']')
			if asText {
				// JavaScript gets a copy of the text; out is not kept.
				return unsafe.String(unsafe.SliceData(out), len(out)), nil
			}
			return parseJSON(out), nil
		})
	}, nil
}

// docsArg reads putMany's documents: one JSON array text (what index.js
// sends: one string crosses into Go, not one per document), which core
// splits as it reads each document (Store.InsertArray), or an array.
func docsArg(v js.Value) (docs [][]byte, text []byte, err error) {
	if v.Type() == js.TypeString {
		// One copy of the text for all documents: each is a slice of it,
		// read in place (core never writes to a document it is given, so
		// the string's bytes are never written).
		s := v.String()
		if len(s) == 0 {
			return nil, nil, &argError{"putMany: docs must be an array"}
		}
		return nil, unsafe.Slice(unsafe.StringData(s), len(s)), nil
	}
	if v.Type() != js.TypeObject || !jsArray.Call("isArray", v).Bool() {
		return nil, nil, &argError{"putMany: docs must be an array"}
	}
	n := v.Length()
	if n > maxPutMany {
		return nil, nil, &argError{"putMany: at most 100,000 documents per call"}
	}
	docs = make([][]byte, n)
	for i := range n {
		t, err := docText(v.Index(i))
		if err != nil {
			return nil, nil, err
		}
		docs[i] = []byte(t)
	}
	return docs, nil, nil
}

// listArgs: list(collection, limit, after) resolves to {docs, next}: up to
// limit documents of the collection in key order after the _id after, and
// the cursor for the next page (null after the last).
func (a *api) listArgs(args []js.Value) (func() (any, error), error) {
	id, err := storeNumber(args)
	if err != nil {
		return nil, err
	}
	coll, err := stringArg(args, 1, "list: collection")
	if err != nil {
		return nil, err
	}
	limit := 0
	switch v := arg(args, 2); v.Type() {
	case js.TypeNumber:
		f := v.Float()
		if f != float64(int(f)) || f < 1 || f > core.MaxListLimit {
			return nil, &argError{"list: limit must be a whole number from 1 to 10,000"}
		}
		limit = int(f)
	case js.TypeUndefined, js.TypeNull:
	default:
		return nil, &argError{"list: limit must be a number"}
	}
	after := ""
	switch v := arg(args, 3); v.Type() {
	case js.TypeString:
		after = v.String()
	case js.TypeUndefined, js.TypeNull:
	default:
		return nil, &argError{"list: after must be a string (the next cursor of a page)"}
	}
	return func() (any, error) {
		return a.call(id, func(h *handle) (any, error) {
			p, err := h.store.List(coll, after, limit)
			if err != nil {
				return nil, err
			}
			size := 32
			for _, d := range p.Docs {
				size += len(d) + 1
			}
			out := make([]byte, 0, size)
			out = append(out, `{"docs":[`...)
			for i, d := range p.Docs {
				if i > 0 {
					out = append(out, ',')
				}
				out = append(out, d...)
			}
			out = append(out, `],"next":`...)
			if p.Next == "" {
				out = append(out, "null"...)
			} else {
				nb, _ := json.Marshal(p.Next)
				out = append(out, nb...)
			}
			return parseJSON(append(out, '}')), nil
		})
	}, nil
}

// changesArgs: changes(since, limit) resolves to {results: [{seq, id, rev,
// deleted, doc}], last, head}: the documents written after the local
// sequence number since, in the order of their latest writes, and the
// feed's newest sequence number (changeFeed stores).
func (a *api) changesArgs(args []js.Value) (func() (any, error), error) {
	nums := [2]int64{}
	for i, what := range []string{"since", "limit"} {
		switch v := arg(args, i+1); v.Type() {
		case js.TypeNumber:
			f := v.Float()
			if f != float64(int64(f)) || f < 0 {
				return nil, &argError{"changes: " + what + " must be a whole number of 0 or more"}
			}
			nums[i] = int64(f)
		case js.TypeUndefined, js.TypeNull:
		default:
			return nil, &argError{"changes: " + what + " must be a number"}
		}
	}
	return a.onStore(args, func(h *handle) (any, error) {
		es, last, err := h.store.Changes(nums[0], int(nums[1]))
		if err != nil {
			return nil, err
		}
		type entry struct {
			Seq     int64           `json:"seq"`
			ID      string          `json:"id"`
			Rev     string          `json:"rev"`
			Deleted bool            `json:"deleted"`
			Doc     json.RawMessage `json:"doc"`
		}
		out := make([]entry, len(es))
		for i, e := range es {
			out[i] = entry{Seq: e.Seq, ID: e.ID, Rev: e.Rev, Deleted: e.Deleted, Doc: e.Doc}
			if e.Deleted {
				out[i].Doc = json.RawMessage("null")
			}
		}
		head, err := h.store.FeedHead()
		if err != nil {
			return nil, err
		}
		return jsonValue(map[string]any{"results": out, "last": last, "head": max(head, last)})
	})
}

var jsArray = js.Global().Get("Array")
