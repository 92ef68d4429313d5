// Live change feeds: store.watch(listener, {since}) calls listener with the
// documents written after since, local writes and remote changes alike, as
// they are written. It reads the store's local change feed (changes()), so
// a listener sees every write once at its latest version, in order, and
// none is lost when writes come faster than the listener takes them.

const defaultBatch = 1000;

/**
 * Feed runs the live watchers of one store. changes(since, limit) is the
 * store's changes call; notify(head) tells it the change feed moved.
 */
export class Feed {
  #changes;
  #hiloError;
  #head; // the newest sequence number heard of, or undefined
  #watchers = new Set();
  #heads = new Set(); // functions told of every new head
  #closed = false;

  constructor(changes, hiloError) {
    this.#changes = changes;
    this.#hiloError = hiloError;
  }

  /** The newest sequence number heard of, undefined before the first. */
  get head() {
    return this.#head;
  }

  /** notify records that the change feed reached head and wakes the watchers. */
  notify(head) {
    if (typeof head !== 'number' || head < 0) return;
    if (this.#head === undefined || head > this.#head) this.#head = head;
    for (const w of this.#watchers) w.wake();
    for (const fn of this.#heads) fn(head);
  }

  /** onHead calls fn with every new head (the shared worker forwards them to the tabs). */
  onHead(fn) {
    this.#heads.add(fn);
  }

  /**
   * watch starts a watcher; it returns the function that stops it. onError
   * receives errors of the feed itself (not of the listener).
   */
  watch(listener, options, onError) {
    if (this.#closed) throw this.#hiloError('closed', 1902, 'store is closed');
    if (typeof listener !== 'function') throw this.#hiloError('bad_request', 400, 'watch: listener must be a function');
    const { since, limit = defaultBatch, ...rest } = options ?? {};
    const unknown = Object.keys(rest);
    if (unknown.length > 0) throw this.#hiloError('bad_request', 400, `watch: unknown option ${JSON.stringify(unknown[0])}; want since or limit`);
    if (since !== undefined && (!Number.isSafeInteger(since) || since < 0)) {
      throw this.#hiloError('bad_request', 400, 'watch: since must be a whole number of 0 or more');
    }
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 10000) throw this.#hiloError('bad_request', 400, 'watch: limit must be 1 to 10000');
    const w = new Watcher(this.#changes, listener, since ?? this.#head, limit, onError);
    this.#watchers.add(w);
    w.wake();
    return () => {
      w.stop();
      this.#watchers.delete(w);
    };
  }

  /** close stops every watcher. */
  close() {
    this.#closed = true;
    for (const w of this.#watchers) w.stop();
    this.#watchers.clear();
    this.#heads.clear();
  }
}

class Watcher {
  #changes;
  #listener;
  #cursor; // the last sequence number delivered; undefined: not known yet
  #limit;
  #onError;
  #running = false;
  #again = false;
  #stopped = false;

  constructor(changes, listener, cursor, limit, onError) {
    this.#changes = changes;
    this.#listener = listener;
    this.#cursor = cursor;
    this.#limit = limit;
    this.#onError = onError;
  }

  stop() {
    this.#stopped = true;
  }

  // wake runs the pump, or asks the running one to look again.
  wake() {
    if (this.#stopped) return;
    this.#again = true;
    if (this.#running) return;
    this.#running = true;
    this.#pump();
  }

  async #pump() {
    try {
      while (this.#again && !this.#stopped) {
        this.#again = false;
        if (this.#cursor === undefined) {
          // Started before the feed's head was known: from here on.
          this.#cursor = (await this.#changes(0, 1)).head;
        }
        for (;;) {
          if (this.#stopped) return;
          const page = await this.#changes(this.#cursor, this.#limit);
          if (this.#stopped || page.results.length === 0) break;
          this.#cursor = page.last;
          try {
            await this.#listener({ results: page.results, last: page.last });
          } catch (err) {
            // As EventTarget does: report it, go on with the next batch.
            setTimeout(() => {
              throw err;
            });
          }
          if (page.results.length < this.#limit) break;
        }
      }
    } catch (err) {
      if (err?.code === 'closed') {
        this.#stopped = true;
        return;
      }
      this.#onError?.(err);
    } finally {
      this.#running = false;
    }
  }
}
