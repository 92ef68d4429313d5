//go:build js && wasm

package main

import (
	"encoding/json"
	"strconv"
	"sync"
	"syscall/js"

	"github.com/hilodb/hilodb/core"
)

// Queries and indexes (core's find.go, index.go and live.go). Queries,
// selectors and index definitions cross as JSON text, made by index.js
// with JSON.stringify; results come back as JSON text too, parsed once by
// the host's JSON.parse:
//
//	createIndex(collection, defText)      → Promise<{result: "created"|"exists", name}>
//	getIndexes(collection)                → Promise<{indexes: [{name, type, def: {fields: [{f: "asc"}]}}]}>
//	deleteIndex(collection, name)         → Promise<{ok: true}>
//	find(collection, queryText, explain, asText) → Promise<{docs, bookmark?}>, or with explain the plan, or with asText the page's JSON text as UTF-8 bytes (a Uint8Array of its own buffer)
//	count(collection, selectorText)       → Promise<number>
//	watchQuery(collection, queryText, fn) → Promise<watch number>; fn(resultText) for each result, what changed (liveResultJSON)
//	unwatchQuery(watch number)            → Promise<undefined>

// queryCalls are the query functions of the api.
type queryCalls struct {
	createIndex, getIndexes, deleteIndex, find, count, watchQuery, unwatchQuery js.Func

	pageMu  sync.Mutex
	pageBuf []byte // find's pages are made here, then copied into JavaScript
	out     []byte // the fast path's last answer (fastfind.go), until the next
}

// maxPageBuf bounds the buffer find keeps between calls.
const maxPageBuf = 1 << 20

func (a *api) newQueryCalls() {
	a.q.createIndex = async(a.createIndexArgs)
	a.q.getIndexes = immediate(a.getIndexesArgs)
	a.q.deleteIndex = async(a.deleteIndexArgs)
	a.q.find = immediate(a.findArgs)
	a.q.count = immediate(a.countArgs)
	a.q.watchQuery = async(a.watchQueryArgs)
	a.q.unwatchQuery = async(a.unwatchQueryArgs)
}

// bindQueries sets the query functions on the store object of store id.
func (a *api) bindQueries(obj js.Value, id int) {
	for name, fn := range map[string]js.Func{
		"createIndex": a.q.createIndex, "getIndexes": a.q.getIndexes, "deleteIndex": a.q.deleteIndex,
		"find": a.q.find, "count": a.q.count, "watchQuery": a.q.watchQuery, "unwatchQuery": a.q.unwatchQuery,
	} {
		obj.Set(name, fn.Call("bind", js.Null(), id))
	}
}

// collectionAndText reads the collection and a JSON text after the store
// number: the arguments of every query call.
func collectionAndText(args []js.Value, op, what string) (coll, text string, err error) {
	if coll, err = stringArg(args, 1, op+": collection"); err != nil {
		return "", "", err
	}
	text, err = stringArg(args, 2, op+": "+what)
	return coll, text, err
}

func (a *api) createIndexArgs(args []js.Value) (func() (any, error), error) {
	coll, text, err := collectionAndText(args, "createIndex", "index")
	if err != nil {
		return nil, err
	}
	var def core.IndexDef
	if err := json.Unmarshal([]byte(text), &def); err != nil {
		return nil, &argError{"createIndex: want {fields: [names], name?}"}
	}
	return a.onStore(args, func(h *handle) (any, error) {
		name, created, err := h.store.CreateIndex(h.ctx, coll, def)
		if err != nil {
			return nil, err
		}
		result := "exists"
		if created {
			result = "created"
		}
		return object("result", result, "name", name), nil
	})
}

func (a *api) getIndexesArgs(args []js.Value) (func() (any, error), error) {
	return a.withString(args, "getIndexes: collection", func(h *handle, coll string) (any, error) {
		if err := core.ValidateCollectionName(coll); err != nil {
			return nil, err
		}
		defs, err := h.store.Indexes(coll)
		if err != nil {
			return nil, err
		}
		// PouchDB's shape: each field as {name: "asc"}.
		type def struct {
			Fields []map[string]string `json:"fields"`
		}
		type index struct {
			Name string `json:"name"`
			Type string `json:"type"`
			Def  def    `json:"def"`
		}
		out := struct {
			Indexes []index `json:"indexes"`
		}{Indexes: make([]index, len(defs))}
		for i, d := range defs {
			ix := index{Name: d.Name, Type: "json", Def: def{Fields: make([]map[string]string, len(d.Fields))}}
			for j, f := range d.Fields {
				ix.Def.Fields[j] = map[string]string{f: "asc"}
			}
			out.Indexes[i] = ix
		}
		return jsonValue(out)
	})
}

func (a *api) deleteIndexArgs(args []js.Value) (func() (any, error), error) {
	coll, name, err := collectionAndText(args, "deleteIndex", "name")
	if err != nil {
		return nil, err
	}
	return a.onStore(args, func(h *handle) (any, error) {
		if err := h.store.DeleteIndex(h.ctx, coll, name); err != nil {
			return nil, err
		}
		return object("ok", true), nil
	})
}

