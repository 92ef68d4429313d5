// hilodb: an offline-first JSON document store for browsers and Node, with
// readable, globally unique HiLo ids ("orders/1-A") handed out locally from
// number ranges leased from a hilodb sync server.
//
// The store runs as WebAssembly (dist/hilodb.wasm, built from the Go code in
// wasm/). One Go instance is started per JavaScript realm, on the first
// openStore call, and shared by every store opened in that realm.
//
// This module is the package's browser (and default) entry and imports
// nothing of Node's; in Node the package's entry is node.js, which hands in
// what only Node has (platform.js). Opening a store is here; the store's
// methods are in store.js, its events in events.js.

import { canShare, openShared } from './tabs.js';
import { HiloError, hiloError } from './errors.js';
import { Emitter, mergeWith } from './events.js';
import { Network } from './network.js';
import { ReadCache } from './cache.js';
import { knownOptions, openOptions } from './options.js';
import { openPersistence } from './persist.js';
import { mark } from './platform.js';
import { fastKey, inNode, runtime } from './runtime.js';
import { Store } from './store.js';
import { Feed } from './watch.js';

/**
 * Opens a store connected to a hilodb sync server.
 *
 * @param {import('./index.js').OpenOptions} options
 * @returns {Promise<Store>}
 */
export async function openStore(options) {
  if (options === null || typeof options !== 'object') {
    throw hiloError('bad_request', 400, 'openStore: want an options object {url, database, token}');
  }
  knownOptions('openStore', options, openOptions);
  const { url, urls, database, token, node, sync = true, onConflict = 'server', reserve, durability, requestTimeout, heartbeat, shared, changeFeed } = options;
  if (options.persist !== undefined && options.persist !== false && (typeof options.persist !== 'string' || options.persist === '')) {
    throw hiloError('bad_request', 400, 'openStore: persist must be a non-empty string, or false');
  }
  // A page keeps its store by default (under the database's name): a write
  // it was told succeeded survives a reload that comes before the push.
  const persist = options.persist === false ? undefined : (options.persist ?? (inPage() && typeof database === 'string' && database !== '' ? database : undefined));
  if (typeof sync !== 'boolean') throw hiloError('bad_request', 400, 'openStore: sync must be true or false');
  if (onConflict !== 'server' && onConflict !== 'local' && typeof onConflict !== 'function') {
    throw hiloError('bad_request', 400, "openStore: onConflict must be 'server', 'local' or a function");
  }
  if (durability !== undefined && durability !== 'strict' && durability !== 'relaxed' && durability !== 'flushed') {
    throw hiloError('bad_request', 400, "openStore: durability must be 'strict', 'flushed' or 'relaxed'");
  }
  if (shared !== undefined && typeof shared !== 'boolean') throw hiloError('bad_request', 400, 'openStore: shared must be true or false');
  if (persist !== undefined && shared !== false && canShare()) {
    if (typeof url !== 'string' || typeof database !== 'string') {
      throw hiloError('bad_request', 400, 'openStore: url and database must be strings');
    }
    return openShared({ ...options, persist }, { hiloError, Emitter });
  }
  // The store's files open while the Go program starts.
  const opening = persist === undefined ? undefined : openPersistence(persist, inNode, { flush: durability === 'flushed' });
  opening?.then((a) => a.prefetch?.(), () => {}); // rejects below, once awaited
  let api;
  try {
    api = await runtime();
  } catch (err) {
    await opening?.then((a) => a.close(), () => {});
    throw err;
  }
  const emitter = new Emitter();
  const cache = new ReadCache();
  const adapter = await opening;
  const fast = api[fastKey];
  if (adapter && fast && typeof adapter.appendNow === 'function') {
    // A log frame Go writes at once is passed as its place in Go's memory
    // and written from there, not copied into a new array first.
    adapter.appendNowAt = (at, length) => adapter.appendNow(fast.bytes().subarray(at, at + length));
  }
  let raw;
  const feed = new Feed((since, limit) => raw.changes(since, limit), hiloError);
  try {
    raw = await api.openStore({
      url,
      urls,
      database,
      token,
      node,
      sync,
      reserve,
      onConflict: typeof onConflict === 'function' ? mergeWith(onConflict) : onConflict,
      emit: (type, payload) => emitter.emit(type, payload),
      listening: (type) => emitter.listening(type),
      persist: adapter,
      // 'flushed' waits for the append as 'strict' does; the adapter's
      // append is what goes down to the disk.
      durability: durability === 'flushed' ? 'strict' : durability,
      requestTimeout,
      heartbeat,
      // Where the fast path can read Go's memory, the ids go to a drop log
      // there, which the cache reads itself (no call into JavaScript).
      dropLog: api[fastKey] !== undefined,
      invalidate: (ids, head) => {
        if (ids !== '') cache.deleteAll(ids);
        // Called inside Go's write: the watchers read the feed afterwards.
        if (head >= 0) queueMicrotask(() => feed.notify(head));
      },
      changeFeed,
    });
  } catch (err) {
    await adapter?.close();
    throw err;
  }
  mark('opened');
  if (typeof raw.dropLog === 'number') cache.readDrops(api[fastKey], raw.dropLog);
  if (changeFeed) feed.notify((await raw.changes(0, 1)).head);
  const store = new Store(raw, emitter, adapter, cache, changeFeed ? feed : undefined, api[fastKey]);
  store._closing = { live: sync, kept: adapter !== undefined };
  store._network = watchNetwork(emitter, raw);
  return store;
}

export { HiloError, Store };

// watchNetwork starts what network.js adds to a store's events, over
// source's pending() and info().
function watchNetwork(emitter, source) {
  const network = new Network((type, payload) => emitter.emit(type, payload), source);
  emitter.network = network;
  network.start();
  return network;
}

// inPage reports whether this realm is a browser page (a window with
// IndexedDB), where a store persists unless told persist: false.
function inPage() {
  return !inNode && typeof window === 'object' && typeof indexedDB === 'object' && indexedDB !== null;
}
