// A persisted store shared by every tab of an origin: the store runs once,
// in one tab's host worker (or in the shared worker, shared.js, when no tab
// can start one), and each tab's Store is a proxy that sends it its calls
// through a port of its own. A write resolves once the host's store made it
// durable; the other tabs hear of it as a 'change' event and read it at
// once. When the host's tab goes away, the shared worker names another host
// and the proxies connect to it: reads in flight are sent again there, and
// so are puts, deletes, sessions' saves and collection writes (their
// receipts tell the next host whether they were made); the other writes in
// flight (identities) reject with unavailable (503), to be retried.

import { Collection, collectionWrites } from './collection.js';
import { Conventions, Session } from './session.js';
import { Group, PutGroup, TaskMark, groupable } from './group.js';
import { Feed } from './watch.js';
import { SharedWatches, installQueries } from './query.js';
import { closeOptions, settlePending } from './closing.js';
import { Network } from './network.js';
import { compileWasm } from './runtime.js';
import { mark } from './platform.js';

let broker; // this realm's connection to the shared worker
let nextRid = 0;
const waiting = new Map(); // rid → {resolve, reject}, for the shared worker
const links = new Set(); // the open Links of this realm
const utf8 = new TextDecoder(); // the pages of queries, from their bytes

/** canShare reports whether this realm is a page that can share stores. */
export function canShare() {
  return typeof SharedWorker === 'function' && typeof window === 'object' && typeof navigator?.locks?.request === 'function';
}

