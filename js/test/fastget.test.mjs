// The fast path of get (a //go:wasmexport call into Go's mirror of the
// documents, wasm/fastget.go) under stress, against the real sync server:
// gets interleaved with puts, deletes, syncs that pull another store's
// writes, garbage collections forced in Go and large allocations that grow
// Go's heap and the WebAssembly memory. A get must never crash the runtime
// and never return a version older than the last write that resolved.

import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { openStore } from '../node.js';
import { buildServer, startServer } from './server.mjs';

const fastKey = Symbol.for('hilodb.fastReads');

let bin;
let cleanupBin = async () => {};
let server;

before(async () => {
  ({ bin, cleanup: cleanupBin } = await buildServer());
  server = await startServer(bin);
});

after(async () => {
  try {
    await server?.stop();
  } finally {
    await cleanupBin();
  }
});

// countFast wraps the realm's FastReads so the test knows how many gets
// the fast path answered (not the read cache, not getText).
function countFast() {
  const fast = globalThis.__hilodb?.[fastKey];
  assert.ok(fast, 'the Go instance exports no fast path');
  const get = fast.get.bind(fast);
  const counts = { hits: 0, misses: 0, number: undefined };
  fast.get = (number, id) => {
    counts.number = number; // the store's number in Go
    const r = get(number, id);
    if (r === undefined) counts.misses++;
    else counts.hits++;
    return r;
  };
  return { counts, restore: () => delete fast.get };
}

