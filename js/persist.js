// Where a persisted store keeps its bytes (wasm/persist.go describes the
// adapter): IndexedDB in browsers and workers, files in Node (files.js,
// which the Node entry, node.js, hands in: this module imports nothing of
// Node's). index.js opens one per persisted store.

import { hiloError } from './errors.js';
import { holdsHandles, localPool, opfsAvailable, opfsFile, opfsName } from './opfs.js';
import { mark, nodePlatform } from './platform.js';

// openPersistence returns the storage adapter a persisted store is saved
// through (wasm/persist.go describes it): an IndexedDB database in browsers
// and workers, files in Node. Either way the name is locked for the store's
// lifetime, since two stores resuming one HiLo range would hand out the same
// ids.
//
// An append resolves once the operating system holds it, which a killed
// tab, browser or process cannot take back (an IndexedDB transaction with
// 'relaxed' durability, a write(2) in Node); with flush it resolves once it
// is on the disk, which a power cut cannot take back either ('strict'
// durability, fdatasync). The node tag, the HiLo range journal and the
// snapshot are always written to the disk: they are rare, and a range
// journal lost to a power cut could hand out an id twice.
export async function openPersistence(name, inNode, { flush = false } = {}) {
  if (inNode) return nodePlatform('persist').filePersistence(name, flush);
  if (typeof indexedDB === 'undefined') {
    throw hiloError('unavailable', 503, 'openStore: persist needs IndexedDB, which this JavaScript host lacks');
  }
  return indexedDBPersistence(name, flush);
}

/** lockedError is the error of a persisted name another store holds. */
export function lockedError(name, where) {
  return hiloError('locked', 423, `openStore: persist ${JSON.stringify(name)} is in use by another store (${where}); close it first`);
}

// lockName holds the Web Lock "hilodb:<name>" (across tabs and workers of
// the origin) and resolves to the function that releases it.
function lockName(name) {
  const locks = globalThis.navigator?.locks;
  const held = (globalThis[Symbol.for('hilodb.persisting')] ||= new Set());
  if (held.has(name)) return Promise.reject(lockedError(name, 'in this page'));
  held.add(name);
  const releaseHeld = () => held.delete(name);
  if (!locks) return Promise.resolve(releaseHeld);
  return new Promise((resolve, reject) => {
    locks
      .request(`hilodb:${name}`, { ifAvailable: true }, (lock) => {
        if (!lock) {
          releaseHeld();
          reject(lockedError(name, 'another tab or worker'));
          return undefined;
        }
        return new Promise((release) =>
          resolve(() => {
            releaseHeld();
            release();
          }),
        );
      })
      .catch((err) => {
        releaseHeld();
        reject(err);
      });
  });
}

// memoryKey names the global under which the runtime (runtime.js) puts its
// WebAssembly memory, for a snapshot to be read into it.
const memoryKey = Symbol.for('hilodb.memory');

// readSnapshot has load's result out give Go the snapshot in file. Where
// this realm holds the file (a dedicated worker), out says the
// snapshot's size and how to read it into Go's memory (readSnapshot(ptr,
// n), Go's buffer at ptr), so that Go reads it straight from the file: a
// snapshot of 100,000 documents is 31 MB, and reading it into JavaScript
// first cost that much memory and a copy into Go besides. Otherwise out
// holds the bytes.
async function readSnapshot(out, file) {
  if (typeof file.readInto !== 'function') {
    out.snapshot = await file.read();
    return;
  }
  out.snapshotSize = await file.size(); // opens it
  // The memory is looked up when Go asks: load may run before Go starts
  // (prefetch).
  out.readSnapshot = (ptr, n) => {
    const mem = globalThis[memoryKey];
    if (!(mem instanceof WebAssembly.Memory)) throw hiloError('unavailable', 503, 'persist: no WebAssembly memory to read the snapshot into');
    return file.readInto(new Uint8Array(mem.buffer, ptr, n));
  };
}

