// A persisted store's log in the origin private file system. In a dedicated
// worker (a tab's host worker, shared.js, or the app's own) the store
// holds the files' sync access handles itself (HeldFile). In a page (a store
// opened with shared: false) it writes through a writer worker of its own
// (writer.js), since only dedicated workers may hold those handles.

import { hiloError } from './errors.js';

/** How long a write waits for a writer before it fails. */
const writerWait = 10000;

/**
 * WriterPool holds the writer workers a store can write through, used one
 * at a time in the order added.
 */
export class WriterPool {
  #writers = []; // {key, port, pending: Map<rid, {resolve, reject}>, opened: Set<file>}
  #waiting = [];
  #nextRid = 0;

  /** size is the number of writers at hand. */
  get size() {
    return this.#writers.length;
  }

  /** add makes port (a writer's) usable, after the ones already there. */
  add(key, port) {
    const w = { key, port, pending: new Map(), opened: new Set() };
    port.onmessage = (e) => {
      const m = e.data;
      const p = w.pending.get(m.rid);
      if (!p) return;
      w.pending.delete(m.rid);
      if (m.ok) p.resolve(m);
      else p.reject(Object.assign(new Error(m.message), { name: m.name }));
    };
    this.#writers.push(w);
    for (const wake of this.#waiting.splice(0)) wake();
  }

  /** remove drops the writer of key (its tab is gone); its requests fail with WriterGone. */
  remove(key) {
    const i = this.#writers.findIndex((w) => w.key === key);
    if (i < 0) return;
    const [w] = this.#writers.splice(i, 1);
    for (const p of w.pending.values()) p.reject(Object.assign(new Error('the writer is gone'), { name: 'WriterGone' }));
    w.pending.clear();
    w.port.close?.();
  }

  /** current resolves to the writer in use, waiting up to writerWait for one. */
  async current() {
    const deadline = Date.now() + writerWait;
    while (this.#writers.length === 0) {
      const left = deadline - Date.now();
      if (left <= 0) throw hiloError('unavailable', 503, 'persist: no tab offers a writer for the store\'s log');
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiting.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.#writers[0];
  }

  /** send asks writer w for msg and resolves to its reply. */
  send(w, msg) {
    return new Promise((resolve, reject) => {
      const rid = ++this.#nextRid;
      w.pending.set(rid, { resolve, reject });
      w.port.postMessage({ ...msg, rid });
    });
  }
}

/** localPool is a pool of one writer started by this realm (a page or a dedicated worker). */
export function localPool() {
  if (typeof Worker !== 'function') {
    throw hiloError('unavailable', 503, 'persist: the store\'s log is in the origin private file system, which only a dedicated worker can write, and this realm cannot start one');
  }
  const pool = new WriterPool();
  const worker = new Worker(new URL('./writer.js', import.meta.url), { type: 'module', name: 'hilodb-writer' });
  pool.add('local', worker);
  pool.terminate = () => worker.terminate();
  return pool;
}

/**
 * OpfsFile is one file of the origin private file system written through a
 * pool's writers. A request whose writer goes away is sent again to the
 * next one: every request is idempotent (writes name their offset).
 */
export class OpfsFile {
  #pool;
  #name;

  constructor(pool, name) {
    this.#pool = pool;
    this.#name = name;
  }

  async #do(msg) {
    for (;;) {
      const w = await this.#pool.current();
      try {
        if (!w.opened.has(this.#name)) {
          await this.#openOn(w);
          w.opened.add(this.#name);
        }
        return await this.#pool.send(w, { ...msg, file: this.#name });
      } catch (err) {
        if (err?.name === 'WriterGone') continue;
        throw hiloError('unavailable', 503, `persist: ${this.#name}: ${err?.message ?? err}`);
      }
    }
  }

  // openOn opens the file on writer w, waiting while a writer that is going
  // away still holds it.
  async #openOn(w) {
    const deadline = Date.now() + writerWait;
    for (;;) {
      try {
        return await this.#pool.send(w, { op: 'open', file: this.#name });
      } catch (err) {
        if (err?.name !== 'NoModificationAllowedError' || Date.now() > deadline) throw err;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }
  }

  /** size resolves to the file's size, opening it. */
  async size() {
    return (await this.#do({ op: 'open' })).size;
  }

  /** read resolves to the whole file. */
  async read() {
    return (await this.#do({ op: 'read' })).bytes;
  }

  /** write puts bytes at offset at (on the disk too with flush). */
  async write(at, bytes, flush) {
    await this.#do({ op: 'write', at, bytes, flush });
  }

  /** replace makes the file bytes, on the disk. */
  async replace(bytes) {
    await this.#do({ op: 'replace', bytes });
  }

  /** truncate cuts the file to size, on the disk. */
  async truncate(size) {
    await this.#do({ op: 'truncate', size });
  }

  /** flush puts everything written on the disk. */
  async flush() {
    await this.#do({ op: 'flush' });
  }

  /** close lets go of the file (another writer may open it). */
  async close() {
    const w = await this.#pool.current().catch(() => null);
    if (!w || !w.opened.has(this.#name)) return;
    w.opened.delete(this.#name);
    await this.#pool.send(w, { op: 'close', file: this.#name }).catch(() => {});
  }
}

/**
 * HeldFile is one file of the origin private file system whose sync access
 * handle this realm (a dedicated worker) holds itself: a write is done when
 * the call returns, without a message to another worker. It has OpfsFile's
 * methods.
 */
export class HeldFile {
  #name;
  #handle = null;
  #opening = null;

  constructor(name) {
    this.#name = name;
  }

  // handle opens the file once, waiting while a realm that is going away
  // (a closed tab's worker) still holds it.
  #open() {
    if (this.#handle) return this.#handle;
    this.#opening ??= (async () => {
      const root = await navigator.storage.getDirectory();
      const fh = await root.getFileHandle(this.#name, { create: true });
      const deadline = Date.now() + writerWait;
      for (;;) {
        try {
          this.#handle = await fh.createSyncAccessHandle();
          return this.#handle;
        } catch (err) {
          if (err?.name !== 'NoModificationAllowedError' || Date.now() > deadline) throw err;
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      }
    })().finally(() => {
      this.#opening = null;
    });
    return this.#opening;
  }

  async #do(fn) {
    try {
      return fn(this.#handle ?? (await this.#open()));
    } catch (err) {
      throw hiloError('unavailable', 503, `persist: ${this.#name}: ${err?.message ?? err}`);
    }
  }

  /** size resolves to the file's size, opening it. */
  size() {
    return this.#do((h) => h.getSize());
  }

  /** read resolves to the whole file. */
  read() {
    return this.#do((h) => {
      const bytes = new Uint8Array(h.getSize());
      h.read(bytes, { at: 0 });
      return bytes;
    });
  }

  /**
   * readInto reads the file from its start into view, at once (the file
   * must be open: size opens it), and returns how many bytes it read: the
   * file's size or view's length, whichever is less. A read into a view
   * of the WebAssembly memory puts a snapshot where Go reads it, without
   * a copy of it in JavaScript first.
   */
  readInto(view) {
    const h = this.#handle;
    if (!h) throw hiloError('unavailable', 503, `persist: ${this.#name}: not open`);
    let done = 0;
    while (done < view.length) {
      const n = h.read(view.subarray(done), { at: done });
      if (n <= 0) break;
      done += n;
    }
    return done;
  }

  /**
   * writeNow is write done before it returns: true once written, false
   * when the file is not open yet (nothing written). It throws as write
   * rejects.
   */
  writeNow(at, bytes, flush) {
    const h = this.#handle;
    if (!h) return false;
    try {
      writeAll(h, this.#name, at, bytes);
      if (flush) h.flush();
    } catch (err) {
      throw hiloError('unavailable', 503, `persist: ${this.#name}: ${err?.message ?? err}`);
    }
    return true;
  }

  /** write puts bytes at offset at (on the disk too with flush). */
  write(at, bytes, flush) {
    return this.#do((h) => {
      writeAll(h, this.#name, at, bytes);
      if (flush) h.flush();
    });
  }

  /** replace makes the file bytes, on the disk. */
  replace(bytes) {
    return this.#do((h) => {
      h.truncate(0);
      writeAll(h, this.#name, 0, bytes);
      h.flush();
    });
  }

  /** truncate cuts the file to size, on the disk. */
  truncate(size) {
    return this.#do((h) => {
      h.truncate(size);
      h.flush();
    });
  }

  /** flush puts everything written on the disk. */
  flush() {
    return this.#do((h) => h.flush());
  }

  /** close lets go of the file (another realm may open it). */
  async close() {
    await this.#opening?.catch(() => {});
    const h = this.#handle;
    this.#handle = null;
    h?.close();
  }
}

/**
 * writeAll writes bytes at offset at of the sync access handle h (of file),
 * however many writes that takes.
 */
export function writeAll(h, file, at, bytes) {
  for (let done = 0; done < bytes.length; ) {
    const n = h.write(bytes.subarray(done), { at: at + done });
    if (n <= 0) throw new Error(`short write to ${file} at ${at + done}`);
    done += n;
  }
}

/**
 * holdsHandles reports whether this realm can hold OPFS sync access handles
 * itself: a dedicated worker.
 */
export function holdsHandles() {
  const scope = globalThis.DedicatedWorkerGlobalScope;
  return typeof scope === 'function' && globalThis instanceof scope && typeof globalThis.FileSystemFileHandle?.prototype?.createSyncAccessHandle === 'function';
}

/**
 * opfsFile is file name of the origin private file system, held by this
 * realm without pool, else written through pool's writers.
 */
export function opfsFile(pool, name) {
  return pool ? new OpfsFile(pool, name) : new HeldFile(name);
}

/**
 * opfsName is the file name of persist name's log, or with slot (0 or 1) of
 * one of its two snapshot files. Any string is a valid persist name.
 */
export function opfsName(name, slot) {
  const base = `hilodb-${encodeURIComponent(name)}`;
  return slot === undefined ? `${base}.log` : `${base}.snap${slot}`;
}

/** opfsAvailable reports whether this realm can keep a log in OPFS. */
export function opfsAvailable() {
  if (typeof navigator !== 'object' || typeof navigator.storage?.getDirectory !== 'function') return false;
  return holdsHandles() || typeof Worker === 'function';
}
