// The Store class: a document store's methods over its Go side (index.js's
// openStore makes one).

import { Collection } from './collection.js';
import { Conventions, Session } from './session.js';
import { hiloError } from './errors.js';
import { inMerge } from './events.js';
import { closeOptions, settlePending } from './closing.js';
import { PutGroup, TaskMark, groupable } from './group.js';
import { knownOptions, withRevOptions } from './options.js';
import { installQueries, queryOps } from './query.js';

/**
 * A document store. Every method returns a Promise; failures reject with an
 * Error that carries `code` and `num`.
 */
export class Store {
  #raw;
  #events;
  #unwatch;

  /** @internal Use openStore. */
  #cache;

  #feed;

  #fast; // FastReads, or undefined
  #number; // the store's number in Go, for #fast
  #quick; // whether Go may answer a put at once (putText)

  constructor(raw, events, adapter, cache, feed, fast) {
    // Go answers a put on the event loop only when it has no durable write
    // to wait for (no log, relaxed, or a log it appends to at once);
    // otherwise asking first is a wasted call into Go.
    this.#quick = raw.quickWrites === true;
    this.#cache = cache;
    if (fast && typeof raw.number === 'number') {
      this.#fast = fast;
      this.#number = raw.number;
    }
    this.#feed = feed;
    this.#raw = raw;
    this.#events = events;
    this.#unwatch = adapter ? adapter.watchPage(() => raw.flush().catch(() => {})) : () => {};
  }

  /**
   * Stores doc in collection and resolves to the stored document. A _rev in
   * doc (or options.rev) is a precondition: the write is applied only when
   * it is the stored document's _rev, else it rejects with conflict (1200).
   * options.ignoreRevs: true drops that check.
   */
  put(collection, doc, options) {
    return this.#put(collection, doc, options);
  }

  /**
   * @internal put storing a receipt (key, seq) in the same transaction, for
   * the host of a store shared by tabs (host.js).
   */
  _putReceipted(key, seq, collection, doc, options) {
    return this.#put(collection, doc, options, key, seq);
  }

