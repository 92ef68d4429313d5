//go:build js && wasm

package main

import (
	"context"
	"encoding/json"
	"errors"
	"syscall/js"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/idgen"
)

// onStore reads the store number of a call and returns the work that runs
// fn on that store.
func (a *api) onStore(args []js.Value, fn func(h *handle) (any, error)) (func() (any, error), error) {
	id, err := storeNumber(args)
	if err != nil {
		return nil, err
	}
	return func() (any, error) { return a.call(id, fn) }, nil
}

// withString is onStore for calls that take one string after the store
// number (what names it in errors).
func (a *api) withString(args []js.Value, what string, fn func(h *handle, s string) (any, error)) (func() (any, error), error) {
	id, err := storeNumber(args)
	if err != nil {
		return nil, err
	}
	s, err := stringArg(args, 1, what)
	if err != nil {
		return nil, err
	}
	return func() (any, error) { return a.call(id, func(h *handle) (any, error) { return fn(h, s) }) }, nil
}

// jsonValue turns v into a JavaScript value through JSON.
func jsonValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return parseJSON(b), nil
}

// call runs fn on the store numbered id, counting it as a call under way so
// that close waits for it.
func (a *api) call(id int, fn func(h *handle) (any, error)) (any, error) {
	a.mu.Lock()
	h := a.stores[id]
	a.mu.Unlock()
	if h == nil {
		return nil, errClosed
	}
	if err := h.begin(); err != nil {
		return nil, err
	}
	defer h.calls.Done()
	return fn(h)
}

func (a *api) putArgs(args []js.Value) (func() (any, error), error) {
	id, err := storeNumber(args)
	if err != nil {
		return nil, err
	}
	collection := arg(args, 1)
	if collection.Type() != js.TypeString {
		return nil, &argError{"put: collection must be a string"}
	}
	coll := collection.String()
	doc, err := docText(arg(args, 2))
	if err != nil {
		return nil, err
	}
	rcpt, err := receiptArgAt(args, 3)
	if err != nil {
		return nil, err
	}
	return func() (any, error) {
		return a.call(id, func(h *handle) (any, error) {
			var out []byte
			err := withCause(rcpt.on(h.ctx), func(ctx context.Context) (err error) {
				out, err = h.store.Put(ctx, coll, []byte(doc))
				return err
			})
			if err != nil {
				return nil, err
			}
			return parseJSON(out), nil
		})
	}, nil
}

func (a *api) getArgs(args []js.Value) (func() (any, error), error) {
	return a.withString(args, "get: id", func(h *handle, docID string) (any, error) {
		out, err := h.store.Get(docID)
		if err != nil {
			return nil, err
		}
		return parseJSON(out), nil
	})
}

// getTextCall is get without a Promise: it returns the document's JSON text,
// or an Error, at once (index.js parses and wraps it). One entry into Go, no
// goroutine, no call back into JavaScript. It is the ordinary path behind
// the fast one (fastget.go): the document it reads enters the store's
// mirror, and the output buffer grows to fit it, so the next read of it can
// take the fast path.
func (a *api) getTextCall(id int, args []js.Value) any {
	docID, err := stringArg(args, 1, "get: id")
	if err != nil {
		return toJSError(err)
	}
	out, err := a.call(id, func(h *handle) (any, error) {
		gen := h.docs.Gen()
		text, err := h.store.GetString(docID)
		if err != nil {
			return nil, err
		}
		h.docs.Fill(gen, docID, text)
		reads.Grow(len(text))
		return text, nil
	})
	if err != nil {
		return toJSError(err)
	}
	return out
}

// putTextCall is put without a Promise, on the event loop, for a put that
// needs nothing to wait for: an id from a range at hand (idgen.NoWait), and
// no durable write to wait for (no persistence, relaxed durability, or a log
// appended at once). It returns the stored document's JSON text or an Error
// at once, or undefined when the put would have to wait (a lease, an
// identity, the journal): index.js then calls put, which does. Nothing is
// stored in that case. A put committed while the log is being compacted is
// stored and returns a Promise of the text, settled once it is durable.
func (a *api) putTextCall(id int, args []js.Value) any {
	coll, err := stringArg(args, 1, "put: collection")
	if err != nil {
		return toJSError(err)
	}
	text, err := stringArg(args, 2, "put: document")
	if err != nil {
		return toJSError(err)
	}
	rcpt, err := receiptArgAt(args, 3)
	if err != nil {
		return toJSError(err)
	}
	return a.quickPut(id, coll, []byte(text), rcpt, false)
}