function connect(hiloError) {
  if (broker) return broker;
  const w = new SharedWorker(new URL('./shared.js', import.meta.url), { type: 'module', name: 'hilodb' });
  w.port.onmessage = (m) => {
    const msg = m.data;
    if (msg.t === 'reply') {
      const p = waiting.get(msg.rid);
      waiting.delete(msg.rid);
      if (!p) return;
      if (msg.ok) p.resolve(msg.value);
      else p.reject(hiloError(msg.error.code, msg.error.num, msg.error.message));
    } else if (msg.t === 'host-gone') {
      for (const l of links) if (l.persist === msg.persist) l.lost();
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
  // This tab's host worker (shared.js too), where the shared worker may run
  // stores; it holds their OPFS files itself.
  let host = null;
  let hw = null;
  try {
    hw = new Worker(new URL('./shared.js', import.meta.url), { type: 'module', name: 'hilodb-host' });
    const ch = new MessageChannel();
    // testHooks: a test's hook on the host worker (shared.js), off unless
    // the page set globalThis.__hilodbTestHooks.
    hw.postMessage({ t: 'port', port: ch.port1, testHooks: globalThis.__hilodbTestHooks === true }, [ch.port1]);
    host = ch.port2;
    compileFor(hw);
  } catch {
    // No dedicated workers here: the shared worker runs the stores.
  }
  // Requests wait until the worker knows this tab (and its host worker).
  const known = new Promise((resolve) =>
    navigator.locks.request(tab, () => {
      w.port.postMessage({ t: 'tab', tab, host }, host ? [host] : []);
      resolve();
      return new Promise(() => {});
    }),
  );
  if (hw) {
    // A host worker that failed lets go of what it held; its stores move.
    hw.onerror = () => {
      hw.terminate();
      known.then(() => w.port.postMessage({ t: 'host-failed', tab }));
    };
    // A tab that is closing says so at once, so that the other tabs send
    // their next calls to the next host without waiting for this tab's lock
    // (the next host opens the store once this tab's worker is gone).
    globalThis.addEventListener('pagehide', (e) => {
      if (!e.persisted) known.then(() => w.port.postMessage({ t: 'host-failed', tab }));
    });
  }
  broker = { port: w.port, tab, known };
  return broker;
}

// compileFor fetches and compiles the WebAssembly for the host worker hw
// while hw and the shared worker start, and sends it the module ({t:
// 'module'}; null when it did not compile one): the first store of an
// origin runs in the first tab's host worker, which then only instantiates
// it. Where a store of the origin is open already (its host holds its Web
// Lock, persist.js), hw will likely run none, and is sent null.
function compileFor(hw) {
  navigator.locks
    .query()
    .then(({ held }) => (held?.some((l) => l.name?.startsWith('hilodb:')) ? undefined : compileWasm()))
    .catch(() => undefined)
    .then((module) => {
      try {
        hw.postMessage({ t: 'module', module: module ?? null });
      } catch {
        hw.postMessage({ t: 'module', module: null }); // a module this browser cannot send
      }
    });
}

// hostPort resolves to a port to the host of persist name.
async function hostPort(hiloError, persist) {
  const { port, tab, known } = connect(hiloError);
  await known;
  return new Promise((resolve, reject) => {
    const rid = ++nextRid;
    waiting.set(rid, { resolve, reject });
    port.postMessage({ t: 'open', rid, tab, persist });
  });
}

// lostHost is the rejection of a request whose host went away.
const lostHost = Symbol('lost host');

// safe are the calls sent again to the next host when their host went
// away before answering: those that change nothing, or whose repeat
// changes nothing more.
const safe = new Set(['get', '_getMany', 'list', 'info', 'sync', 'pending', 'conflicts', 'clearConflicts', 'flush', 'changes', '_names', '_generateId', '_watchQuery', '_unwatchQuery']);
const safeCollectionOps = new Set(['document', 'documents', 'count']);

// receipted are the writes sent with a receipt (host.js): sent again to the
// next host, which tells from the receipt whether the write was made. So
// are the collection operations that write (collectionWrites).
const receipted = new Set(['put', 'putMany', '_putManyText', '_saveBatch', 'delete']);

// receiptSlots is how many receipts a Link keeps at its host: a write sent
// again finds its own unless this many later writes of the Link were made.
const receiptSlots = 64;

/**
 * Link is a tab's connection to one shared store, at whichever host runs
 * it: open on the host, calls, and the move to a new host.
 */
class Link {
  #options;
  #hiloError;
  #onEvent;
  #port = null;
  #sid = null;
  #pending = new Map(); // rid → {resolve, reject}
  #ready;
  #attaching = false;
  #gen = 0;
  #closed = false;
  #id = crypto.randomUUID().slice(0, 8); // names this Link's receipts
  #wseq = 0; // sequence of its receipted writes
  #attached = 0; // how many times it opened the store at a host
  /** onReattached, if set, is called once the store is open at a new host. */
  onReattached = null;

  #tokenFn; // the page's token function, or undefined

  constructor(options, hiloError, tokenFn, onEvent) {
    this.persist = options.persist;
    this.#tokenFn = tokenFn;
    this.#options = options;
    this.#hiloError = hiloError;
    this.#onEvent = onEvent;
    this.#ready = this.#attach();
  }

  /** opened resolves once the store is open at its host. */
  get opened() {
    return this.#ready;
  }

  // attach connects to the host of the store and opens it there, again
  // while hosts go away meanwhile.
  async #attach() {
    this.#attaching = true;
    try {
      for (;;) {
        const gen = this.#gen;
        const port = await hostPort(this.#hiloError, this.persist);
        if (gen !== this.#gen || this.#closed) {
          port.close(); // a host went away meanwhile: ask again
          if (this.#closed) return;
          continue;
        }
        port.onmessage = (m) => this.#message(port, m.data);
        port.start();
        this.#port = port;
        try {
          this.#sid = await this.#send(port, { t: 'open', options: this.#options, link: this.#id });
          if (this.#attached++ > 0) this.onReattached?.();
          return;
        } catch (err) {
          if (err !== lostHost) throw err;
        }
      }
    } finally {
      this.#attaching = false;
    }
  }

  #message(port, msg) {
    if (port !== this.#port) return;
    if (msg.t === 'reply') {
      const p = this.#pending.get(msg.rid);
      this.#pending.delete(msg.rid);
      if (!p) return;
      if (msg.ok) p.resolve(msg.value);
      else p.reject(this.#hiloError(msg.error.code, msg.error.num, msg.error.message));
    } else if (msg.t === 'event' && msg.sid === this.#sid) {
      this.#onEvent(msg.type, msg.payload);
    } else if (msg.t === 'token') {
      // The host's store needs a token (at start, before expiry, after
      // unauthorized): this page's function gives it.
      const answer = (ok, value) => port.postMessage({ t: 'token-reply', rid: msg.rid, ok, value });
      if (!this.#tokenFn) return answer(false, { code: 'unauthorized', num: 401, message: 'this tab has no token function' });
      Promise.resolve()
        .then(() => this.#tokenFn())
        .then(
          (token) => answer(true, token),
          (err) => answer(false, { code: typeof err?.code === 'string' ? err.code : 'unauthorized', num: typeof err?.num === 'number' ? err.num : 401, message: String(err?.message ?? err) }),
        );
    }
  }

  #send(port, msg) {
    return new Promise((resolve, reject) => {
      const rid = ++nextRid;
      this.#pending.set(rid, { resolve, reject });
      port.postMessage({ ...msg, rid });
    });
  }

  /** lost is told that the store's host went away: connect to the next. */
  lost() {
    if (this.#closed) return;
    this.#gen++;
    const port = this.#port;
    this.#port = null;
    port?.close();
    for (const p of this.#pending.values()) p.reject(lostHost);
    this.#pending.clear();
    if (!this.#attaching) this.#reattach();
  }

  // reattach connects to the store's next host. Its failure (the next host
  // could not open the store) is the answer to the calls waiting for it; the
  // next call tries again.
  #reattach() {
    this.#ready = this.#attach();
    this.#ready.catch(() => {}); // answered to the calls, not unhandled
  }

  /** call runs method m of the store at its host. */
  async call(m, args) {
    let receipt;
    let resend = false;
    if (receipted.has(m) || (m === '_collectionOp' && collectionWrites.has(args[0]))) {
      const seq = ++this.#wseq;
      receipt = { key: `${connect(this.#hiloError).tab}/${this.#id}/${seq % receiptSlots}`, seq };
    }
    for (;;) {
      try {
        await this.#ready;
      } catch (err) {
        if (!this.#attaching && !this.#closed) this.#reattach();
        throw err;
      }
      if (this.#closed) throw this.#hiloError('closed', 1902, 'store is closed');
      try {
        return await this.#send(this.#port, { t: 'call', sid: this.#sid, m, args, receipt, resend });
      } catch (err) {
        if (err !== lostHost) throw err;
        if (receipt) {
          resend = true;
          continue;
        }
        if (!safe.has(m) && !(m === '_collectionOp' && safeCollectionOps.has(args[0])) && !(m === '_query' && args[0] !== 'deleteIndex')) {
          throw this.#hiloError('unavailable', 503, `${m}: the tab that ran the shared store went away before it answered; the write may or may not be stored (retry it)`);
        }
      }
    }
  }

  /** close leaves the store at its host. */
  async close() {
    if (this.#closed) return;
    await this.#ready.catch(() => {});
    this.#closed = true;
    links.delete(this);
    const port = this.#port;
    if (!port) return;
    await this.#send(port, { t: 'close', sid: this.#sid }).catch(() => {});
    this.#port = null;
    port.close();
  }
}

/**
 * openShared opens options.persist through the shared worker and returns a
 * Store proxy. helpers are index.js's hiloError and events.js's Emitter.
 */
export async function openShared(options, { hiloError, Emitter }) {
  mark('openStore');
  const { onConflict = 'server' } = options;
  if (typeof onConflict === 'function') {
    throw hiloError('bad_request', 400, "openStore: a persisted store is shared by the tabs of an origin and runs in a worker, where a merge function cannot go; use onConflict 'server' or 'local', or shared: false");
  }
  const plain = {};
  for (const k of ['url', 'urls', 'database', 'token', 'node', 'sync', 'persist', 'reserve', 'durability', 'requestTimeout', 'heartbeat', 'onConflict', 'changeFeed']) {
    if (options[k] !== undefined) plain[k] = options[k];
  }
  // A token function cannot go to the host: the host asks this tab for a
  // token whenever the store needs one (Link's 'token' message).
  const tokenFn = typeof options.token === 'function' ? options.token : undefined;
  if (tokenFn) {
    delete plain.token;
    plain.tokenFromTab = true;
  }
  const events = new Emitter();
  let feed;
  const watches = new SharedWatches((m, args) => link.call(m, args));
  const link = new Link(plain, hiloError, tokenFn, (type, payload) => {
    if (type === 'feed') feed?.notify(payload);
    else if (type === 'query') watches.deliver(payload);
    else events.emit(type, type === 'error' ? hiloError(payload.code, payload.num, payload.message) : payload);
  });
  link.onReattached = () => watches.resume();
  links.add(link);
  try {
    await link.opened;
  } catch (err) {
    links.delete(link);
    throw err;
  }
  feed = options.changeFeed ? new Feed((since, limit) => link.call('changes', [{ since, limit }]), hiloError) : undefined;
  const names = new SharedNames((kind, name) => link.call('_names', [kind, name]), hiloError);
  await names.fetch('separator', '');
  const store = new SharedStore(link, events, hiloError, feed, names, watches);
  store._live = options.sync !== false;
  store._network = new Network((type, payload) => events.emit(type, payload), store);
  events.network = store._network;
  store._network.start();
  return store;
}

/** SharedStore is a Store whose work is done by a host (host.js). */
class SharedStore {
  #link;
  #events;
  #hiloError;
  #closed = false;
  #feed;
  #names;
  #conventions;
  #watches;

  constructor(link, events, hiloError, feed, names, watches) {
    this.#watches = watches;
    this.#link = link;
    this.#events = events;
    this.#hiloError = hiloError;
    this.#feed = feed;
    this.#names = names;
  }

  #call(m, ...args) {
    if (this.#closed) return Promise.reject(this.#hiloError('closed', 1902, 'store is closed'));
    // The gets or puts made before this call go first.
    this.#sendGets();
    this.#sendPuts();
    return this.#after(() => this.#link.call(m, args));
  }

  // Puts made while another put of the same task is on its way go to the
  // host together (#sendPuts): one message, one transaction and one
  // durable append for all of them, where each would be one of each. A
  // put alone, or the first of a task, goes at once. The host may answer
  // a call that comes after such a group before the group is stored (a
  // group is stored asynchronously), so a call made after one is sent
  // once the group is answered: calls take effect in the order made.
  #busy = new TaskMark(); // a put went in this task
  #puts = null; // the PutGroup waiting to go
  #group = null; // the last group sent, until it is answered

  // after runs send at once, or once the last group sent is answered.
  #after(send) {
    return this.#group ? this.#group.then(send, send) : send();
  }

  put(collection, doc, options) {
    if (this.#busy.again() && !this.#closed && options === undefined && groupable(collection, doc)) {
      let text;
      try {
        text = JSON.stringify(doc); // now: the document as it is at the call
      } catch {
        text = undefined; // sent as it is below, for the store to name
      }
      if (text !== undefined) return this.#queuePut(collection, text);
    }
    return this.#call('put', collection, doc, options);
  }

  #queuePut(collection, text) {
    this.#sendGets();
    if (this.#puts && !this.#puts.takes(collection)) this.#sendPuts();
    if (!this.#puts) {
      this.#puts = new PutGroup(collection);
      queueMicrotask(() => this.#sendPuts());
    }
    return this.#puts.join(text);
  }

  // sendPuts sends the waiting puts as one putMany (with one receipt, so
  // that it is sent again to the next host as a whole) and settles each
  // put with its own document or error.
  #sendPuts() {
    const puts = this.#puts;
    if (!puts) return;
    this.#puts = null;
    // The answer is the putMany's JSON text, or an array when the next host
    // answered the group from its receipt (host.js).
    const group = this.#after(() => this.#link.call('_putManyText', [puts.collection, puts.text()])).then(
      (answer) => puts.settle(answer),
      (err) => puts.fail(err),
    );
    this.#group = group;
    group.then(() => {
      if (this.#group === group) this.#group = null;
    });
  }

  putMany(collection, docs) {
    const hiloError = this.#hiloError;
    // One JSON array text, made here: the host passes it to Go as it is and
    // answers with one text, so no document is copied or turned into JSON
    // again on the way. A document that cannot be turned into JSON goes
    // as it is, for the store to name it.
    let text;
    try {
      if (Array.isArray(docs)) text = JSON.stringify(docs);
    } catch {
      text = undefined;
    }
    const sent = text === undefined ? this.#call('putMany', collection, docs) : this.#call('_putManyText', collection, text);
    return sent.then((rs) =>
      (typeof rs === 'string' ? JSON.parse(rs) : rs).map((r) => (r && r.__hiloError ? hiloError(r.__hiloError.code, r.__hiloError.num, r.__hiloError.message) : r)),
    );
  }


  // Gets made while another get of the same task is on its way go to the
  // host together, as one message (a Promise.all of gets, say), each
  // settled with its own document or error. The host answers them at once,
  // in the order of its messages, so calls after them need not wait.
  #reading = new TaskMark(); // a get went in this task
  #gets = null; // the Group of gets waiting to go

  get(id) {
    if (this.#reading.again() && !this.#closed && typeof id === 'string') {
      this.#sendPuts(); // the puts made before it go first
      if (this.#gets && !this.#gets.takes(undefined)) this.#sendGets();
      if (!this.#gets) {
        this.#gets = new Group();
        queueMicrotask(() => this.#sendGets());
      }
      return this.#gets.join(id);
    }
    return this.#call('get', id);
  }

  #sendGets() {
    const gets = this.#gets;
    if (!gets) return;
    this.#gets = null;
    this.#after(() => this.#link.call('_getMany', [gets.items])).then(
      (answer) => gets.settle(answer),
      (err) => gets.fail(err),
    );
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
      find: (c, q) => this.find(c, q),
      count: (c, q) => this.count(c, q),
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

  /** @internal A query call (query.js), run at the host. */
  _query(op, ...args) {
    if (op === 'find' && args[2] !== true) {
      // A page of documents comes as its JSON text in UTF-8: one buffer
      // handed over between the threads, where the documents as objects
      // are cloned member by member (that clone took more of the host
      // worker's time than the query itself) and a string is copied.
      return this.#call('_query', 'find', args[0], args[1], false, true).then((bytes) => JSON.parse(utf8.decode(bytes)));
    }
    return this.#call('_query', op, ...args);
  }

  /** @internal A live query (query.js), run at the host. */
  _watchQuery(collection, text, onText) {
    if (this.#closed) return Promise.reject(this.#hiloError('closed', 1902, 'store is closed'));
    this.#sendGets();
    this.#sendPuts();
    return this.#after(() => this.#watches.start(collection, text, onText));
  }

  /** @internal Reports err to the 'error' listeners (query.js). */
  _emitError(err) {
    this.#events.emit('error', err);
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

  /** @internal Whether the store syncs live (close waits for its pushes). */
  _live = true;
  /** @internal The store's Network (network.js). */
  _network = null;
  #closing;

  /**
   * Waits (at most options.timeout ms while online) for this store's
   * pending writes to reach the server, then leaves the store; resolves to
   * {pending, lost}. A shared store is persisted: lost is 0.
   */
  close(options) {
    if (!this.#closing) {
      let timeout;
      try {
        timeout = closeOptions(options, this.#hiloError);
      } catch (err) {
        return Promise.reject(err);
      }
      this._network?.close();
      this.#closing = this.#close(timeout);
    }
    return this.#closing;
  }

  async #close(timeout) {
    const pending = await settlePending(this, this._live, timeout).catch(() => 0);
    this.#sendGets();
    this.#sendPuts();
    this.#closed = true;
    this.#feed?.close();
    this.#watches.close();
    await this.#group; // the puts made before close are sent first
    await this.#link.close();
    return { pending, lost: 0 };
  }
}

installQueries(SharedStore);

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
