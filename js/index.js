// hilodb: an offline-first JSON document store for browsers and Node, with
// readable, globally unique HiLo ids ("orders/1-A") handed out locally from
// number ranges leased from a hilodb sync server.
//
// The store runs as WebAssembly (dist/hilodb.wasm, built from the Go code in
// wasm/). One Go instance is started per JavaScript realm, on the first
// openStore call, and shared by every store opened in that realm.

const runtimeKey = Symbol.for('hilodb.runtime');
const apiGlobal = '__hilodb';
const readyHook = '__hilodbOnReady';

// Decided before wasm_exec.js runs: it installs a stand-in globalThis.process
// in browsers.
const inNode =
  typeof process === 'object' &&
  process !== null &&
  typeof process.versions === 'object' &&
  process.versions !== null &&
  typeof process.versions.node === 'string';

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
  const { url, database, token, node } = options;
  const api = await runtime();
  const raw = await api.openStore({ url, database, token, node });
  return new Store(raw);
}

/**
 * A document store. Every method returns a Promise; failures reject with an
 * Error that carries `code` and `num`.
 */
export class Store {
  #raw;

  /** @internal Use openStore. */
  constructor(raw) {
    this.#raw = raw;
  }

  /** Stores doc in collection and resolves to the stored document. */
  put(collection, doc) {
    let text;
    try {
      text = JSON.stringify(doc);
    } catch (err) {
      return Promise.reject(hiloError('bad_json', 600, `put: document cannot be turned into JSON: ${err.message}`));
    }
    return this.#raw.put(collection, text === undefined ? '' : text);
  }

  /** Resolves to the document with the given _id. */
  get(id) {
    return this.#raw.get(id);
  }

  /** Removes the document with the given _id. */
  delete(id) {
    return this.#raw.delete(id).then(() => undefined);
  }

  /** Resolves to this store's node tag, the server's tag and the connection state. */
  info() {
    return this.#raw.info();
  }

  /** Returns unused ids to the server and closes the connection and the store. */
  close() {
    return this.#raw.close().then(() => undefined);
  }
}

// runtime returns the realm's Go instance's API, starting it on first use.
function runtime() {
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
    // Node 20 has no WebSocket; the Go client uses the global one.
    globalThis.WebSocket = await browserLikeWebSocket();
  }
  if (typeof globalThis.Go !== 'function') {
    await import('./dist/wasm_exec.js');
  }
  const go = new globalThis.Go();
  const wasmURL = new URL('./dist/hilodb.wasm', import.meta.url);
  const { instance } = inNode ? await instantiateFile(wasmURL, go.importObject) : await instantiateURL(wasmURL, go.importObject);

  const ready = new Promise((resolve) => {
    globalThis[readyHook] = resolve;
  });
  const exited = go.run(instance).then(() => {
    throw new Error('hilodb: the Go runtime exited');
  });
  try {
    return await Promise.race([ready, exited]);
  } finally {
    delete globalThis[readyHook];
  }
}

// browserLikeWebSocket returns a WebSocket class for Node with the browser's
// API over the ws package. It refuses close codes the way browsers do (only
// 1000 and 3000–4999 may be sent), which the Go websocket library relies on:
// on an error event it closes with 1011 from inside the event handler and
// waits for the close event. A browser's refusal makes that a quick return;
// a close that went ahead would block the event loop for good. The class
// wraps a ws socket rather than extending it because ws calls its own close
// method with any code the peer sent.
async function browserLikeWebSocket() {
  const { WebSocket: NodeSocket } = await import('ws');
  const encoder = new TextEncoder();

  class WebSocket {
    static CONNECTING = 0;
    static OPEN = 1;
    static CLOSING = 2;
    static CLOSED = 3;

    #ws;

    constructor(url, protocols) {
      this.#ws = new NodeSocket(url, protocols);
    }

    get url() {
      return this.#ws.url;
    }
    get readyState() {
      return this.#ws.readyState;
    }
    get protocol() {
      return this.#ws.protocol;
    }
    get extensions() {
      return this.#ws.extensions;
    }
    get bufferedAmount() {
      return this.#ws.bufferedAmount;
    }
    get binaryType() {
      return this.#ws.binaryType;
    }
    set binaryType(type) {
      this.#ws.binaryType = type;
    }

    get onopen() {
      return this.#ws.onopen;
    }
    set onopen(fn) {
      this.#ws.onopen = fn;
    }
    get onmessage() {
      return this.#ws.onmessage;
    }
    set onmessage(fn) {
      this.#ws.onmessage = fn;
    }
    get onerror() {
      return this.#ws.onerror;
    }
    set onerror(fn) {
      this.#ws.onerror = fn;
    }
    get onclose() {
      return this.#ws.onclose;
    }
    set onclose(fn) {
      this.#ws.onclose = fn;
    }

    addEventListener(type, listener, options) {
      this.#ws.addEventListener(type, listener, options);
    }
    removeEventListener(type, listener) {
      this.#ws.removeEventListener(type, listener);
    }

    send(data) {
      this.#ws.send(data);
    }

    close(code, reason) {
      if (code !== undefined && code !== 1000 && !(code >= 3000 && code <= 4999)) {
        throw new DOMException(`close code ${code} is neither 1000 nor in 3000–4999`, 'InvalidAccessError');
      }
      if (reason !== undefined && encoder.encode(String(reason)).length > 123) {
        throw new DOMException('close reason is longer than 123 bytes', 'SyntaxError');
      }
      this.#ws.close(code, reason);
    }
  }
  return WebSocket;
}

async function instantiateFile(url, imports) {
  const { readFile } = await import('node:fs/promises');
  return WebAssembly.instantiate(await readFile(url), imports);
}

async function instantiateURL(url, imports) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`hilodb: fetching ${url} failed: HTTP ${response.status}`);
  const type = response.headers.get('content-type') || '';
  if (typeof WebAssembly.instantiateStreaming === 'function' && type.startsWith('application/wasm')) {
    return WebAssembly.instantiateStreaming(response, imports);
  }
  // Compiling while downloading needs application/wasm; otherwise use bytes.
  return WebAssembly.instantiate(await response.arrayBuffer(), imports);
}

function hiloError(code, num, message) {
  const err = new Error(message);
  err.code = code;
  err.num = num;
  return err;
}
