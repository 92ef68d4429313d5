// Queries, indexes and live queries, in PouchDB's shapes, per collection:
// createIndex, getIndexes, deleteIndex, find, explain, count and
// watchQuery. The store in Go (core) parses and runs them; this file checks
// the arguments JavaScript alone can get wrong, turns queries into JSON
// text and results back into values.
//
// A store class gets the methods with installQueries; it provides
// _query(op, ...args), which runs a query call of Go's store object
// (queryOps), and _watchQuery(collection, text, onText), which starts a
// live query and resolves to the function that stops it. A Store runs them
// in this realm; a store shared by tabs (tabs.js) at its host (host.js).

import { hiloError } from './errors.js';

/** queryOps are the query calls of Go's store object that _query runs. */
export const queryOps = new Set(['createIndex', 'getIndexes', 'deleteIndex', 'find', 'count']);

/** installQueries adds the query methods to the prototype of Class. */
export function installQueries(Class) {
  for (const [name, fn] of Object.entries(methods)) {
    Object.defineProperty(Class.prototype, name, { value: fn, writable: true, configurable: true });
  }
}

const methods = {
  /**
   * Defines an index of collection on fields (a compound one with several)
   * and resolves to {result: 'created'|'exists', name}.
   */
  createIndex(collection, index) {
    try {
      return this._query('createIndex', collection, indexText(index));
    } catch (err) {
      return Promise.reject(err);
    }
  },

  /** Resolves to collection's indexes: {indexes: [{name, type, def: {fields}}]}. */
  getIndexes(collection) {
    return this._query('getIndexes', collection);
  },

  /** Drops collection's index name; resolves to {ok: true}. */
  deleteIndex(collection, name) {
    return this._query('deleteIndex', collection, name);
  },

  /** Resolves to the query's page of collection: {docs, bookmark?}. */
  find(collection, query) {
    try {
      return this._query('find', collection, queryText('find', query));
    } catch (err) {
      return Promise.reject(err);
    }
  },

  /** Runs the query and resolves to how it ran: the index, what it examined. */
  explain(collection, query) {
    try {
      return this._query('find', collection, queryText('explain', query), true);
    } catch (err) {
      return Promise.reject(err);
    }
  },

  /** Resolves to how many documents of collection options.selector matches (all without one). */
  count(collection, options) {
    try {
      if (options !== undefined && (options === null || typeof options !== 'object' || Array.isArray(options))) {
        throw hiloError('bad_query', 1912, 'count: want {selector}');
      }
      const { selector = {}, ...rest } = options ?? {};
      const unknown = Object.keys(rest);
      if (unknown.length > 0) throw hiloError('bad_query', 1912, `count: unknown option ${JSON.stringify(unknown[0])}; want selector`);
      return this._query('count', collection, toJSON('count', selector));
    } catch (err) {
      return Promise.reject(err);
    }
  },

  /**
   * Runs query over collection and keeps running it: callback gets
   * {docs, changes} at once, then after every change of the result.
   * Returns {close(), ready}: ready resolves after the first result (or
   * rejects, bad_query for a query that cannot run; the error also goes
   * to the store's 'error' event).
   */
  watchQuery(collection, query, callback) {
    if (typeof callback !== 'function') throw hiloError('bad_request', 400, 'watchQuery: callback must be a function');
    const text = queryText('watchQuery', query);
    let stop = null;
    let closed = false;
    let first;
    const firstResult = new Promise((resolve) => (first = resolve));
    let docs = []; // the last result's: Go sends what changed since
    const onText = (t) => {
      if (closed) return;
      const r = typeof t === 'string' ? applyLive(docs, t) : t;
      docs = r.docs;
      first();
      try {
        callback(r);
      } catch (err) {
        // As EventTarget does: report it, go on with the next result.
        setTimeout(() => {
          throw err;
        });
      }
    };
    const started = this._watchQuery(collection, text, onText).then((s) => {
      if (closed) return s();
      stop = s;
    });
    const ready = started.then(() => firstResult);
    ready.catch((err) => {
      closed = true;
      this._emitError?.(err);
    });
    return {
      ready,
      close: () => {
        if (closed) return;
        closed = true;
        if (stop) stop();
      },
    };
  },
};

