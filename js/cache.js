// The read cache of a store of its own (index.js): the JSON text of
// recently read documents, so that a get needs no call into Go.

// ReadCache holds the JSON text of recently read documents, so a get needs
// no call into Go. It holds at most 10,000 documents of up to 64 KiB each,
// dropping the oldest first: a ring of the ids in the order they were set
// says which (finding the Map's first key instead costs microseconds once
// it has dropped many, as V8 steps over the holes they leave). An id set
// twice sits in the ring twice and goes at the older place: early, never late.
const cacheSize = 10000;

export class ReadCache {
  #m = new Map();
  #ring = new Array(cacheSize);
  #next = 0;
  #closed = false;
  #fast; // FastReads, to read the drop log with
  #log = -1; // the drop log's address in Go's memory, or -1
  #dec;

  /**
   * readDrops makes the cache drop the ids Go's writes leave in the drop
   * log at address at (wasm/cache.go) before each look-up: a little-endian
   * uint32 of the bytes held, a byte set once it overflowed, then the ids,
   * each followed by a NUL. Go writes it only inside a write, and the cache
   * empties it, so a look-up never sees a document older than a write that
   * returned.
   */
  readDrops(fast, at) {
    this.#fast = fast;
    this.#log = at;
    this.#dec = new TextDecoder();
  }

  #drain() {
    const at = this.#log;
    if (at < 0) return;
    const u8 = this.#fast.bytes();
    const used = u8[at] | (u8[at + 1] << 8) | (u8[at + 2] << 16) | (u8[at + 3] << 24);
    const over = u8[at + 4];
    if (used === 0 && over === 0) return;
    if (over !== 0) {
      this.#m.clear();
    } else if (this.#m.size > 0) {
      const ids = this.#dec.decode(u8.subarray(at + 8, at + 8 + used)).split('\0');
      for (let i = 0; i < ids.length - 1; i++) this.#m.delete(ids[i]); // the last is after the final NUL
    }
    u8.fill(0, at, at + 5);
  }

  get(id) {
    this.#drain();
    return typeof id === 'string' ? this.#m.get(id) : undefined;
  }

  set(id, text) {
    this.#drain();
    if (this.#closed || text.length > 65536) return;
    const old = this.#ring[this.#next];
    if (old !== undefined) this.#m.delete(old);
    this.#ring[this.#next] = id;
    this.#next = (this.#next + 1) % cacheSize;
    this.#m.set(id, text);
  }

  // deleteAll drops the ids in text, joined by NUL.
  deleteAll(text) {
    if (this.#m.size === 0) return;
    for (const id of text.split('\0')) this.#m.delete(id);
  }

  close() {
    this.#closed = true;
    this.#log = -1; // Go lets go of the log when the store closes
    this.#m.clear();
    this.#ring = [];
  }
}