  #put(collection, doc, options, key, seq) {
    // Inside a merge function Go is in the middle of a write: this one
    // waits for it to end (a microtask runs once Go has returned).
    if (inMerge()) return Promise.resolve().then(() => this.#put(collection, doc, options, key, seq));
    let text;
    try {
      doc = withRevOptions(doc, options);
      text = JSON.stringify(doc);
    } catch (err) {
      if (err.code) return Promise.reject(err);
      return Promise.reject(hiloError('bad_json', 600, `put: document cannot be turned into JSON: ${err.message}`));
    }
    if (text === undefined) text = '';
    // A put that joins the puts waiting to go together (see #puts), or,
    // made after them, goes after them.
    const joins = key === undefined && text !== '' && groupable(collection, doc);
    if (this.#puts) {
      if (joins && this.#puts.takes(collection)) return this.#puts.join(text);
      this.#sendPuts();
    }
    // At once when Go needs nothing to wait for (an id at hand, no durable
    // write); undefined means it must wait, so the asynchronous put runs.
    let r;
    if (this.#quick && typeof collection === 'string') {
      r = this.#fast ? this.#fast.put(this.#raw, collection, text, key, seq) : this.#raw.putText(collection, text, key, seq);
    }
    if (typeof r === 'string') {
      // Not kept in the read cache: Go's mirror answers a get of it at
      // once (the fast path), and ten thousand puts' texts held here grow
      // JavaScript's old generation, whose collection lands in what runs
      // next (a sync measured 5 % slower with them).
      return Promise.resolve(JSON.parse(r));
    }
    // Stored while the log was being compacted: durable a little later.
    if (r instanceof Promise) return r.then((t) => JSON.parse(t));
    if (r !== undefined) return Promise.reject(r);
    // The first put of a task that must wait goes at once; the ones made
    // after it in the same task go together.
    if (this.#waited.again() && joins) {
      this.#puts = new PutGroup(collection);
      queueMicrotask(() => this.#sendPuts());
      return this.#puts.join(text);
    }
    return this.#raw.put(collection, text, key, seq);
  }

  // Puts that must wait (for a leased range, or a durable write that is
  // not appended at once) made while another such put of the same task is
  // on its way go to Go together, as one putMany: one transaction, one
  // durable write and one lease for all of them, where each would be one
  // of each (a Promise.all of puts, say). Each settles with its own
  // document or error. Any other call of the store sends them first.
  #waited = new TaskMark(); // a put that must wait went in this task
  #puts = null; // the PutGroup waiting to go

  #sendPuts() {
    const puts = this.#puts;
    if (!puts) return;
    this.#puts = null;
    const sent = puts.size === 1 ? this.#raw.put(puts.collection, puts.items[0]).then((r) => [r]) : this.#raw.putMany(puts.collection, puts.text());
    sent.then(
      (answer) => puts.settle(answer),
      (err) => puts.fail(err),
    );
  }

  /** Resolves to the document with the given _id. */
  get(id) {
    this.#sendPuts();
    const text = this.#read(id);
    if (text === undefined) return Promise.resolve().then(() => this.get(id)); // inside a merge function, not in the mirror
    return typeof text === 'string' ? Promise.resolve(JSON.parse(text)) : Promise.reject(text);
  }

  /**
   * @internal The documents of ids, for the host of a store shared by tabs
   * (host.js; a tab's gets made together): one entry per id, the document
   * or {__hiloError: {code, num, message}}.
   */
  _getMany(ids) {
    this.#sendPuts();
    if (!Array.isArray(ids)) return Promise.reject(hiloError('bad_request', 400, 'get: ids must be an array'));
    return Promise.resolve(
      ids.map((id) => {
        const text = this.#read(id);
        return typeof text === 'string' ? JSON.parse(text) : { __hiloError: { code: text?.code ?? 'internal', num: text?.num ?? 4, message: String(text?.message ?? text) } };
      }),
    );
  }

  // read returns the JSON text of the document with the given _id, or the
  // Error that says why there is none: from the read cache, without
  // entering Go; else from Go's mirror of the documents through the fast
  // path (FastReads); else Go answers at once with JSON text or an Error.
  // Go drops a cache entry, and updates its mirror, in the same step as any
  // write of that document, before the write resolves. Inside a merge
  // function, where Go could not answer before its write ends, it is
  // undefined when neither the cache nor the mirror has the document.
  #read(id) {
    let text = this.#cache.get(id);
    if (text === undefined) {
      text = this.#fast?.get(this.#number, id);
      if (text === undefined) {
        if (inMerge()) return undefined;
        const r = this.#raw.getText(id);
        if (typeof r !== 'string') return r;
        text = r;
      }
      this.#cache.set(id, text);
    }
    return text;
  }

  /**
   * Stores many documents of collection in one transaction (one durable
   * write) and resolves to one entry per document, in order: the stored
   * document, or a HiloError for one that failed (the others are stored).
   */
  putMany(collection, docs) {
    return this.#putMany(collection, docs);
  }

  /** @internal putMany storing a receipt (key, seq), for host.js. */
  _putManyReceipted(key, seq, collection, docs) {
    return this.#putMany(collection, docs, key, seq);
  }

  /**
   * @internal putMany of documents already turned into one JSON array text
   * (a tab of a shared store sends them so, host.js), resolving to the
   * results as one JSON array text: a failed document is
   * {__hiloError: {code, num, message}} there. The host neither parses nor
   * copies each document on the way.
   */
  _putManyText(collection, text) {
    return this._putManyTextReceipted(undefined, undefined, collection, text);
  }

  /** @internal _putManyText storing a receipt (key, seq), for host.js. */
  _putManyTextReceipted(key, seq, collection, text) {
    if (typeof text !== 'string') return Promise.reject(hiloError('bad_request', 400, 'putMany: docs must be an array'));
    return this.#raw.putMany(collection, text, key, seq, true);
  }