// indexText checks an index definition, {fields, name?}, and returns it as
// JSON text. A field may be written {name: 'asc'}, as PouchDB's are.
function indexText(index) {
  if (index === null || typeof index !== 'object' || Array.isArray(index)) {
    throw hiloError('bad_query', 1912, 'createIndex: want {fields: [names], name?}');
  }
  const { fields, name, ...rest } = index;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw hiloError('bad_query', 1912, `createIndex: unknown option ${JSON.stringify(unknown[0])}; want fields or name`);
  if (!Array.isArray(fields)) throw hiloError('bad_query', 1912, 'createIndex: fields must be an array of field names');
  const names = fields.map((f) => {
    if (typeof f === 'string') return f;
    const keys = f !== null && typeof f === 'object' ? Object.keys(f) : [];
    if (keys.length === 1 && f[keys[0]] === 'asc') return keys[0];
    throw hiloError('bad_query', 1912, "createIndex: each field is a name or {name: 'asc'} (an index is read backwards for a descending sort)");
  });
  if (name !== undefined && typeof name !== 'string') throw hiloError('bad_query', 1912, 'createIndex: name must be a string');
  return JSON.stringify(name === undefined ? { fields: names } : { name, fields: names });
}

// queryText returns query ({selector, sort, limit, skip, fields, bookmark,
// use_index}) as JSON text; Go checks its members.
function queryText(op, query) {
  if (query === null || typeof query !== 'object' || Array.isArray(query)) {
    throw hiloError('bad_query', 1912, `${op}: want a query {selector, sort?, limit?, skip?, fields?, bookmark?}`);
  }
  return toJSON(op, query);
}

// toJSON is JSON.stringify with a RegExp as its pattern (a $regex may be
// written /…/ or /…/i) and a failure as bad_query.
function toJSON(op, v) {
  try {
    return JSON.stringify(v, (_, x) => (x instanceof RegExp ? regexSource(op, x) : x)) ?? 'null';
  } catch (err) {
    if (err?.code) throw err;
    throw hiloError('bad_query', 1912, `${op}: the query cannot be turned into JSON: ${err.message}`);
  }
}

function regexSource(op, re) {
  const flags = re.flags.replace(/[gyd]/g, '');
  if (/[^ims]/.test(flags)) throw hiloError('bad_query', 1912, `${op}: a RegExp's flags may be i, m and s`);
  return flags === '' ? re.source : `(?${flags})${re.source}`;
}

/**
 * applyLive makes a live query's result, {docs, changes}, from the result
 * before it (its docs, prev) and the text Go sends, what changed:
 * {n, changes, docs: the document of each change with an index, in order}.
 * Each change with an index puts its document there; the documents of prev
 * no change names keep their order in the places left, as the same
 * objects (a document that did not change is the object it was).
 */
export function applyLive(prev, text) {
  const p = JSON.parse(text);
  const docs = new Array(p.n);
  const placed = new Array(p.n).fill(false);
  const left = new Set(); // places in prev whose document left them
  let k = 0;
  for (const c of p.changes) {
    if (c.oldIndex >= 0) left.add(c.oldIndex);
    if (c.index >= 0) {
      c.doc = p.docs[k++];
      docs[c.index] = c.doc;
      placed[c.index] = true;
    }
  }
  let j = 0;
  for (let i = 0; i < p.n; i++) {
    if (placed[i]) continue;
    while (left.has(j)) j++;
    docs[i] = prev[j++];
  }
  return { docs, changes: p.changes };
}