// indexedDBPersistence keeps a store in the IndexedDB database
// hilodb:<name>: its snapshot, node tag and HiLo ranges, and its log, either
// as records there or, for a store made where the origin private file
// system can be written (opfs.js), in the OPFS file of the name. The key
// 'backend' says which ('opfs'; absent: IndexedDB, as every store made
// before the OPFS log was). An OPFS write reaches the operating system in a
// fraction of an IndexedDB commit's time. Such a store keeps its snapshot in
// OPFS too, in one of two files: a compaction writes the one not in use and
// flushes it, then names it in the key 'snapshotFile' in a strict
// IndexedDB transaction, its commit point; reading a large snapshot from a
// file takes a fraction of reading it from IndexedDB.
async function indexedDBPersistence(name, flush) {
  const release = await lockName(name);
  let db;
  try {
    db = await new Promise((resolve, reject) => {
      const req = indexedDB.open(`hilodb:${name}`, 1);
      req.onupgradeneeded = () => req.result.createObjectStore('kv');
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
      req.onblocked = () => reject(new Error(`IndexedDB database hilodb:${name} is blocked by an older version`));
    });
  } catch (err) {
    release();
    throw hiloError('unavailable', 503, `openStore: persist: ${err.message}`);
  }
  // A write is stored once its transaction completes: handed to the
  // operating system ('relaxed'), or flushed to the disk first ('strict').
  const run = (mode, fn, durability = 'strict') =>
    new Promise((resolve, reject) => {
      const tx = db.transaction('kv', mode, { durability });
      let result;
      fn(tx.objectStore('kv'), (v) => (result = v));
      tx.oncomplete = () => resolve(result);
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error || new Error('IndexedDB transaction aborted'));
    });
  // The log is records under ['log', n], appended in order; compact
  // replaces the snapshot and deletes them in one transaction.
  const logRange = IDBKeyRange.bound(['log', 0], ['log', Number.MAX_SAFE_INTEGER]);
  let nextLog = 1;
  let closed = false;
  // With an OPFS log: the file, and the offset of the next append; the
  // snapshot file in use (0 or 1; null: the snapshot is in IndexedDB).
  let file = null;
  let at = 0;
  let pool = null;
  let snapSlot = null;
  const snapFiles = [];
  const snapFile = (slot) => (snapFiles[slot] ||= opfsFile(pool, opfsName(name, slot)));
  const useOPFS = async () => {
    // A dedicated worker holds the files itself; a page writes through a
    // writer worker.
    pool = holdsHandles() ? null : localPool();
    file = opfsFile(pool, opfsName(name));
    at = await file.size();
  };
  const read = () =>
    run('readonly', (kv, done) => {
      const out = { snapshot: null, log: null, node: null, ranges: {}, backend: null };
      const chunks = [];
      done(out);
      kv.get('snapshot').onsuccess = (e) => {
        const v = e.target.result;
        if (v) {
          out.snapshot = v.bytes;
          out.node ||= v.node || null;
        }
      };
      kv.get('node').onsuccess = (e) => {
        if (typeof e.target.result === 'string') out.node = e.target.result;
      };
      kv.get('backend').onsuccess = (e) => {
        if (typeof e.target.result === 'string') out.backend = e.target.result;
      };
      kv.get('snapshotFile').onsuccess = (e) => {
        if (e.target.result === 0 || e.target.result === 1) snapSlot = e.target.result;
      };
      kv.openCursor(logRange).onsuccess = (e) => {
        const cursor = e.target.result;
        if (!cursor) {
          out.log = concatBytes(chunks);
          return;
        }
        chunks.push(cursor.value);
        nextLog = cursor.key[1] + 1;
        cursor.continue();
      };
      kv.openCursor(IDBKeyRange.bound('range:', 'range:\uffff')).onsuccess = (e) => {
        const cursor = e.target.result;
        if (!cursor) return;
        out.ranges[cursor.key.slice('range:'.length)] = cursor.value;
        cursor.continue();
      };
    });
  // load's reads, started early by prefetch.
  let early = null;
  const loadNow = async () => {
    mark('load');
    const out = await read();
    if (out.backend === 'opfs') {
      await useOPFS();
      out.log = await file.read();
      if (snapSlot !== null) await readSnapshot(out, snapFile(snapSlot));
    } else if (out.backend === null && out.snapshot === null && out.log.length === 0 && opfsAvailable()) {
      // A new store: its log goes to OPFS, if a writer can open it.
      try {
        await useOPFS();
        if (at > 0) await file.truncate(0); // left by a store of this name whose IndexedDB database was deleted
        at = 0;
        await run('readwrite', (kv) => kv.put('opfs', 'backend'));
      } catch {
        await file?.close();
        pool?.terminate?.();
        file = pool = null;
      }
    }
    delete out.backend;
    mark('loaded');
    return out;
  };
  return {
    // prefetch starts load's reads (IndexedDB, the files' handles, the
    // log) while the caller does something else, the Go program's start;
    // load then answers with them. A snapshot read into Go's memory is
    // read only when Go asks (readSnapshot).
    prefetch() {
      early ??= loadNow();
      early.catch(() => {}); // rejects in load, once awaited
    },
    load() {
      const p = early ?? loadNow();
      early = null;
      return p;
    },
    append: async (bytes) => {
      if (!file) return run('readwrite', (kv) => kv.put(bytes, ['log', nextLog++]), flush ? 'strict' : 'relaxed');
      await file.write(at, bytes, flush);
      at += bytes.length;
    },
    // An OPFS log this thread holds open is written before appendNow
    // returns: a write is then durable when Go answers it.
    canAppendNow: () => typeof file?.writeNow === 'function',
    appendNow: (bytes) => {
      if (closed || !file?.writeNow?.(at, bytes, flush)) return false;
      at += bytes.length;
      return true;
    },
    // A 'strict' transaction is written to the disk with everything the
    // database committed before it.
    flush: () => {
      if (flush) return Promise.resolve();
      if (file) return file.flush();
      return run('readwrite', (kv) => kv.put(Date.now(), 'flushed'));
    },
    compact: async (bytes) => {
      if (!file) {
        return run('readwrite', (kv) => {
          kv.put({ bytes, savedAt: Date.now() }, 'snapshot');
          kv.delete(logRange);
        });
      }
      // The file not in use, written and flushed, then named: a crash
      // before the name's commit leaves the old snapshot and log whole.
      const slot = snapSlot === 0 ? 1 : 0;
      await snapFile(slot).replace(bytes);
      await run('readwrite', (kv) => {
        kv.put(slot, 'snapshotFile');
        kv.delete('snapshot');
      });
      snapSlot = slot;
      // Frames left in the log after a crash here are all in the
      // snapshot, and loading skips them.
      await file.truncate(0);
      at = 0;
    },
    saveNode: (node) => run('readwrite', (kv) => kv.put(node, 'node')),
    saveRange: (tag, text) => run('readwrite', (kv) => kv.put(text, `range:${tag}`)),
    close: async () => {
      if (closed) return;
      closed = true;
      try {
        await file?.close();
        for (const f of snapFiles) await f?.close();
      } finally {
        pool?.terminate?.();
        db.close();
        release();
      }
    },
    // A hidden page may be discarded without notice; every acknowledged
    // write is durable already, so this only settles relaxed ones.
    watchPage(flush) {
      if (typeof document === 'undefined') return () => {};
      const onHide = () => {
        if (document.visibilityState === 'hidden') flush();
      };
      document.addEventListener('visibilitychange', onHide);
      globalThis.addEventListener?.('pagehide', flush);
      return () => {
        document.removeEventListener('visibilitychange', onHide);
        globalThis.removeEventListener?.('pagehide', flush);
      };
    },
  };
}

// concatBytes joins Uint8Arrays into one.
function concatBytes(chunks) {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
