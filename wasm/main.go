//go:build js && wasm

// Command wasm is hilodb's browser build: the document store (core), HiLo ids
// (idgen) and the sync client (client) compiled to WebAssembly, exposed to
// JavaScript as globalThis.__hilodb. It is the only part of the browser build
// that touches syscall/js; the npm package in js/ loads it and wraps it in its
// public API.
//
// The global has one function, openStore(options), which returns a Promise
// of a store object:
//
//	put(collection, doc)  → Promise<stored document>
//	get(id)               → Promise<document>
//	delete(id)            → Promise<undefined>
//	info()                → Promise<{node, serverTag, connected, connecting}>
//	sync()                → Promise<{pushed, pulled}>: one push and pull round
//	pending()             → Promise<number of local writes awaiting the server>
//	conflicts(id)         → Promise<[{id, rev, doc, deleted}]>: losing versions
//	clearConflicts(id)    → Promise<undefined>
//	flush()               → Promise<undefined>: wait until every write is durable (persist)
//	getText(id)           → the document's JSON text, or an Error (no Promise)
//	collection(op, name, payload, options) → ArangoDB-style operations (collections.go)
//	saveBatch(items), generateId(collection), names(kind, name) → sessions (sessions.go)
//	put, putText, putMany, saveBatch, delete and collection take two more arguments, key and seq: a receipt
//	                        stored in the write's transaction (receipts.go)
//	receipt(key)          → Promise<JSON text | undefined>: the receipt under key
//	dropReceipts(mode, prefixes) → Promise<count>: drop receipts by key prefix
//	putText(collection, text) → the stored document's JSON text, an Error,
//	                        undefined when the put must wait (call put then),
//	                        or a Promise of the text (stored during a compaction)
//	putIn(seq)            → putText with its strings in the write buffer and
//	                        the answer's text in the output buffer (calls.go)
//	putMany(collection, docs) → Promise<[doc | {__hiloError}]>: one transaction (bulk.go);
//	                        a fifth argument true: the array as one JSON text
//	list(collection, limit, after) → Promise<{docs, next}>: a page in key order (bulk.go)
//	createIndex, getIndexes, deleteIndex, find, count, watchQuery, unwatchQuery
//	                      → queries and indexes (query.go)
//	close()               → Promise<undefined>
//	number                the store's number, for the fast path of get
//	dropLog               with the dropLog option: the address of the drop
//	                        log index.js's read cache reads (cache.go)
//	quickWrites           whether putText can answer a put at once (database.DB.QuickWrites)
//
// The global also has gc(), a Promise of a finished garbage collection
// (runtime.GC), for tests that interleave collections with calls.
//
// Beside it, the WebAssembly instance exports the fast path of get
// (fastget.go): hilodbGet(store, n), hilodbInput(), hilodbInputSize() and
// hilodbOutput(). index.js writes an id into the input buffer, calls
// hilodbGet and reads the JSON text out of the output buffer, without a
// js.FuncOf; a negative answer sends it to getText. It also exports
// hilodbWriteInput() and hilodbWriteInputSize(), the write buffer putIn
// reads a put's strings from (writes.go), and find's fast path
// (fastfind.go): hilodbFind(store, collLen, textLen) runs the query whose
// collection and text index.js wrote into the write buffer and answers
// with the page's length in the page buffer, at hilodbFindOutput().
//
// The options are {url, database, token, node} and:
//
//	sync        true: replicate live for the store's lifetime (default false)
//	onConflict  "server" (default), "local", or a function that index.js
//	            wraps: (localJSON, remoteJSON) → {kind, doc?, message?}
//	emit        a function (type, payload) the store reports events to:
//	            "conflict" and "change" with JSON text, "error" with an Error
//	persist     a storage adapter (see persister) that keeps the store and
//	            its HiLo ranges across reloads
//	durability  with persist: "strict" (default), a write resolves once the
//	            adapter's append does (index.js's adapter goes down to the
//	            disk for its "flushed"); "relaxed", at once, stored moments
//	            later
//	requestTimeout, heartbeat
//	            milliseconds (client.Options): how long a call waits for a
//	            reply, how often a quiet connection is pinged
//	invalidate  a function (ids, head) index.js's read cache drops the
//	            documents a write changed with (ids joined by NUL), and its
//	            change feed learns its new head from (-1: not moved)
//	dropLog     true: the ids go to a drop log in the WebAssembly memory
//	            instead, which the cache reads itself (cache.go)
//
// put takes the id from the document's _id, else its _key, else a HiLo id
// such as "orders/1-A" from a range leased from the server; the other id
// strategies of core work as well ("companies|" gets an identity from the
// server, "" a UUID).
//
// The files: main.go opens and closes stores; calls.go holds the store
// methods, bulk.go putMany and list, bridge.go the Promise plumbing and
// argument checks, sources.go the sync layer behind core's id sources,
// persist.go the storage adapter, cache.go the read cache's invalidation
// and the document mirror, fastget.go the fast path of get, writes.go the write buffer of putIn, replicate.go
// live replication and events.
//
// Documents cross the boundary as JSON text: put takes a JSON string (or an
// object, which it turns into one with the host's JSON.stringify), and results
// are made with the host's JSON.parse. That is faster than walking objects
// through syscall/js value by value.
//
// openStore dials the sync server and says hello before it resolves, so a
// refused token shows at once; when the server cannot be reached it resolves
// anyway (offline start) and the client connects on the first call that needs
// the server. Several stores may be open in one Go instance; each has its own
// connection, its own HiLo ranges and its own node tag.
//
// # Errors
//
// Every failure, a panic included, rejects the Promise with a JavaScript
// Error carrying code (a stable word such as "illegal_key", "not_found",
// "unauthorized") and num (such as 1221, 1202, 401). Document errors use
// core's codes, errors from the server use the server's, and a call that
// needs the server while it cannot be reached gets "needs_server" (1900).
//
// # Concurrency
//
// Functions called from JavaScript run on its event loop and must not block
// it: they only read their arguments and start a goroutine, whose result
// settles the returned Promise. Any number of calls may be under way at once.
// Calls from Go into JavaScript (the merge function, emit, the storage
// adapter) are made from goroutines; Promises they return are waited for in
// the goroutine, never on the event loop. Live replication and the snapshot
// journal's flusher are goroutines of the store, stopped and waited for by close.
package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall/js"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/database"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/internal/gcfloor"
	"github.com/hilodb/hilodb/wasm/mirror"
)

