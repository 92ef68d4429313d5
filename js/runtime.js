// Starting the WebAssembly build of the Go core, once per JavaScript realm
// (index.js's openStore calls runtime), and get's fast path into it.

import { HiloError, hiloError } from './errors.js';
import { mark, nodePlatform } from './platform.js';

const runtimeKey = Symbol.for('hilodb.runtime');
// The property of the Go API that holds its FastReads, when this package
// started the instance and it exports the fast path.
export const fastKey = Symbol.for('hilodb.fastReads');
const apiGlobal = '__hilodb';
const readyHook = '__hilodbOnReady';
const errorClassGlobal = '__hilodbHiloError';

// Decided before wasm_exec.js runs: it installs a stand-in globalThis.process
// in browsers.
export const inNode =
  typeof process === 'object' &&
  process !== null &&
  typeof process.versions === 'object' &&
  process.versions !== null &&
  typeof process.versions.node === 'string';

// FastReads is get's fast path into Go: functions the WebAssembly instance
// exports (//go:wasmexport, wasm/fastget.go), called directly rather than
// through a js.FuncOf. The id goes into a Go buffer as UTF-8 and the
// document's JSON text comes out of another, read from the instance's
// memory. Go answers only from its mirror of the documents, under locks it
// merely tries, without allocating: a negative answer (not in the mirror, a
// lock held, too long) means the store's getText must answer.
class FastReads {
  #go;
  #x;
  #mem;
  #u8;
  #in;
  #inSize;
  #enc = new TextEncoder();
  #dec = new TextDecoder();
  #writeAt; // the write buffer's address, once put asked
  #writeEnd;

  constructor(go, exports) {
    this.#go = go;
    this.#x = exports;
    this.#mem = exports.mem;
    this.#u8 = new Uint8Array(this.#mem.buffer);
    this.#in = exports.hilodbInput();
    this.#inSize = exports.hilodbInputSize();
  }

  /** fromInstance returns the FastReads of go's instance, or undefined when it exports none. */
  static fromInstance(go, instance) {
    const x = instance.exports;
    const names = ['hilodbGet', 'hilodbInput', 'hilodbInputSize', 'hilodbOutput'];
    if (!(x.mem instanceof WebAssembly.Memory) || names.some((n) => typeof x[n] !== 'function')) return undefined;
    return new FastReads(go, x);
  }

  /** bytes returns a view of the whole WebAssembly memory (a new one once it grew). */
  bytes() {
    let u8 = this.#u8;
    if (u8.buffer !== this.#mem.buffer) u8 = this.#u8 = new Uint8Array(this.#mem.buffer); // the memory grew
    return u8;
  }

  // ascii writes s at u8[at…] when it is ASCII and fits before end: its
  // length, or -1 (then encode it).
  static #ascii(u8, at, end, s) {
    const len = s.length;
    if (at + len > end) return -1;
    for (let n = 0; n < len; n++) {
      const c = s.charCodeAt(n);
      if (c >= 0x80) return -1;
      u8[at + n] = c;
    }
    return len;
  }