/**
 * diffResults returns the changes that turn docs a into docs b (live query
 * results, by _id): for a live query started again at a new host, whose
 * first result adds everything.
 */
export function diffResults(a, b) {
  const old = new Map(a.map((d, i) => [d._id, i]));
  const seen = new Set();
  const changes = [];
  b.forEach((d, i) => {
    seen.add(d._id);
    const j = old.get(d._id);
    if (j === undefined) changes.push({ type: 'added', id: d._id, index: i, oldIndex: -1, doc: d });
    else if (JSON.stringify(a[j]) !== JSON.stringify(d)) changes.push({ type: j === i ? 'changed' : 'moved', id: d._id, index: i, oldIndex: j, doc: d });
  });
  a.forEach((d, j) => {
    if (!seen.has(d._id)) changes.push({ type: 'removed', id: d._id, index: -1, oldIndex: j });
  });
  return changes;
}

/**
 * SharedWatches are the live queries of a tab's store shared by tabs: each
 * runs at the store's host, which sends its results as 'query' events
 * ({wid, text, first}); when the host changes, they start again at the next
 * one, and their first result there is given as the changes since the last
 * one here.
 */
export class SharedWatches {
  #call; // (method, args) → Promise, at the host
  #watches = new Map(); // wid → {collection, text, onText, docs (the last result's), given (a result was)}
  #next = 0;

  constructor(call) {
    this.#call = call;
  }

  /** start starts a live query at the host and resolves to the function that stops it. */
  start(collection, text, onText) {
    const wid = `${Date.now().toString(36)}-${++this.#next}`;
    const w = { collection, text, onText, docs: [], given: false };
    this.#watches.set(wid, w);
    return this.#call('_watchQuery', [collection, text, wid]).then(
      () => () => {
        if (this.#watches.delete(wid)) this.#call('_unwatchQuery', [wid]).catch(() => {});
      },
      (err) => {
        this.#watches.delete(wid);
        throw err;
      },
    );
  }

  /**
   * deliver gives a 'query' event's result to its watch. The first result
   * of a start at a host (first) is given as what changed since the last
   * result given here: a watch started again at a new host, or twice when
   * its start was sent again, gives no document twice.
   */
  deliver({ wid, text, first }) {
    const w = this.#watches.get(wid);
    if (!w) return;
    if (!first) {
      const r = applyLive(w.docs, text);
      w.docs = r.docs;
      w.onText(r);
      return;
    }
    // A first result adds every document: given as what changed since the
    // last result here.
    const r = applyLive([], text);
    r.changes = diffResults(w.docs, r.docs);
    w.docs = r.docs;
    if (r.changes.length > 0 || !w.given) w.onText(r);
    w.given = true;
  }

  /** resume starts every live query again at the store's new host. */
  resume() {
    for (const [wid, w] of this.#watches) this.#call('_watchQuery', [w.collection, w.text, wid]).catch(() => {});
  }

  /** close forgets every live query (the store is closing). */
  close() {
    this.#watches.clear();
  }
}

/**
 * HostWatches are the live queries a host runs for one tab's session of a
 * shared store (host.js), by the tab's watch ids.
 */
export class HostWatches {
  #stops = new Map(); // wid → stop

  /** start runs a tab's live query on store; send(payload) sends its results to the tab. */
  async start(store, [collection, text, wid], send) {
    if (typeof wid !== 'string') throw hiloError('bad_request', 400, 'watchQuery: want a watch id');
    this.stop(wid);
    let first = true;
    const stop = await store._watchQuery(collection, text, (t) => {
      send({ wid, text: t, first });
      first = false;
    });
    this.#stops.set(wid, stop);
  }

  /** stop ends the live query wid. */
  stop(wid) {
    const stop = this.#stops.get(wid);
    this.#stops.delete(wid);
    stop?.();
  }

  /** stopAll ends every live query (the session ended). */
  stopAll() {
    for (const wid of [...this.#stops.keys()]) this.stop(wid);
  }
}