// globalName is the property of globalThis that holds the API.
const globalName = "__hilodb"

// readyHook, if it is a function on globalThis when the program starts, is
// called with the API once it is installed, so a loader need not poll.
const readyHook = "__hilodbOnReady"

const (
	// dialTimeout bounds openStore's first connection attempt; past it the
	// store opens offline.
	dialTimeout = 10 * time.Second
	// drainTimeout is how long close waits for calls under way before it
	// cancels them.
	drainTimeout = 5 * time.Second
)

// Error codes and numbers of this layer, from the registry (package
// errcode), beside core's and the server's.
var (
	codeClosed, numClosed = errcode.Closed.Name, errcode.Closed.Num // the store was closed
	codePanic, numPanic   = errcode.Internal.Name, errcode.Internal.Num
	// codeRejected is a local write the server refused for a reason other
	// than a conflict; it stays pending.
	codeRejected, numRejected = errcode.Rejected.Name, errcode.Rejected.Num
)

// errClosed is returned for calls on a closed store.
var errClosed = errors.New("store is closed")

// argError is a bad argument from JavaScript.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

// hostError is a JavaScript host that lacks something the store needs.
type hostError struct{ msg string }

func (e *hostError) Error() string { return e.msg }

// panicError is a recovered panic, turned into an error so that it rejects
// a Promise instead of crossing into JavaScript.
type panicError struct{ value any }

func (e *panicError) Error() string { return fmt.Sprintf("internal error: panic: %v", e.value) }

var (
	jsPromise = js.Global().Get("Promise")
	jsError   = errorClass()
	jsJSON    = js.Global().Get("JSON")
	jsObject  = js.Global().Get("Object")
)

// errorClass is the class rejections are made with: the npm package's
// HiloError (js/errors.js), which runtime.js hands over as a global before
// Go starts, so an app can test `err instanceof HiloError`; else Error.
func errorClass() js.Value {
	if c := js.Global().Get("__hilodbHiloError"); c.Type() == js.TypeFunction {
		return c
	}
	return js.Global().Get("Error")
}

