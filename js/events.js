// A store's events ('conflict', 'change', 'error', 'status', 'pending')
// and the app's merge function as the Go side calls it.

import { hiloError } from './errors.js';

const eventTypes = new Set(['conflict', 'change', 'error', 'status', 'pending']);

// Emitter holds a store's listeners. The Go side calls emit from inside its
// own work; listeners run later, from a microtask, so a listener that throws
// or calls the store does so outside Go.
export class Emitter {
  #listeners = new Map();
  #status = ''; // the last 'status' state emitted

  /** network, when set, is told how many listeners each type has (network.js). */
  network = null;

  on(type, fn) {
    if (!eventTypes.has(type)) throw hiloError('bad_request', 400, `on: unknown event ${JSON.stringify(type)}; want conflict, change, error, status or pending`);
    if (typeof fn !== 'function') throw hiloError('bad_request', 400, 'on: listener must be a function');
    if (!this.#listeners.has(type)) this.#listeners.set(type, new Set());
    this.#listeners.get(type).add(fn);
    this.network?.listening(type, this.#listeners.get(type).size);
  }

  off(type, fn) {
    this.#listeners.get(type)?.delete(fn);
    this.network?.listening(type, this.#listeners.get(type)?.size ?? 0);
  }

  /** listening reports whether type has listeners (Go builds a 'change' event only then). */
  listening(type) {
    return (this.#listeners.get(type)?.size ?? 0) > 0;
  }

  emit(type, payload) {
    if (type === 'status') {
      // Go and the browser's network events both report it: once a change.
      const state = (typeof payload === 'string' ? JSON.parse(payload) : payload)?.state;
      if (state === this.#status) return;
      this.#status = state;
    }
    const fns = this.#listeners.get(type);
    if (!fns || fns.size === 0) return;
    queueMicrotask(() => {
      const event = typeof payload === 'string' ? JSON.parse(payload) : payload;
      for (const fn of [...fns]) {
        try {
          fn(event);
        } catch (err) {
          // As EventTarget does: report it without stopping the others.
          setTimeout(() => {
            throw err;
          });
        }
      }
    });
  }
}

let merging = 0; // how deep this realm is in merge functions Go called

/**
 * inMerge reports whether an app's merge function is running: Go called
 * it inside a write transaction, and a call into Go's store now would wait
 * for that transaction, which cannot end before the call does. A store
 * call made there that Go would answer at once runs once the merge is
 * done (store.js).
 */
export function inMerge() {
  return merging > 0;
}

// mergeWith wraps the app's merge function for the Go side, which calls it
// inside the store's write transaction with two versions as JSON text and
// needs an answer at once: {kind: 'remote' | 'local' | 'delete' | 'doc',
// doc} or {kind: 'error', message}.
export function mergeWith(fn) {
  return (localText, remoteText) => {
    try {
      const local = JSON.parse(localText);
      const remote = JSON.parse(remoteText);
      let out;
      merging++;
      try {
        out = fn(local, remote);
      } finally {
        merging--;
      }
      if (out === remote) return { kind: 'remote' };
      if (out === local) return { kind: 'local' };
      if (out === null) return { kind: 'delete' };
      if (out !== null && typeof out === 'object' && typeof out.then === 'function') {
        return { kind: 'error', message: 'onConflict returned a Promise; it must return the merged document at once' };
      }
      if (typeof out !== 'object' || Array.isArray(out) || out === undefined) {
        return { kind: 'error', message: `onConflict returned ${Array.isArray(out) ? 'an array' : typeof out}; want a document, null, local or remote` };
      }
      return { kind: 'doc', doc: JSON.stringify(out) };
    } catch (err) {
      return { kind: 'error', message: `onConflict threw: ${err && err.message ? err.message : String(err)}` };
    }
  };
}
