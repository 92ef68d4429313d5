// A persisted store shared by every tab of an origin: the store runs once,
// in a SharedWorker (shared.js), and each tab's Store is a proxy that sends
// it its calls. A write resolves once the worker's store made it durable;
// the other tabs hear of it as a 'change' event and read it at once.

import { Collection } from './collection.js';
import { Conventions, Session } from './session.js';
import { Feed } from './watch.js';

let worker; // this realm's connection to the shared worker
let nextRid = 0;
const waiting = new Map(); // rid → {resolve, reject}
const listeners = new Map(); // sid → (type, payload) => void

/** canShare reports whether this realm is a page that can share stores. */
export function canShare() {
  return typeof SharedWorker === 'function' && typeof window === 'object' && typeof navigator?.locks?.request === 'function';
}

function connect(hiloError) {
  if (worker) return worker;
  const w = new SharedWorker(new URL('./shared.js', import.meta.url), { type: 'module', name: 'hilodb' });
  w.port.onmessage = (m) => {
    const msg = m.data;
    if (msg.t === 'reply') {
      const p = waiting.get(msg.rid);
      waiting.delete(msg.rid);
      if (!p) return;
      if (msg.ok) p.resolve(msg.value);
      else p.reject(hiloError(msg.error.code, msg.error.num, msg.error.message));
    } else if (msg.t === 'event') {
      listeners.get(msg.sid)?.(msg.type, msg.payload);
    }
  };
  w.onerror = (e) => {
    for (const p of waiting.values()) p.reject(hiloError('unavailable', 503, `hilodb shared worker failed: ${e.message ?? 'unknown error'}`));
    waiting.clear();
  };
  w.port.start();
  // The worker learns that this tab is gone when it gets this lock.
  // Only once this tab holds it: asked for first, the worker would get it.
  const tab = `hilodb-tab:${crypto.randomUUID()}`;
  // This tab's writer of OPFS logs (writer.js), lent to the shared worker.
  let writer = null;
  try {
    const dw = new Worker(new URL('./writer.js', import.meta.url), { type: 'module', name: 'hilodb-writer' });
    const ch = new MessageChannel();
    dw.postMessage({ t: 'port', port: ch.port1 }, [ch.port1]);
    writer = ch.port2;
  } catch {
    // No dedicated workers here: the stores keep their logs in IndexedDB.
  }
  // Requests wait until the worker knows this tab (and its writer).
  const known = new Promise((resolve) =>
    navigator.locks.request(tab, () => {
      w.port.postMessage({ t: 'tab', tab, writer }, writer ? [writer] : []);
      resolve();
      return new Promise(() => {});
    }),
  );
  worker = { port: w.port, tab, known };
  return worker;
}

async function request(hiloError, msg) {
  const { port, tab, known } = connect(hiloError);
  await known;
  return new Promise((resolve, reject) => {
    const rid = ++nextRid;
    waiting.set(rid, { resolve, reject });
    port.postMessage({ ...msg, rid, tab });
  });
}

/**
 * openShared opens options.persist through the shared worker and returns a
 * Store proxy. helpers are index.js's hiloError and Emitter.
 */
export async function openShared(options, { hiloError, Emitter }) {
  const { onConflict = 'server' } = options;
  if (typeof onConflict === 'function') {
    throw hiloError('bad_request', 400, "openStore: a persisted store is shared by the tabs of an origin and runs in a worker, where a merge function cannot go; use onConflict 'server' or 'local', or shared: false");
  }
  const plain = {};
  for (const k of ['url', 'urls', 'database', 'token', 'node', 'sync', 'persist', 'reserve', 'durability', 'requestTimeout', 'heartbeat', 'onConflict', 'changeFeed']) {
    if (options[k] !== undefined) plain[k] = options[k];
  }
  const sid = await request(hiloError, { t: 'open', options: plain });
  const events = new Emitter();
  const feed = options.changeFeed ? new Feed((since, limit) => request(hiloError, { t: 'call', sid, m: 'changes', args: [{ since, limit }] }), hiloError) : undefined;
  listeners.set(sid, (type, payload) => {
    if (type === 'feed') feed?.notify(payload);
    else events.emit(type, type === 'error' ? hiloError(payload.code, payload.num, payload.message) : payload);
  });
  const names = new SharedNames((kind, name) => request(hiloError, { t: 'call', sid, m: '_names', args: [kind, name] }), hiloError);
  await names.fetch('separator', '');
  return new SharedStore(sid, events, hiloError, feed, names);
}