// gcHeadroom is the least a heap may grow between two collections
// (gcfloor): a small store's bulk write or pull then runs through a few
// collections instead of dozens, each of which falls on the one thread
// WebAssembly has. It is also what the module's memory, which never
// shrinks, may hold beyond the largest live heap.
const gcHeadroom = 32 << 20

func main() {
	gcfloor.Start(gcHeadroom)
	api := newAPI()
	findAPI.Store(api)
	js.Global().Set(globalName, api.value)
	if hook := js.Global().Get(readyHook); hook.Type() == js.TypeFunction {
		hook.Invoke(api.value)
	}
	// The program lives as long as the page: every call comes in as an event.
	select {}
}

// api is the set of stores open in this Go instance and the functions that
// reach them. Store objects handed to JavaScript are the shared functions
// bound to a store's number, so no per-store js.Func needs releasing.
type api struct {
	value js.Value // the object installed as globalThis.__hilodb

	put, get, del, info, close                         js.Func
	sync, pending, conflicts, clearConflicts, flush    js.Func
	putMany, list, getText, putText, putIn, collection js.Func
	saveBatch, generateID, names, identity             js.Func
	changes, receipt, dropReceipts                     js.Func
	q                                                  queryCalls // query.go
	watches                                            watches

	mu     sync.Mutex
	stores map[int]*handle
}

// lastStore numbers stores across every api of the process: the fast path
// (reads) knows them by number alone.
var lastStore atomic.Int32

func newAPI() *api {
	a := &api{stores: make(map[int]*handle), watches: watches{all: make(map[int]*liveWatch)}}
	a.newQueryCalls()
	a.put = async(a.putArgs)
	a.get = immediate(a.getArgs)
	a.getText = direct(a.getTextCall)
	a.putText = direct(a.putTextCall)
	a.putIn = direct(a.putInCall)
	a.del = async(a.deleteArgs)
	a.info = async(a.infoArgs)
	a.close = async(a.closeArgs)
	a.sync = async(a.syncArgs)
	a.pending = async(a.pendingArgs)
	a.conflicts = async(a.conflictsArgs)
	a.clearConflicts = async(a.clearConflictsArgs)
	a.flush = async(a.flushArgs)
	a.putMany = async(a.putManyArgs)
	a.collection = async(a.collectionArgs)
	a.saveBatch = async(a.saveBatchArgs)
	a.generateID = async(a.generateIDArgs)
	a.names = direct(a.namesCall)
	a.identity = async(a.identityArgs)
	a.changes = immediate(a.changesArgs)
	a.receipt = immediate(a.receiptArgs)
	a.dropReceipts = async(a.dropReceiptsArgs)
	a.list = async(a.listArgs)
	a.value = jsObject.New()
	a.value.Set("openStore", async(a.openArgs))
	a.value.Set("gc", async(func([]js.Value) (func() (any, error), error) {
		return func() (any, error) { runtime.GC(); return nil, nil }, nil
	}))
	a.value.Set("version", "1")
	return a
}

// handle is one open store: the document store, its id generator and the
// sync client it leases ranges from.
type handle struct {
	db     *database.DB
	store  *core.Store     // db.Store()
	client *client.Client  // db.Client()
	ctx    context.Context // cancelled when the store closes
	cancel context.CancelFunc

	syncer  *syncer    // replication rounds and events
	persist *persister // nil without the persist option
	events  *events
	docs    *mirror.Docs // the fast path's copy of the documents
	drops   *dropLog     // where writes leave ids for index.js's read cache, or nil

	mu     sync.Mutex
	closed bool
	calls  sync.WaitGroup

	// When the last call began (begin), in ns from born: the mirror's
	// seed waits for a quiet store (seedMirror).
	born  time.Time
	began atomic.Int64
}

// begin registers a call on h; the caller must call h.calls.Done after it.
// It fails once the store is closing.
func (h *handle) begin() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errClosed
	}
	h.calls.Add(1)
	h.began.Store(int64(time.Since(h.born)))
	return nil
}

// maxReserve bounds the reserve option: each reserved range is at least
// 32 numbers and at most 1,048,576, so 16 is plenty for any offline period.
const maxReserve = 16

