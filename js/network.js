// What a store says about the network beyond what its connection tells
// Go: the browser's offline and online events turn the 'status' event at
// once (the connection's heartbeat confirms within about 2 s), and the
// 'pending' event reports the count of writes the server has not
// acknowledged as it changes, while someone listens.

/**
 * pendingEvery is how often (ms) the pending count is read while listened
 * to and writes wait; pendingIdle while none does (as often as an app that
 * polled would, so a page's other calls are rarely interleaved with it).
 */
const pendingEvery = 250;
const pendingIdle = 1000;

/** recheckAfter is how long (ms) after a browser network event the connection's own state is read again. */
const recheckAfter = 2500;

/**
 * Network follows a store for its emitter: start() once the store is open,
 * listening(type, n) when the number of listeners of type changes, close()
 * when the store closes. store has pending() and info().
 */
export class Network {
  #emit;
  #store;
  #timer = null; // the pending count's poll
  #last = -1; // the pending count last reported
  #recheck = null;
  #unlisten = () => {};
  #closed = false;

  constructor(emit, store) {
    this.#emit = emit;
    this.#store = store;
  }

  start() {
    const w = globalThis.window;
    if (typeof w !== 'object' || w === null || typeof w.addEventListener !== 'function') return;
    const offline = () => {
      this.#emit('status', { state: 'offline' });
      this.#again(recheckAfter);
    };
    // Back online: the store dials again by itself; tell what it finds.
    const online = () => this.#again(recheckAfter);
    w.addEventListener('offline', offline);
    w.addEventListener('online', online);
    this.#unlisten = () => {
      w.removeEventListener('offline', offline);
      w.removeEventListener('online', online);
    };
  }

  // again reads the connection's state after ms and reports it, so a
  // browser event never leaves the status other than the connection's.
  #again(ms) {
    clearTimeout(this.#recheck);
    this.#recheck = setTimeout(() => {
      if (this.#closed) return;
      this.#store.info().then(
        (i) => this.#emit('status', { state: i.connected ? 'online' : 'offline' }),
        () => {},
      );
    }, ms);
  }

  /** listening is told how many listeners type has now. */
  listening(type, n) {
    if (type !== 'pending' || this.#closed) return;
    if (n > 0 && this.#timer === null) {
      this.#last = -1;
      const poll = () => {
        this.#store.pending().then(
          (count) => {
            if (this.#closed || this.#timer === null) return;
            if (count !== this.#last) {
              this.#last = count;
              this.#emit('pending', { pending: count });
            }
            this.#timer = setTimeout(poll, count > 0 ? pendingEvery : pendingIdle);
          },
          () => {
            if (!this.#closed && this.#timer !== null) this.#timer = setTimeout(poll, pendingIdle);
          },
        );
      };
      this.#timer = setTimeout(poll, 0);
    } else if (n === 0 && this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
  }

  close() {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = null;
    clearTimeout(this.#recheck);
    this.#unlisten();
  }
}