  /** @internal The receipt stored under key, as JSON text, or undefined. */
  _receipt(key) {
    return this.#raw.receipt(key);
  }

  /** @internal Drops receipts by key prefix: mode 'only' or 'except'. */
  _dropReceipts(mode, prefixes) {
    return this.#raw.dropReceipts(mode, prefixes);
  }

  #putMany(collection, docs, key, seq) {
    this.#sendPuts();
    if (!Array.isArray(docs)) return Promise.reject(hiloError('bad_request', 400, 'putMany: docs must be an array'));
    // One JSON array text: one string crosses into Go, not one per document.
    const texts = new Array(docs.length);
    for (let i = 0; i < docs.length; i++) {
      try {
        texts[i] = JSON.stringify(docs[i]) ?? 'null';
      } catch (err) {
        return Promise.reject(hiloError('bad_json', 600, `putMany: document ${i} cannot be turned into JSON: ${err.message}`));
      }
    }
    return this.#raw.putMany(collection, `[${texts.join(',')}]`, key, seq).then((rs) =>
      rs.map((r) => (r && r.__hiloError ? hiloError(r.__hiloError.code, r.__hiloError.num, r.__hiloError.message) : r)),
    );
  }

  /**
   * Resolves to a page of collection's documents in key order: {docs, next}.
   * Pass next as after for the following page; it is null after the last.
   */
  list(collection, options) {
    this.#sendPuts();
    try {
      const { limit, after } = knownOptions('list', options, ['limit', 'after']);
      return this.#raw.list(collection, limit, after);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  #conventions;

  /** The conventions that map entities to documents (ravendb's DocumentConventions). */
  get conventions() {
    this.#conventions ??= new Conventions(this.#raw, hiloError);
    return this.#conventions;
  }

  /**
   * Opens a RavenDB-style session: store, load, delete, then saveChanges()
   * in one transaction. options.useOptimisticConcurrency makes stale writes
   * fail with conflict (1200).
   */
  openSession(options = {}) {
    const raw = this.#raw;
    const store = {
      get: (id) => this.get(id),
      generateId: (c) => raw.generateId(c),
      saveBatch: (t) => {
        this.#sendPuts();
        return raw.saveBatch(t);
      },
      find: (c, q) => this.find(c, q),
      count: (c, q) => this.count(c, q),
    };
    return new Session(store, this.conventions, hiloError, options);
  }

  /** @internal A conventions name (session.js), for the shared worker. */
  _names(kind, name) {
    const r = this.#raw.names(kind, name);
    if (typeof r !== 'string') throw r;
    return r;
  }

  /** @internal A session's new id, for the shared worker. */
  _generateId(collection) {
    return this.#raw.generateId(collection);
  }

  /** @internal A session's saveChanges batch, for the shared worker. */
  _saveBatch(text) {
    return this.#raw.saveBatch(text);
  }

  /** @internal _saveBatch storing a receipt (key, seq), for host.js. */
  _saveBatchReceipted(key, seq, text) {
    return this.#raw.saveBatch(text, key, seq);
  }

  /** Resolves to the next value of the cluster-wide identity prefix (1, 2, …), from the server. */
  nextIdentityFor(prefix) {
    this.#sendPuts();
    return this.#raw.identity('next', prefix);
  }

  /** Sets the identity prefix to value (only upwards unless force) and resolves to its value then. */
  seedIdentityFor(prefix, value, force = false) {
    this.#sendPuts();
    return this.#raw.identity('seed', prefix, value, force);
  }

  /** @internal The shared worker runs tabs' collection operations through this. */
  _collectionOp(op, name, payload, options) {
    return this.#raw.collection(op, name, payload, options);
  }

  /** @internal _collectionOp of a write storing a receipt (key, seq), for host.js. */
  _collectionOpReceipted(key, seq, op, name, payload, options) {
    return this.#raw.collection(op, name, payload, options, key, seq);
  }

  /** Returns the ArangoDB-style collection name of this store. */
  collection(name) {
    const raw = {
      collection: (...args) => {
        this.#sendPuts();
        return this.#raw.collection(...args);
      },
    };
    return new Collection(raw, name, hiloError);
  }

  /**
   * Defines collection name with {keyOptions} (traditional, autoincrement
   * with increment and offset, padded, uuid; allowUserKeys) and resolves to
   * its Collection.
   */
  createCollection(name, options = {}) {
    let text;
    try {
      text = JSON.stringify(options);
    } catch (err) {
      return Promise.reject(hiloError('bad_json', 600, `createCollection: options cannot be turned into JSON: ${err.message}`));
    }
    this.#sendPuts();
    return this.#raw.collection('create', name, text).then(() => this.collection(name));
  }

  /**
   * Removes the document with the given _id. options.rev (or ifMatch) is a
   * precondition: the document is removed only if that is its _rev, else
   * the call rejects with conflict (1200).
   */
  delete(id, options) {
    return this.#delete(id, options);
  }

  /** @internal delete storing a receipt (key, seq), for host.js. */
  _deleteReceipted(key, seq, id, options) {
    return this.#delete(id, options, key, seq);
  }

  #delete(id, options, key, seq) {
    this.#sendPuts();
    try {
      const { rev, ifMatch } = knownOptions('delete', options, ['rev', 'ifMatch']);
      const want = rev ?? ifMatch;
      if (want === undefined) return this.#raw.delete(id, key, seq).then(() => undefined);
      if (typeof want !== 'string' || want === '') throw hiloError('bad_request', 400, 'delete: rev must be a _rev string');
      if (typeof id !== 'string') throw hiloError('bad_request', 400, 'delete: id must be a string');
      return this.#raw.saveBatch(JSON.stringify([{ delete: true, id, ifRev: want }]), key, seq).then(() => undefined);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Resolves to this store's node tag, the server's tag, the connection state and whether tabs share it. */
  info() {
    return this.#raw.info().then((i) => ({ ...i, shared: false }));
  }

  /** Pushes every pending local write, then pulls every remote change: resolves to {pushed, pulled}. */
  sync() {
    this.#sendPuts();
    return this.#raw.sync();
  }

  /**
   * With changeFeed: resolves to {results: [{seq, id, rev, deleted, doc}],
   * last}: the documents written after the local sequence number since (0:
   * all), local writes and remote changes alike, each once at its latest
   * write; pass last as since next time.
   */
  changes(options) {
    if (inMerge()) return Promise.resolve().then(() => this.changes(options));
    this.#sendPuts();
    try {
      const { since = 0, limit } = knownOptions('changes', options, ['since', 'limit']);
      return this.#raw.changes(since, limit);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * With changeFeed: calls listener with every document written from now
   * (or after the sequence number since), local writes and remote changes
   * alike, in batches {results, last} in feed order, as they are written;
   * each document once at its latest write. Returns the function that stops
   * it. A listener that returns a Promise is waited for before the next batch.
   */
  watch(listener, options) {
    if (!this.#feed) throw hiloError('bad_request', 400, 'watch: open the store with changeFeed: true');
    return this.#feed.watch(listener, options, (err) => this.#events.emit('error', err));
  }

  /** @internal Runs a query call of Go's store (query.js: queryOps). */
  _query(op, ...args) {
    // Inside a merge function Go is in the middle of a write: the query
    // waits for it to end (a microtask runs once Go has returned).
    if (inMerge()) return Promise.resolve().then(() => this._query(op, ...args));
    this.#sendPuts();
    if (!queryOps.has(op)) return Promise.reject(hiloError('bad_request', 400, `unknown query call ${op}`));
    if (op === 'find' && this.#fast && args[2] !== true && typeof args[0] === 'string' && typeof args[1] === 'string') {
      // A page through the export (runtime.js: FastReads.find): as its
      // bytes for another thread (args[3], the shared store's host), as
      // objects here.
      let page;
      try {
        page = this.#fast.find(this.#number, args[0], args[1], args[3] === true);
      } catch (err) {
        return Promise.reject(err);
      }
      if (page !== undefined) return Promise.resolve(args[3] === true ? page : JSON.parse(this.#fast.decode(page)));
    }
    return this.#raw[op](...args);
  }

  /** @internal Starts a live query (query.js); resolves to the function that stops it. */
  _watchQuery(collection, text, onText) {
    if (inMerge()) return Promise.resolve().then(() => this._watchQuery(collection, text, onText));
    this.#sendPuts();
    return this.#raw.watchQuery(collection, text, onText).then((n) => () => {
      this.#raw.unwatchQuery(n).catch(() => {});
    });
  }

  /** @internal Reports err to the 'error' listeners (query.js). */
  _emitError(err) {
    this.#events.emit('error', err);
  }

  /** @internal The shared worker forwards the feed's heads to the tabs. */
  _onFeedHead(fn) {
    this.#feed?.onHead(fn);
  }

  /** Resolves to the number of documents with local writes the server has not acknowledged. */
  pending() {
    this.#sendPuts();
    return this.#raw.pending();
  }

  /**
   * Resolves to the losing versions kept for id, oldest first: [{id, rev,
   * doc, deleted}]; without an id, to the ids of the documents that have
   * any (unresolved conflicts).
   */
  conflicts(id) {
    this.#sendPuts();
    return this.#raw.conflicts(id);
  }

  /** Forgets the losing versions kept for id. */
  clearConflicts(id) {
    this.#sendPuts();
    return this.#raw.clearConflicts(id).then(() => undefined);
  }

  /**
   * With persist: resolves once every write made so far is durable. Writes
   * are durable when they resolve already, unless the store was opened with
   * durability 'relaxed'.
   */
  flush() {
    this.#sendPuts();
    return this.#raw.flush().then(() => undefined);
  }

  /**
   * Calls fn for every event of type: 'conflict', 'change' or 'error'.
   * Returns a function that removes the listener.
   */
  on(type, fn) {
    this.#events.on(type, fn);
    return () => this.#events.off(type, fn);
  }

  /** Removes a listener added with on. */
  off(type, fn) {
    this.#events.off(type, fn);
  }

  /**
   * Waits (at most options.timeout ms, default 5,000, while online) for
   * the writes the server has not acknowledged to be pushed, stops live
   * replication, waits for relaxed writes to be durable (with persist),
   * returns unused ids to the server (without persist) and closes the
   * connection and the store. Resolves to {pending, lost}: the writes not
   * on the server, and of those the ones gone with this store (a store
   * without persist; a persisted one keeps them for the next session).
   */
  close(options) {
    if (!this.#closing) {
      let timeout;
      try {
        timeout = closeOptions(options, hiloError);
      } catch (err) {
        return Promise.reject(err);
      }
      // From here every call rejects with closed; the wait and the close
      // use the store itself.
      this.#sendPuts();
      const raw = this.#raw;
      this.#raw = closedRaw;
      this.#unwatch();
      this.#feed?.close();
      this.#cache.close(); // later gets reach closedRaw, which rejects them
      this.#fast = undefined;
      this._network?.close();
      this.#closing = this.#close(raw, timeout);
    }
    return this.#closing;
  }

  #closing;

  /** @internal What close needs to know: {live, kept}, set by openStore. */
  _closing = { live: false, kept: false };

  /** @internal The store's Network (network.js), set by openStore. */
  _network = null;

  async #close(raw, timeout) {
    let pending;
    try {
      pending = await settlePending(raw, this._closing.live, timeout);
    } finally {
      await raw.close();
    }
    return { pending, lost: this._closing.kept ? 0 : pending };
  }
}

installQueries(Store);

// closedRaw stands in for a closed store's Go side: every call fails with
// closed (at once where Go would answer at once).
const closedRaw = new Proxy(
  {},
  {
    get(_, name) {
      if (typeof name !== 'string' || name === 'then') return undefined;
      const closed = () => hiloError('closed', 1902, 'store is closed');
      return answeredAtOnce.has(name) ? closed : () => Promise.reject(closed());
    },
  },
);
const answeredAtOnce = new Set(['putText', 'getText', 'names']);