  // utf8 writes s at u8[at…end) as UTF-8: its length in bytes, or -1 when
  // it does not fit.
  #utf8(u8, at, end, s) {
    if (s.length < 64) {
      const n = FastReads.#ascii(u8, at, end, s);
      if (n >= 0) return n;
    }
    const r = this.#enc.encodeInto(s, u8.subarray(at, end));
    return r.read === s.length ? r.written : -1;
  }

  /**
   * put is raw.putText(collection, text, key, seq) through the write
   * buffer: the lengths of the three strings as little-endian uint32s in
   * its 16-byte header, the strings as UTF-8 after it; raw.putIn(seq)
   * takes them from there and answers with the stored text's length in the
   * output buffer. Anything else it answers (undefined, an Error, a
   * Promise, a string) is returned as putText would; a put whose strings
   * do not fit the buffer is putText's.
   */
  put(raw, collection, text, key, seq) {
    if (this.#writeAt === undefined) {
      if (typeof this.#x.hilodbWriteInput !== 'function') return raw.putText(collection, text, key, seq);
      this.#writeAt = this.#x.hilodbWriteInput();
      this.#writeEnd = this.#writeAt + this.#x.hilodbWriteInputSize();
    }
    if (this.#go.exited || typeof raw.putIn !== 'function') return raw.putText(collection, text, key, seq);
    const u8 = this.bytes();
    const at = this.#writeAt + 16;
    const end = this.#writeEnd;
    const c = this.#utf8(u8, at, end, collection);
    const t = c < 0 ? -1 : this.#utf8(u8, at + c, end, text);
    const k = t < 0 || key === undefined ? 0 : this.#utf8(u8, at + c + t, end, key);
    if (c < 0 || t < 0 || k < 0 || (key !== undefined && k === 0)) return raw.putText(collection, text, key, seq);
    FastReads.#u32(u8, this.#writeAt, c);
    FastReads.#u32(u8, this.#writeAt + 4, t);
    FastReads.#u32(u8, this.#writeAt + 8, k);
    const r = key === undefined ? raw.putIn() : raw.putIn(seq);
    if (typeof r !== 'number') return r;
    // Asked each time: Go moves the buffer when it grows it.
    const out = this.#x.hilodbOutput();
    return this.#dec.decode(this.bytes().subarray(out, out + r));
  }

  /**
   * find runs the query text over collection of store number, as the
   * store's find does, through the hilodbFind export (wasm/fastfind.go):
   * the collection and the text as UTF-8 at the start of the write buffer,
   * the page's JSON text out of the page buffer. It returns the page's
   * UTF-8 bytes, copied into a buffer of their own when own is true (to
   * hand over to another thread) or a view valid until the next call into
   * Go otherwise; undefined when the store's find must answer (the strings
   * do not fit, no such export); it throws the query's error.
   */
  find(number, collection, text, own) {
    if (this.#go.exited || typeof this.#x.hilodbFind !== 'function') return undefined;
    this.#writeBuffer();
    const u8 = this.bytes();
    const at = this.#writeAt;
    const c = this.#utf8(u8, at, this.#writeEnd, collection);
    const t = c < 0 ? -1 : this.#utf8(u8, at + c, this.#writeEnd, text);
    if (t < 0) return undefined;
    const r = this.#x.hilodbFind(number, c, t);
    if (r === -1) return undefined;
    // Asked each time: a page may outgrow the buffer.
    const out = this.#x.hilodbFindOutput();
    if (r < -1) {
      const e = JSON.parse(this.#dec.decode(this.bytes().subarray(out, out + (-2 - r))));
      throw hiloError(e.code, e.num, e.message);
    }
    return own ? this.bytes().slice(out, out + r) : this.bytes().subarray(out, out + r);
  }

  /** decode returns the text of UTF-8 bytes. */
  decode(bytes) {
    return this.#dec.decode(bytes);
  }

  #writeBuffer() {
    if (this.#writeAt === undefined) {
      this.#writeAt = this.#x.hilodbWriteInput();
      this.#writeEnd = this.#writeAt + this.#x.hilodbWriteInputSize();
    }
  }

  /** get returns the JSON text of document id of store number, or undefined. */
  get(number, id) {
    // Once the Go program has exited, getText reports it.
    if (typeof id !== 'string' || id.length > this.#inSize || this.#go.exited) return undefined;
    // Lone surrogates become U+FFFD, as they do on their way into Go
    // through getText; an id that does not fit goes to getText.
    const n = this.#utf8(this.bytes(), this.#in, this.#in + this.#inSize, id);
    if (n < 0) return undefined;
    const size = this.#x.hilodbGet(number, n);
    if (size < 0) return undefined;
    // Asked each time: getText moves the buffer when it grows it.
    const out = this.#x.hilodbOutput();
    return this.#dec.decode(this.bytes().subarray(out, out + size));
  }

  static #u32(u8, at, n) {
    u8[at] = n & 0xff;
    u8[at + 1] = (n >>> 8) & 0xff;
    u8[at + 2] = (n >>> 16) & 0xff;
    u8[at + 3] = n >>> 24;
  }
}

// wasmURL is where the Go program lies, beside this module.
function wasmURL() {
  return new URL('./dist/hilodb.wasm', import.meta.url);
}

// compiledKey holds what useCompiled was given: a promise of the module
// compiled ahead of the realm's first openStore, or of undefined (runtime
// then fetches and compiles it itself).
const compiledKey = Symbol.for('hilodb.compiled');

/**
 * compileWasm fetches and compiles the Go program: a promise of the
 * module, or of undefined when that failed (runtime then fetches it again
 * and says what is wrong with it) or cannot be done here (Node).
 */
export function compileWasm() {
  if (inNode || typeof WebAssembly?.compileStreaming !== 'function') return Promise.resolve(undefined);
  return WebAssembly.compileStreaming(fetch(wasmURL())).catch(() => undefined);
}

/**
 * useCompiled gives this realm's runtime the module compiled ahead of it
 * (by compileWasm, here or in the page that started this worker), or a
 * promise of it: the first openStore waits for it and only instantiates
 * it. A realm whose runtime started already keeps its own.
 */
export function useCompiled(module) {
  if (!globalThis[runtimeKey]) globalThis[compiledKey] = Promise.resolve(module);
}

// runtime returns the realm's Go instance's API, starting it on first use.
export function runtime() {
  let started = globalThis[runtimeKey];
  if (!started) {
    started = startRuntime();
    globalThis[runtimeKey] = started;
    // A failed start may be retried by the next openStore.
    started.catch(() => {
      if (globalThis[runtimeKey] === started) delete globalThis[runtimeKey];
    });
  }
  return started;
}

async function startRuntime() {
  const existing = globalThis[apiGlobal];
  if (existing && typeof existing.openStore === 'function') return existing;

  if (inNode && typeof globalThis.WebSocket === 'undefined') {
    // Node 20 has no WebSocket; the Go client uses the global one, and the
    // ws package's has the browser's API.
    globalThis.WebSocket = await nodePlatform('openStore').WebSocket();
  }
  if (typeof globalThis.Go !== 'function') {
    await import('./dist/wasm_exec.js');
  }
  const go = new globalThis.Go();
  reuseCallObjects(go);
  const early = await globalThis[compiledKey];
  mark('compiled');
  delete globalThis[compiledKey];
  const instance = early
    ? await WebAssembly.instantiate(early, go.importObject)
    : inNode
      ? (await instantiateFile(wasmURL(), go.importObject)).instance
      : (await instantiateURL(wasmURL(), go.importObject)).instance;
  growHeadroom(instance.exports.mem);
  mark('instantiated');
  // persist.js reads a snapshot into it (readSnapshot).
  globalThis[Symbol.for('hilodb.memory')] = instance.exports.mem;

  const ready = new Promise((resolve) => {
    globalThis[readyHook] = resolve;
  });
  // Go makes its rejections with this class (wasm/main.go, errorClass).
  globalThis[errorClassGlobal] = HiloError;
  const exited = go.run(instance).then(() => {
    throw new Error('hilodb: the Go runtime exited');
  });
  try {
    const api = await Promise.race([ready, exited]);
    mark('go-ready');
    const fast = FastReads.fromInstance(go, instance);
    if (fast) Object.defineProperty(api, fastKey, { value: fast });
    return api;
  } finally {
    delete globalThis[readyHook];
  }
}

// headroomBytes is the memory growHeadroom adds: the Go side's collector
// headroom (gcHeadroom in wasm/main.go), which a store's heap grows into
// before its first collection.
const headroomBytes = 32 << 20;

// growHeadroom grows the module's memory by headroomBytes before Go starts,
// which then takes that memory for its heap without growing it (Go reads
// the memory's size at start). Its pages are left to the operating system
// to give as Go first writes them: writing every page ahead, to spare a
// first bulk write its page faults, cost a page's openStore 25-47 ms on
// this project's development VM and spared that write nothing measurable
// (make bench-browser, BASE= the build that wrote them). A memory that
// cannot grow is left as it is.
export function growHeadroom(mem) {
  if (!(mem instanceof WebAssembly.Memory)) return;
  try {
    mem.grow(headroomBytes / 65536);
  } catch {
    // Go grows it as it needs.
  }
}

// reuseCallObjects makes each Go function hand Go the same event object
// and the same array of arguments on every call. wasm_exec.js makes new ones
// per call, and Go holds a reference to each until its collector finalizes
// it: under a stream of calls that rarely collects in Go (puts answered at
// once allocate little there), thousands pile up in JavaScript's old
// generation, whose collection then lands in whatever runs next. Go reads
// both at the start of a call (syscall/js handleEvent: this, then every
// argument, before the function runs) and sets result at its end, so a
// call made from inside another call may overwrite them: the outer one
// has read them already, and reads its result only after the inner one
// returned.
export function reuseCallObjects(go) {
  if (typeof go._makeFuncWrapper !== 'function' || go._makeFuncWrapper.length !== 1) return;
  go._makeFuncWrapper = function (id) {
    const self = this;
    const args = [];
    const event = { id, this: undefined, args, result: undefined };
    return function () {
      const n = arguments.length;
      args.length = n;
      for (let i = 0; i < n; i++) args[i] = arguments[i];
      event.this = this;
      event.result = undefined;
      self._pendingEvent = event;
      try {
        self._resume();
        return event.result;
      } finally {
        // Let go of what this call held: the next call sets them again.
        event.result = undefined;
        event.this = undefined;
        args.length = 0;
      }
    };
  };
}

async function instantiateFile(url, imports) {
  return WebAssembly.instantiate(await nodePlatform('openStore').readFile(url), imports);
}

async function instantiateURL(url, imports) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`hilodb: fetching ${url} failed: HTTP ${response.status}`);
  const type = response.headers.get('content-type') || '';
  if (typeof WebAssembly.instantiateStreaming === 'function' && type.startsWith('application/wasm')) {
    try {
      return await WebAssembly.instantiateStreaming(response.clone(), imports);
    } catch {
      // Read the bytes below, which tell what is wrong with them.
    }
  }
  // Compiling while downloading needs application/wasm; otherwise use bytes.
  const bytes = await response.arrayBuffer();
  const magic = new Uint8Array(bytes, 0, Math.min(4, bytes.byteLength));
  if (magic.length < 4 || magic[0] !== 0 || magic[1] !== 0x61 || magic[2] !== 0x73 || magic[3] !== 0x6d) {
    // A dev server answered with a page (its fallback) where the file
    // should be: the package was moved away from its dist/ directory.
    throw hiloError(
      'unavailable',
      503,
      `hilodb: ${url} is not WebAssembly (served as ${type || 'unknown type'}). A bundler moved the package away from its dist/ files: exclude 'hilodb' from its dependency optimizer (Vite: optimizeDeps: { exclude: ['hilodb'] })`,
    );
  }
  return WebAssembly.instantiate(bytes, imports);
}