// putInCall is putTextCall with its strings passed through the write
// buffer (writes.go) rather than as JavaScript strings, and the stored
// document's text returned in the fast path's output buffer: putIn(store,
// seq) reads the lengths from the buffer's header and the collection, the
// document's JSON text and the receipt's key (none when its length is 0),
// in that order, as UTF-8 after it; seq is the receipt's sequence, absent
// without a key. It returns the length of the stored document's text in
// the output buffer (read it before the next call into Go), or as putText
// does: undefined, an Error, a Promise, or the text itself when it does not
// fit the output buffer. It takes no JavaScript string or reference in and
// hands none back: each of those costs a call across the boundary and a
// finalizer.
func (a *api) putInCall(id int, args []js.Value) any {
	coll, text, key, err := writes.take()
	if err != nil {
		return toJSError(err)
	}
	var rcpt *receiptArg
	if key != "" {
		seq := arg(args, 1)
		if seq.Type() != js.TypeNumber {
			return toJSError(&argError{"receipt: want a key string and a sequence number"})
		}
		rcpt = &receiptArg{key: key, seq: int64(seq.Float())}
	}
	return a.quickPut(id, coll, text, rcpt, true)
}

// quickPut stores text in collection coll of store id if it can without
// waiting (see putTextCall), and answers as putTextCall does; with toOut,
// the stored text goes into the fast path's output buffer when it fits,
// and its length is the answer.
func (a *api) quickPut(id int, coll string, text []byte, rcpt *receiptArg, toOut bool) any {
	wait := false
	var later *core.Deferred // the write's durability, when it must be waited for
	var doc []byte
	_, err := a.call(id, func(h *handle) (any, error) {
		if !h.db.QuickWrites() {
			wait = true
			return nil, nil
		}
		ctx := idgen.NoWait(rcpt.on(h.ctx))
		if h.db.AppendsNow() {
			ctx, later = core.DeferDurable(ctx)
		}
		err := withCause(ctx, func(ctx context.Context) (err error) {
			doc, err = h.store.Put(ctx, coll, text)
			return err
		})
		if errors.Is(err, idgen.ErrWouldWait) {
			wait = true
			return nil, nil
		}
		return nil, err
	})
	switch {
	case err != nil:
		return toJSError(err)
	case wait:
		return js.Undefined()
	case later != nil && later.Pending():
		// Committed while the log was being compacted: the put is stored
		// and answers once its frame is appended after the compaction.
		out := string(doc)
		return promise(func() (any, error) {
			if err := later.Wait(); err != nil {
				return nil, err
			}
			return out, nil
		})
	}
	if toOut {
		reads.Grow(len(doc))
		if n, ok := reads.Put(doc); ok {
			return n
		}
	}
	return string(doc)
}

func (a *api) deleteArgs(args []js.Value) (func() (any, error), error) {
	rcpt, err := receiptArgAt(args, 2)
	if err != nil {
		return nil, err
	}
	return a.withString(args, "delete: id", func(h *handle, docID string) (any, error) {
		return nil, h.store.DeleteContext(rcpt.on(h.ctx), docID)
	})
}

func (a *api) infoArgs(args []js.Value) (func() (any, error), error) {
	return a.onStore(args, func(h *handle) (any, error) {
		connected := h.client.Connected()
		return object("node", h.store.Clock().Node(), "serverTag", h.client.ServerTag(), "connected", connected,
			"connecting", !connected && h.db.Connecting()), nil
	})
}

func (a *api) syncArgs(args []js.Value) (func() (any, error), error) {
	return a.onStore(args, func(h *handle) (any, error) {
		pushed, pulled, err := h.syncer.round(h.ctx)
		if err != nil {
			return nil, err
		}
		return object("pushed", pushed, "pulled", pulled), nil
	})
}

func (a *api) pendingArgs(args []js.Value) (func() (any, error), error) {
	return a.onStore(args, func(h *handle) (any, error) { return h.store.PendingCount() })
}

func (a *api) conflictsArgs(args []js.Value) (func() (any, error), error) {
	if arg(args, 1).IsUndefined() {
		// No id: the ids of the documents with unresolved conflicts.
		return a.onStore(args, func(h *handle) (any, error) {
			ids, err := h.store.ConflictIDs()
			if err != nil {
				return nil, err
			}
			return jsonValue(append([]string{}, ids...))
		})
	}
	return a.withString(args, "conflicts: id", func(h *handle, docID string) (any, error) {
		vs, err := h.store.Conflicts(docID)
		if err != nil {
			return nil, err
		}
		out := make([]versionJSON, len(vs))
		for i, v := range vs {
			out[i] = toVersionJSON(v)
		}
		return jsonValue(out)
	})
}

func (a *api) clearConflictsArgs(args []js.Value) (func() (any, error), error) {
	return a.withString(args, "clearConflicts: id", func(h *handle, docID string) (any, error) {
		return nil, h.store.ClearConflicts(docID)
	})
}

func (a *api) flushArgs(args []js.Value) (func() (any, error), error) {
	return a.onStore(args, func(h *handle) (any, error) { return nil, h.db.Flush() })
}

func (a *api) closeArgs(args []js.Value) (func() (any, error), error) {
	id, err := storeNumber(args)
	if err != nil {
		return nil, err
	}
	return func() (any, error) {
		a.mu.Lock()
		h := a.stores[id]
		delete(a.stores, id)
		a.mu.Unlock()
		reads.Remove(int32(id))
		if h == nil {
			return nil, nil // closing twice is fine
		}
		a.dropWatches(h)
		return nil, h.shutdown()
	}, nil
}
