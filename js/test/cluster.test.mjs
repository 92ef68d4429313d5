// Failover of the npm package on a real cluster: three sync servers (A, B,
// C) over a three-member etcd cluster, the server in use killed with
// SIGKILL while stores write, sync and take identities through it.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { openStore } from '../node.js';
import { startCluster } from './cluster.mjs';

const DB = 'failover';
const WRITERS = 3;
const DOCS_PER_WRITER = 120; // more than the first HiLo ranges hold: new leases after the kill
const RETRY_MS = 60_000;

let cluster;
let A, B, C;

before(
  async () => {
    cluster = await startCluster({ servers: 3 });
    [A, B, C] = cluster.servers;
  },
  { timeout: 180_000 },
);

after(async () => {
  await cluster?.stop();
});

// retry runs fn until it resolves, while it fails because the server in
// use went away (the store moves to the next one meanwhile).
async function retry(fn, what) {
  const deadline = Date.now() + RETRY_MS;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (!['needs_server', 'unavailable'].includes(err.code) || Date.now() > deadline) {
        throw new Error(`${what}: ${err.code}: ${err.message}`, { cause: err });
      }
      await new Promise((ok) => setTimeout(ok, 50));
    }
  }
}

// onA opens a store that starts on A and knows B and C. It replicates when
// the test says (sync()), so that what each sync does is the test's.
function onA(extra = {}) {
  return openStore({ url: A.ws, urls: [B.ws, C.ws], database: DB, requestTimeout: 2000, sync: false, ...extra });
}

// readAll opens a store on server alone, pulls everything and returns the
// documents of collection by id.
async function readAll(server, collection) {
  const reader = await openStore({ url: server.ws, database: DB, requestTimeout: 5000 });
  try {
    await reader.sync();
    const out = new Map();
    let after = null;
    do {
      const page = await reader.list(collection, { limit: 1000, after });
      for (const d of page.docs) out.set(d._id, d);
      after = page.next;
    } while (after);
    return out;
  } finally {
    await reader.close();
  }
}

test('stores on A go on through B and C when A is killed mid-write: no write lost, no id twice, preconditions hold', { timeout: 300_000 }, async (t) => {
  const writers = [];
  for (let i = 0; i < WRITERS; i++) writers.push(await onA());
  const stale = await onA(); // holds a document it will write on a stale _rev after the kill
  const other = await openStore({ url: C.ws, database: DB, requestTimeout: 5000, sync: false });
  const closers = [...writers, stale, other];
  try {
    // The precondition's setup, all before the kill: stale writes notes/1
    // through A; other (on C) takes it and writes it again.
    const note = await stale.put('notes', { _id: 'notes/1', text: 'first' });
    await stale.sync();
    assert.equal((await stale.info()).serverTag, 'A');
    await other.sync();
    const newer = await other.put('notes', { ...(await other.get('notes/1')), text: 'newer' });
    assert.notEqual(newer._rev, note._rev);
    await other.sync();

    const ids = []; // every id a put resolved with
    const synced = new Set(); // ids whose sync resolved (acknowledged by a server)
    const identities = []; // every identity value handed out
    let killed = false;
    let afterKill = 0; // syncs that resolved after the kill
    let killedAt = 0;
    let firstAfter = 0; // ms from the kill to the first sync that resolved after it
    const loops = writers.map(async (store, w) => {
      for (let n = 0; n < DOCS_PER_WRITER; n += 4) {
        const batch = await Promise.all(
          [0, 1, 2, 3].map((k) => store.put('orders', { writer: w, n: n + k })),
        );
        for (const d of batch) ids.push(d._id);
        identities.push(await retry(() => store.nextIdentityFor('invoices'), 'identity'));
        await retry(() => store.sync(), 'sync');
        for (const d of batch) synced.add(d._id);
        if (killed && afterKill++ === 0) firstAfter = Date.now() - killedAt;
        if (w === 0 && n === 40) {
          // Mid-write: A goes, with the other writers' requests in flight.
          await cluster.kill('A');
          killedAt = Date.now();
          killed = true;
        }
      }
      await retry(() => store.sync(), 'final sync');
      assert.equal(await store.pending(), 0, `writer ${w} has writes the cluster did not take`);
    });
    await Promise.all(loops);
    assert.ok(killed && afterKill > 0, 'the writers synced after the kill');
    const byTag = {};
    for (const id of ids) byTag[id.slice(-1)] = (byTag[id.slice(-1)] ?? 0) + 1;
    t.diagnostic(`${ids.length} ids by server tag ${JSON.stringify(byTag)}; ${afterKill} syncs after the kill, the first ${firstAfter} ms after it; ${identities.length} identities`);
    for (const [w, store] of writers.entries()) {
      const tag = (await store.info()).serverTag;
      assert.ok(tag === 'B' || tag === 'C', `writer ${w} is on ${tag} after A was killed`);
    }

    // No id twice, across stores and across the move.
    assert.equal(new Set(ids).size, ids.length, 'a HiLo id was handed out twice');
    assert.equal(ids.length, WRITERS * DOCS_PER_WRITER);
    assert.equal(new Set(identities).size, identities.length, `an identity was handed out twice: ${identities}`);
    // Ranges leased after the kill carry the tag of B or C.
    assert.ok(ids.some((id) => /-[BC]$/.test(id)), 'no HiLo range was leased from B or C after the kill');

    // Every write is on the cluster: read back through C, with its content.
    const onC = await readAll(C, 'orders');
    for (const id of ids) assert.ok(onC.has(id), `${id} (acknowledged: ${synced.has(id)}) is not on the cluster`);
    assert.equal(onC.size, ids.length);
    for (const d of onC.values()) assert.equal(typeof d.writer, 'number');

    // Identities after the move continue above every value handed out.
    const next = await retry(() => writers[0].nextIdentityFor('invoices'), 'identity');
    assert.ok(next > Math.max(...identities), `identity ${next} after ${Math.max(...identities)}`);

    // A write on a stale _rev, made after the kill and pushed through B or
    // C, is refused: the cluster keeps the newer text and the stale store
    // keeps its write as a conflict.
    await stale.put('notes', { ...note, text: 'stale' });
    await retry(() => stale.sync(), 'stale sync');
    assert.notEqual((await stale.info()).serverTag, 'A');
    assert.equal((await readAll(B, 'notes')).get('notes/1').text, 'newer');
    assert.equal((await stale.get('notes/1')).text, 'newer');
    assert.deepEqual((await stale.conflicts('notes/1')).map((c) => c.doc?.text), ['stale']);
  } finally {
    await Promise.allSettled(closers.map((s) => s.close()));
  }
});

test('a store whose servers are all killed and one restarted goes on there with its pending writes', { timeout: 180_000 }, async () => {
  const store = await openStore({ url: B.ws, urls: [C.ws, A.ws], database: DB, requestTimeout: 2000, sync: false });
  try {
    const first = await store.put('late', { n: 1 });
    await retry(() => store.sync(), 'sync');
    await cluster.kill('B');
    await cluster.kill('C');
    // Offline: the write is local and pending.
    const second = await store.put('late', { n: 2 });
    await assert.rejects(store.sync(), (err) => err.code === 'needs_server');
    assert.equal(await store.pending(), 1);
    await cluster.start('A');
    await retry(() => store.sync(), 'sync after restart');
    assert.equal(await store.pending(), 0);
    assert.equal((await store.info()).serverTag, 'A');
    const onA2 = await readAll(A, 'late');
    assert.deepEqual([...onA2.keys()].sort(), [first._id, second._id].sort());
    assert.notEqual(first._id, second._id);
  } finally {
    await store.close();
  }
});