/** SharedStore is a Store whose work is done by the shared worker. */
class SharedStore {
  #sid;
  #events;
  #hiloError;
  #closed = false;
  #feed;
  #names;
  #conventions;

  constructor(sid, events, hiloError, feed, names) {
    this.#sid = sid;
    this.#events = events;
    this.#hiloError = hiloError;
    this.#feed = feed;
    this.#names = names;
  }

  #call(m, ...args) {
    if (this.#closed) return Promise.reject(this.#hiloError('closed', 1902, 'store is closed'));
    return request(this.#hiloError, { t: 'call', sid: this.#sid, m, args });
  }

  put(collection, doc) {
    return this.#call('put', collection, doc);
  }

  putMany(collection, docs) {
    const hiloError = this.#hiloError;
    return this.#call('putMany', collection, docs).then((rs) =>
      rs.map((r) => (r && r.__hiloError ? hiloError(r.__hiloError.code, r.__hiloError.num, r.__hiloError.message) : r)),
    );
  }

  get(id) {
    return this.#call('get', id);
  }

  list(collection, options) {
    return this.#call('list', collection, options);
  }

  delete(id, options) {
    return this.#call('delete', id, options);
  }

  collection(name) {
    return new Collection({ collection: (op, n, payload, options) => this.#call('_collectionOp', op, n, payload, options) }, name, this.#hiloError);
  }

  get conventions() {
    this.#conventions ??= new Conventions(this.#names, this.#hiloError);
    return this.#conventions;
  }

  // A session tracks its entities in this page; ids, names and the
  // all-or-nothing write come from the worker's store.
  openSession(options = {}) {
    const raw = {
      get: (id) => this.get(id),
      generateId: (c) => this.#call('_generateId', c),
      saveBatch: (text) => this.#call('_saveBatch', text),
    };
    return new Session(raw, this.conventions, this.#hiloError, options);
  }

  nextIdentityFor(prefix) {
    return this.#call('nextIdentityFor', prefix);
  }

  seedIdentityFor(prefix, value, force) {
    return this.#call('seedIdentityFor', prefix, value, force);
  }

  createCollection(name, options = {}) {
    return this.#call('_collectionOp', 'create', name, JSON.stringify(options)).then(() => this.collection(name));
  }

  info() {
    return this.#call('info').then((i) => ({ ...i, shared: true }));
  }

  sync() {
    return this.#call('sync');
  }

  pending() {
    return this.#call('pending');
  }

  changes(options) {
    return this.#call('changes', options);
  }

  watch(listener, options) {
    if (!this.#feed) throw this.#hiloError('bad_request', 400, 'watch: open the store with changeFeed: true');
    return this.#feed.watch(listener, options, (err) => this.#events.emit('error', err));
  }

  conflicts(id) {
    return this.#call('conflicts', id);
  }

  clearConflicts(id) {
    return this.#call('clearConflicts', id);
  }

  flush() {
    return this.#call('flush');
  }

  on(type, fn) {
    this.#events.on(type, fn);
    return () => this.#events.off(type, fn);
  }

  off(type, fn) {
    this.#events.off(type, fn);
  }

  async close() {
    if (this.#closed) return;
    this.#closed = true;
    this.#feed?.close();
    listeners.delete(this.#sid);
    await request(this.#hiloError, { t: 'close', sid: this.#sid });
  }
}

/**
 * SharedNames answers the conventions' name lookups in a tab from what the
 * worker told it: names(kind, name) at once from the cache, fetch(kind,
 * name) asking the worker.
 */
class SharedNames {
  #ask;
  #hiloError;
  #known = new Map();

  constructor(ask, hiloError) {
    this.#ask = ask;
    this.#hiloError = hiloError;
  }

  names(kind, name) {
    const v = this.#known.get(`${kind}\0${name}`);
    if (v !== undefined) return v;
    const err = this.#hiloError('bad_request', 400, `conventions: the ${kind} name of ${JSON.stringify(name)} is not known yet in a store shared by tabs; await store.conventions.preload(Type) first`);
    err.missing = { kind, name };
    return err;
  }

  async fetch(kind, name) {
    this.#known.set(`${kind}\0${name}`, await this.#ask(kind, name));
  }
}