// findArgs runs a query on the event loop (a read of the in-memory store):
// its page as {docs, bookmark?}, or with a third argument true its plan;
// with a fourth argument true, the page as its JSON text in UTF-8, a
// Uint8Array of its own buffer (for a page whose store runs in a worker:
// the buffer is handed over to the page, not copied, and no object graph
// is cloned member by member).
func (a *api) findArgs(args []js.Value) (func() (any, error), error) {
	coll, text, err := collectionAndText(args, "find", "query")
	if err != nil {
		return nil, err
	}
	explain := arg(args, 3).Truthy()
	asText := arg(args, 4).Truthy()
	return a.onStore(args, func(h *handle) (any, error) {
		q, err := core.ParseQuery([]byte(text))
		if err != nil {
			return nil, err
		}
		if explain {
			res, err := h.store.Find(coll, q)
			if err != nil {
				return nil, err
			}
			return jsonValue(res.Plan)
		}
		// The page's text is made from the stored documents in a buffer
		// kept between calls (none copied on its own), and copied once,
		// into JavaScript, before the buffer serves another call: as bytes
		// for a page in another thread (no string made here to be copied
		// again into the message), as objects for this one.
		a.q.pageMu.Lock()
		defer a.q.pageMu.Unlock()
		page, _, err := h.store.AppendFind(a.q.pageBuf[:0], coll, q)
		if err != nil {
			return nil, err
		}
		if cap(page) <= maxPageBuf {
			a.q.pageBuf = page
		}
		if asText {
			return toJS(page), nil
		}
		return parseJSON(page), nil
	})
}

func (a *api) countArgs(args []js.Value) (func() (any, error), error) {
	coll, text, err := collectionAndText(args, "count", "selector")
	if err != nil {
		return nil, err
	}
	return a.onStore(args, func(h *handle) (any, error) {
		sel, err := core.ParseSelector([]byte(text))
		if err != nil {
			return nil, err
		}
		return h.store.CountWhere(coll, sel)
	})
}

// watches are the live queries of every store of the api, by number.
type watches struct {
	mu   sync.Mutex
	last int
	all  map[int]*liveWatch
}

// liveWatch is one live query: its store and the function that stops it.
type liveWatch struct {
	h    *handle
	stop func()
}

func (a *api) watchQueryArgs(args []js.Value) (func() (any, error), error) {
	coll, text, err := collectionAndText(args, "watchQuery", "query")
	if err != nil {
		return nil, err
	}
	fn := arg(args, 3)
	if fn.Type() != js.TypeFunction {
		return nil, &argError{"watchQuery: callback must be a function"}
	}
	return a.onStore(args, func(h *handle) (any, error) {
		q, err := core.ParseQuery([]byte(text))
		if err != nil {
			return nil, err
		}
		// The watch is known before its first result can come.
		a.watches.mu.Lock()
		a.watches.last++
		n := a.watches.last
		w := &liveWatch{h: h}
		a.watches.all[n] = w
		a.watches.mu.Unlock()
		stop, err := h.store.WatchQuery(coll, q, func(r core.LiveResult) {
			// From the query's goroutine: the callback only queues the text.
			protect(func() (any, error) { fn.Invoke(string(liveResultJSON(r))); return nil, nil })
		})
		if err != nil {
			a.dropWatch(n)
			return nil, err
		}
		a.watches.mu.Lock()
		if a.watches.all[n] == w {
			w.stop = stop
		} else {
			defer stop() // unwatched already
		}
		a.watches.mu.Unlock()
		return n, nil
	})
}

func (a *api) unwatchQueryArgs(args []js.Value) (func() (any, error), error) {
	v := arg(args, 1)
	if v.Type() != js.TypeNumber {
		return nil, &argError{"unwatchQuery: want the number watchQuery gave"}
	}
	n := v.Int()
	return func() (any, error) { a.dropWatch(n); return nil, nil }, nil
}

// dropWatch stops watch n, if it runs.
func (a *api) dropWatch(n int) {
	a.watches.mu.Lock()
	w := a.watches.all[n]
	delete(a.watches.all, n)
	a.watches.mu.Unlock()
	if w != nil && w.stop != nil {
		w.stop()
	}
}

// dropWatches stops every live query of h (the store is closing).
func (a *api) dropWatches(h *handle) {
	a.watches.mu.Lock()
	var stops []func()
	for n, w := range a.watches.all {
		if w.h == h {
			delete(a.watches.all, n)
			if w.stop != nil {
				stops = append(stops, w.stop)
			}
		}
	}
	a.watches.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}

// liveResultJSON is a live query's result as query.js takes it, what
// changed since the result before: {"n": the count of documents, "changes":
// [{"type", "id", "index", "oldIndex"}], "docs": the document of each change
// that has an index, in the changes' order}. query.js (applyLive) makes
// the whole result from the one before: the documents no change names keep
// their order. A first result adds every document.
func liveResultJSON(r core.LiveResult) []byte {
	size := 64
	for _, c := range r.Changes {
		size += len(c.Doc) + len(c.ID) + 64
	}
	out := strconv.AppendInt(append(make([]byte, 0, size), `{"n":`...), int64(len(r.Docs)), 10)
	out = append(out, `,"changes":[`...)
	for i, c := range r.Changes {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendString(append(out, `{"type":`...), c.Kind)
		out = appendString(append(out, `,"id":`...), c.ID)
		out = strconv.AppendInt(append(out, `,"index":`...), int64(c.Index), 10)
		out = strconv.AppendInt(append(out, `,"oldIndex":`...), int64(c.OldIndex), 10)
		out = append(out, '}')
	}
	out = append(out, `],"docs":[`...)
	first := true
	for _, c := range r.Changes {
		if c.Index < 0 {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		out, first = append(out, c.Doc...), false
	}
	return append(out, "]}"...)
}

// appendString appends s as a JSON string.
func appendString(out []byte, s string) []byte {
	// Most ids need no escape: quoted as they are, without the encoder's
	// reflection (tens of microseconds under WebAssembly).
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return append(out, b...)
		}
	}
	return append(append(append(out, '"'), s...), '"')
}