// openOptions are openStore's arguments.
type openOptions struct {
	url, database, token, node string
	tokenFunc                  func(context.Context) (string, error) // token given as a function
	urls                       []string                              // further servers of a cluster
	sync                       bool
	reserve                    int // whole HiLo ranges held beyond the current one
	resolve                    core.Resolver
	events                     *events
	persist                    js.Value // a storage adapter, or undefined
	durability                 database.Durability
	requestTimeout, heartbeat  time.Duration // 0: the client's defaults
	changeFeed                 bool
	invalidate                 js.Value // index.js's read cache: drop(id), or undefined
	dropLog                    bool     // the cache reads a drop log (cache.go) instead
}

func (a *api) openArgs(args []js.Value) (func() (any, error), error) {
	o := arg(args, 0)
	if o.Type() != js.TypeObject {
		return nil, &argError{"openStore: want an options object {url, database, token}"}
	}
	var opts openOptions
	var err error
	if opts.url, err = stringField(o, "url", true); err != nil {
		return nil, err
	}
	if opts.urls, err = stringsField(o, "urls"); err != nil {
		return nil, err
	}
	if opts.database, err = stringField(o, "database", true); err != nil {
		return nil, err
	}
	if opts.token, opts.tokenFunc, err = tokenOption(o); err != nil {
		return nil, err
	}
	if opts.node, err = stringField(o, "node", false); err != nil {
		return nil, err
	}
	switch v := o.Get("sync"); v.Type() {
	case js.TypeBoolean:
		opts.sync = v.Bool()
	case js.TypeUndefined, js.TypeNull:
	default:
		return nil, &argError{"openStore: sync must be a boolean"}
	}
	switch v := o.Get("reserve"); v.Type() {
	case js.TypeNumber:
		n := v.Float()
		if n != float64(int(n)) || n < 0 || n > maxReserve {
			return nil, &argError{fmt.Sprintf("openStore: reserve must be a whole number from 0 to %d", maxReserve)}
		}
		opts.reserve = int(n)
	case js.TypeUndefined, js.TypeNull:
	default:
		return nil, &argError{"openStore: reserve must be a number"}
	}
	opts.events = &events{emit: o.Get("emit"), listening: o.Get("listening")}
	if v := o.Get("invalidate"); v.Type() == js.TypeFunction {
		opts.invalidate = v
		opts.dropLog = o.Get("dropLog").Truthy()
	}
	if opts.resolve, err = resolverFor(o.Get("onConflict"), opts.events); err != nil {
		return nil, err
	}
	switch v := o.Get("persist"); v.Type() {
	case js.TypeObject:
		for _, m := range []string{"load", "append", "compact", "saveNode", "saveRange", "close"} {
			if v.Get(m).Type() != js.TypeFunction {
				return nil, &argError{"openStore: persist must be a storage adapter with load, append, compact, saveNode, saveRange and close"}
			}
		}
		opts.persist = v
	case js.TypeUndefined, js.TypeNull:
	default:
		return nil, &argError{"openStore: persist must be a storage adapter"}
	}
	for _, f := range []struct {
		name string
		dst  *time.Duration
	}{{"requestTimeout", &opts.requestTimeout}, {"heartbeat", &opts.heartbeat}} {
		switch v := o.Get(f.name); v.Type() {
		case js.TypeNumber:
			ms := v.Float()
			if ms < 1 || ms > 3600e3 || ms != float64(int64(ms)) {
				return nil, &argError{"openStore: " + f.name + " must be a whole number of milliseconds from 1 to 3,600,000"}
			}
			*f.dst = time.Duration(ms) * time.Millisecond
		case js.TypeUndefined, js.TypeNull:
		default:
			return nil, &argError{"openStore: " + f.name + " must be a number of milliseconds"}
		}
	}
	switch v := o.Get("changeFeed"); v.Type() {
	case js.TypeBoolean:
		opts.changeFeed = v.Bool()
	case js.TypeUndefined, js.TypeNull:
	default:
		return nil, &argError{"openStore: changeFeed must be true or false"}
	}
	switch v := o.Get("durability"); {
	case v.Type() == js.TypeUndefined || v.Type() == js.TypeNull || v.Type() == js.TypeString && v.String() == "strict":
	case v.Type() == js.TypeString && v.String() == "relaxed":
		opts.durability = database.Relaxed
	default:
		return nil, &argError{"openStore: durability must be 'strict' or 'relaxed'"}
	}
	if js.Global().Get("WebSocket").Type() != js.TypeFunction {
		return nil, &hostError{"openStore: this JavaScript host has no global WebSocket; install one first (in Node 20, from the ws package)"}
	}
	return func() (any, error) { return a.open(opts) }, nil
}