describe('the fast path of get', () => {
  test('interleaved with puts, deletes, syncs, collections and big allocations', async (t) => {
    const database = `fast${Date.now()}`;
    const store = await openStore({ url: server.wsURL, database });
    const other = await openStore({ url: server.wsURL, database });
    const { counts, restore } = countFast();
    try {
      const keys = 200;
      const latest = new Map(); // id → the n of its last resolved write; -1: deleted
      const remote = new Map(); // id → the n other wrote and store has pulled
      const check = (id, doc, floor) => {
        assert.equal(doc._id, id);
        assert.ok(doc.n >= floor, `get ${id}: n ${doc.n}, but ${floor} had resolved`);
      };
      const bigPad = 'x'.repeat(200 << 10);
      let n = 0;
      const rounds = 20000;
      for (let i = 0; i < rounds; i++) {
        const id = `orders/k${i % keys}`;
        const step = i % 16;
        if (step < 8) {
          // A get, often right after the document's write dropped it from
          // the read cache: the fast path answers.
          const want = latest.get(id);
          if (want === undefined) continue;
          if (want === -1) {
            await assert.rejects(store.get(id), (err) => err.code === 'not_found');
          } else {
            check(id, await store.get(id), want);
          }
        } else if (step < 12) {
          // put fills the read cache with what it stored; putMany does not,
          // so the gets after it reach Go.
          const v = ++n;
          if (step === 8) await store.put('orders', { _key: `k${i % keys}`, n: v });
          else await store.putMany('orders', [{ _key: `k${i % keys}`, n: v }]);
          latest.set(id, v);
        } else if (step === 12) {
          // A put not awaited: a get in between sees the old or the new
          // version, never one older than the last resolved.
          const v = ++n;
          const p = store.put('orders', { _key: `k${i % keys}`, n: v });
          const floor = latest.get(id) ?? -1;
          const g = store.get(id).then(
            (doc) => check(id, doc, floor),
            (err) => assert.ok(floor === -1 && err.code === 'not_found', `get ${id}: ${err.message}`),
          );
          await p;
          latest.set(id, v);
          await g;
        } else if (step === 13 && i % 64 === 13) {
          if ((latest.get(id) ?? -1) >= 0) {
            await store.delete(id);
            latest.set(id, -1);
          }
        } else if (step === 14 && i % 256 === 14) {
          // The other store writes; after store's sync resolves, a get is
          // never older than what it pulled.
          const v = ++n;
          const rid = `remote/r${i % 37}`;
          await other.putMany('remote', [{ _key: `r${i % 37}`, n: v }]);
          await other.sync();
          await store.sync();
          remote.set(rid, v);
          for (const [rid2, v2] of remote) check(rid2, await store.get(rid2), v2);
        } else if (step === 15 && i % 1024 === 15) {
          // Garbage collections forced in Go, and large documents that grow
          // Go's heap, the WebAssembly memory and the output buffer.
          await globalThis.__hilodb.gc();
          const bigs = await store.putMany('big', Array.from({ length: 8 }, (_, j) => ({ _key: `b${j}`, n: i, pad: bigPad })));
          for (const b of bigs) assert.equal((await store.get(b._id)).pad.length, bigPad.length);
          await globalThis.__hilodb.gc();
        }
      }
      // Every document as the store holds it, through the fast path or not.
      for (const [id, want] of latest) {
        if (want === -1) await assert.rejects(store.get(id), (err) => err.code === 'not_found');
        else assert.equal((await store.get(id)).n, want);
      }
      t.diagnostic(`${counts.hits} gets from the fast path, ${counts.misses} fell back`);
      assert.ok(counts.hits > 2000, `only ${counts.hits} gets took the fast path (${counts.misses} fell back)`);
    } finally {
      restore();
      await Promise.allSettled([store.close(), other.close()]);
    }
  });

  test('gets inside a merge function (Go is in the middle of a write) answer the version before it', async () => {
    const database = `merge${Date.now()}`;
    const seen = [];
    let b;
    const merge = (local, remote) => {
      // Called by Go, synchronously, inside the write transaction that
      // pulls the remote version: the fast path runs nested in that call,
      // while Go may be anywhere in a garbage collection cycle.
      seen.push({ id: local.doc._id, want: local.doc, got: b.get(local.doc._id) });
      return { ...remote.doc, merged: true };
    };
    const a = await openStore({ url: server.wsURL, database });
    b = await openStore({ url: server.wsURL, database, onConflict: merge });
    const { counts, restore } = countFast();
    try {
      const keys = 200;
      for (let round = 0; round < 5; round++) {
        seen.length = 0;
        await a.putMany('orders', Array.from({ length: keys }, (_, i) => ({ _key: `k${i}`, v: 'a', round })));
        // putMany does not fill b's read cache: the nested gets go to Go.
        await b.putMany('orders', Array.from({ length: keys }, (_, i) => ({ _key: `k${i}`, v: 'b', round, pad: 'x'.repeat(i * 50) })));
        await a.sync();
        await b.sync();
        if (round % 2 === 1) await globalThis.__hilodb.gc();
        assert.equal(seen.length, keys, `round ${round}: the merge function ran ${seen.length} times`);
        for (const { id, want, got } of seen) {
          const doc = await got;
          assert.equal(doc._id, id);
          assert.equal(doc.v, 'b', `round ${round}: the nested get of ${id} did not answer the local version`);
          assert.equal(doc.round, want.round);
        }
        const now = await b.get('orders/k1');
        assert.equal(now.merged, true);
        assert.equal(now.v, 'a');
        assert.equal(now.round, round);
        await a.sync();
      }
      assert.ok(counts.hits >= 5 * keys, `only ${counts.hits} nested gets took the fast path`);
    } finally {
      restore();
      await Promise.allSettled([a.close(), b.close()]);
    }
  });

  test('a persisted store, reopened, answers gets of the documents it loaded through the fast path', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hilodb-fast-'));
    const path = join(dir, 'fast.hilodb');
    const database = `persist${Date.now()}`;
    try {
      const first = await openStore({ url: server.wsURL, database, persist: path });
      // More than one part of the mirror's background catch-up (2,000).
      const written = await first.putMany('orders', Array.from({ length: 5000 }, (_, i) => ({ _key: `k${String(i).padStart(4, '0')}`, i })));
      await first.close();
      const again = await openStore({ url: server.wsURL, database, persist: path });
      const fast = globalThis.__hilodb[fastKey];
      const peek = fast.get.bind(fast); // the fast path alone: no getText, no filling
      const { counts, restore } = countFast();
      try {
        // The mirror catches up in the background, in parts, after
        // openStore resolved. A get of a document not there yet takes
        // getText (and adds it): the first one may.
        assert.deepEqual(await again.get(written[0]._id), written[0]);
        const { number } = counts;
        const last = written[written.length - 1]._id;
        // It reads a part only once the store has had no call for a while:
        // while calls keep coming, the last of 10 parts is not read.
        for (const end = Date.now() + 600; Date.now() < end; ) {
          await again.info();
          await new Promise((ok) => setTimeout(ok, 5));
        }
        assert.equal(peek(number, last), undefined, 'the mirror read the loaded documents while calls kept coming');
        for (const deadline = Date.now() + 10000; peek(number, last) === undefined; ) {
          assert.ok(Date.now() < deadline, 'the mirror did not catch up with the loaded documents in 10 s');
          await new Promise((ok) => setTimeout(ok, 10));
        }
        const before = counts.hits;
        for (const d of written.slice(1)) assert.deepEqual(await again.get(d._id), d);
        assert.equal(counts.hits - before, written.length - 1, `${counts.misses} of the loaded documents were not in the mirror`);
        // A write after the reopen is seen as well.
        await again.putMany('orders', [{ _key: 'k0007', i: 'new' }]);
        assert.equal((await again.get('orders/k0007')).i, 'new');
      } finally {
        restore();
        await again.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a closed store answers no get from the fast path', async () => {
    const store = await openStore({ url: server.wsURL, database: `closed${Date.now()}` });
    await store.putMany('orders', [{ _key: 'k', v: 1 }]);
    const { counts, restore } = countFast();
    try {
      const closing = store.close();
      await assert.rejects(store.get('orders/k'), (err) => err.code === 'closed');
      await closing;
      await assert.rejects(store.get('orders/k'), (err) => err.code === 'closed');
      assert.equal(counts.hits, 0);
    } finally {
      restore();
    }
  });
});

// A put whose id is at hand passes its strings to Go through the write
// buffer and reads the stored text from the output buffer (putIn), and Go
// tells the read cache of writes through a drop log in its memory instead
// of a call into JavaScript (wasm/writes.go, wasm/cache.go).
describe('puts through the write buffer, and the drop log', () => {
  test('strings of every kind and size come through, with receipts', async () => {
    const store = await openStore({ url: server.wsURL, database: `putin${Date.now()}` });
    const fast = globalThis.__hilodb[fastKey];
    const put = fast.put.bind(fast);
    let through = 0;
    fast.put = (...args) => {
      through++;
      return put(...args);
    };
    try {
      const cases = [
        ['ascii', 'orders', { _key: 'a1', n: 1 }],
        ['not ASCII in the document', 'orders', { _key: 'a2', name: 'Zoë 東京 🚀', q: '"\\\n' }],
        ['another collection', 'orders_2', { _key: 'a3', n: 3 }],
        ['a document past the write buffer (putText answers)', 'orders', { _key: 'a4', pad: 'y'.repeat(70 << 10) }],
        ['a stored text past the output buffer', 'orders', { _key: 'a5', pad: 'z'.repeat(40 << 10) }],
      ];
      for (const [what, coll, doc] of cases) {
        const stored = await store.put(coll, doc);
        for (const [k, v] of Object.entries(doc)) assert.deepEqual(stored[k], v, `${what}: ${k}`);
        assert.deepEqual(await store.get(stored._id), stored, what);
      }
      assert.ok(through >= cases.length, `${through} puts reached the write buffer`);
      // With a receipt, as the host of a shared store writes: stored in the
      // put's transaction, its key not ASCII either.
      const r = await store._putReceipted('tab-ü/link/3', 9, 'orders', { _key: 'a6' });
      const receipt = JSON.parse(await store._receipt('tab-ü/link/3'));
      assert.equal(receipt.seq, 9);
      assert.equal(receipt.items[0].id, r._id);
      // Collection names are ASCII: one that is not is refused as before.
      await assert.rejects(store.put('bestellungen-ü', { _key: 'a7' }), (err) => err.code === 'illegal_name');
      // A rejected document rejects, as before.
      await assert.rejects(store.put('orders', { _key: 'bad key!' }), (err) => err.code === 'illegal_key' && err.num === 1221);
    } finally {
      delete fast.put;
      await store.close();
    }
  });

  test('the read cache never answers a version older than a write that resolved', async () => {
    const store = await openStore({ url: server.wsURL, database: `drops${Date.now()}` });
    try {
      const n = 300;
      // put fills the read cache; putMany writes without filling it, so a
      // stale entry would be read back if the drop were missed.
      for (let i = 0; i < n; i++) await store.put('orders', { _key: `k${i}`, v: 0 });
      for (let i = 0; i < n; i++) assert.equal((await store.get(`orders/k${i}`)).v, 0);
      await store.putMany('orders', Array.from({ length: n }, (_, i) => ({ _key: `k${i}`, v: 1 })));
      for (let i = 0; i < n; i++) assert.equal((await store.get(`orders/k${i}`)).v, 1, `k${i} after putMany`);
      // More ids than the drop log holds in one write: the cache drops all.
      const long = (i) => `k${i}-${'p'.repeat(40)}`;
      for (let i = 0; i < 50; i++) await store.put('orders', { _key: long(i), v: 0 });
      await store.putMany('orders', Array.from({ length: 2000 }, (_, i) => ({ _key: long(i), v: 2 })));
      for (let i = 0; i < 50; i++) assert.equal((await store.get(`orders/${long(i)}`)).v, 2, `${long(i)} after an overflow`);
      // A delete drops its document too.
      await store.delete('orders/k0');
      await assert.rejects(store.get('orders/k0'), (err) => err.code === 'not_found');
    } finally {
      await store.close();
    }
  });
});