// open connects a new store and returns its JavaScript object.
func (a *api) open(o openOptions) (_ any, err error) {
	h := &handle{events: o.events, docs: mirror.NewDocs(), born: time.Now()}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			h.cancel()
		}
	}()
	cfg := database.Config{URL: o.url, URLs: o.urls, Database: o.database, Token: o.token, TokenFunc: o.tokenFunc, Node: o.node,
		Durability: o.durability, Reserve: o.reserve, Resolve: o.resolve, Live: o.sync, ChangeFeed: o.changeFeed,
		RequestTimeout: o.requestTimeout, Heartbeat: o.heartbeat, DialTimeout: dialTimeout,
		PullLimit: pullLimit, PingEvery: pingEvery,
		OnStatus: func(up bool) {
			if up {
				h.events.status("online")
			} else {
				h.events.status("offline")
			}
		},
		OnSourceError: func(ctx context.Context, err error) { noteCause(ctx, err) },
	}
	if o.persist.Type() == js.TypeObject {
		// On failure index.js closes the adapter it made.
		p, err := loadPersister(o.persist)
		if err != nil {
			return nil, err
		}
		h.persist, cfg.Storage = p, p
	}
	cfg.Observe = h.docs.Apply
	if o.invalidate.Type() == js.TypeFunction {
		if o.dropLog {
			h.drops = newDropLog()
		}
		cfg.Observe = observeBoth(h.docs, newInvalidator(o.invalidate, h.drops))
	}
	h.syncer = newSyncer(h.events)
	h.syncer.hook(&cfg)
	db, err := database.Open(h.ctx, cfg)
	if err != nil {
		return nil, err
	}
	h.db, h.store, h.client = db, db.Store(), db.Client()
	if h.persist != nil {
		// Documents loaded from the snapshot and log came before the
		// mirror's Observe: it catches up in the background.
		h.calls.Add(1) // shutdown waits for it
		go h.seedMirror()
	}
	h.syncer.rep, h.syncer.cli = db.Replicator(), db.Client()

	a.mu.Lock()
	id := int(lastStore.Add(1))
	a.stores[id] = h
	a.mu.Unlock()
	reads.Add(int32(id), h.docs)

	obj := jsObject.New()
	for name, fn := range map[string]js.Func{
		"put": a.put, "get": a.get, "delete": a.del, "info": a.info, "close": a.close,
		"sync": a.sync, "pending": a.pending, "conflicts": a.conflicts, "clearConflicts": a.clearConflicts, "flush": a.flush,
		"putMany": a.putMany, "list": a.list, "getText": a.getText, "putText": a.putText, "putIn": a.putIn,
		"collection": a.collection, "saveBatch": a.saveBatch, "generateId": a.generateID, "names": a.names,
		"identity": a.identity, "changes": a.changes, "receipt": a.receipt, "dropReceipts": a.dropReceipts,
	} {
		obj.Set(name, fn.Call("bind", js.Null(), id))
	}
	a.bindQueries(obj, id)
	obj.Set("number", id)
	if h.drops != nil {
		obj.Set("dropLog", h.drops.addr())
	}
	obj.Set("quickWrites", db.QuickWrites())
	return obj, nil
}

// shutdown waits for calls under way (cancelling them if they take too long),
// stops live replication (pushing what is still pending, briefly), saves the
// snapshot, gives unused HiLo numbers back to the server (unless they are
// kept for the next session), and closes the connection and the store.
func (h *handle) shutdown() error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.docs.Close() // the fast path misses from now on; getText refuses

	drained := make(chan struct{})
	go func() { h.calls.Wait(); close(drained) }()
	t := time.NewTimer(drainTimeout)
	select {
	case <-drained:
	case <-t.C:
		h.cancel()
		<-drained
	}
	t.Stop()
	var errs []error
	if err := h.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close store: %w", err))
	}
	h.cancel()
	if h.persist != nil {
		if err := h.persist.close(); err != nil {
			errs = append(errs, fmt.Errorf("close store: %w", err))
		}
	}
	return errors.Join(errs...)
}
