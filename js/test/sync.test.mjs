// Replication and persistence of the npm package in Node against the real
// sync server: two stores of one database edit the same documents, sync in
// either order and converge.

import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';

import { openStore } from '../node.js';
import { buildServer, freePort, startServer } from './server.mjs';

let bin;
let cleanupBin = async () => {};
let server;
let dbCount = 0;
let open = [];

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

afterEach(async () => {
  const stores = open;
  open = [];
  await Promise.allSettled(stores.map((s) => s.close()));
});

// freshDB names a database no other test uses.
function freshDB() {
  return `sync${process.pid}x${++dbCount}`;
}

// opened opens a store on server and closes it after the test. It records
// the store's events in store.seen. It replicates when told to (sync()),
// unless options say sync: true.
async function opened(database, options = {}) {
  const store = await openStore({ url: server.wsURL, database, sync: false, ...options });
  open.push(store);
  store.seen = { conflict: [], change: [], error: [] };
  for (const type of Object.keys(store.seen)) store.on(type, (e) => store.seen[type].push(e));
  return store;
}

// waitFor polls fn until it returns a truthy value or throws no more, for
// at most ms; it returns that value or fails with the last error.
async function waitFor(fn, ms = 5000, what = 'condition') {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
      last = new Error(`${what}: got ${JSON.stringify(v)}`);
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what} not met within ${ms} ms: ${last?.message}`);
    await new Promise((ok) => setTimeout(ok, 20));
  }
}

async function rejectsWith(promise, code, num) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.code, code, `code of ${err.message}`);
    assert.equal(err.num, num, `num of ${err.message}`);
    return true;
  });
}

// shared makes two stores of one database that both hold id at the same
// revision, with nothing pending.
async function shared(optionsA = {}, optionsB = {}, doc = { v: 0 }) {
  const db = freshDB();
  const a = await opened(db, optionsA);
  const b = await opened(db, optionsB);
  const base = await a.put('orders', { _key: 'k', ...doc });
  assert.deepEqual(await a.sync(), { pushed: 1, pulled: 0 });
  assert.deepEqual(await b.sync(), { pushed: 0, pulled: 1 });
  assert.equal((await b.get(base._id))._rev, base._rev);
  return { a, b, id: base._id, base };
}

// converged asserts that both stores hold the same version of id (or both
// none) and returns it.
async function converged(a, b, id) {
  const get = (s) => s.get(id).catch((err) => (err.code === 'not_found' ? null : Promise.reject(err)));
  const [da, db] = await Promise.all([get(a), get(b)]);
  assert.deepEqual(da, db, 'the stores differ');
  assert.equal(await a.pending(), 0, 'a has pending writes');
  assert.equal(await b.pending(), 0, 'b has pending writes');
  return da;
}

describe('sync', () => {
  test('pending counts local writes until they are pushed', async () => {
    const s = await opened(freshDB());
    assert.equal(await s.pending(), 0);
    const d1 = await s.put('orders', { n: 1 });
    await s.put('orders', { n: 2 });
    await s.put('orders', { _key: 'same', n: 3 });
    await s.put('orders', { _key: 'same', n: 4 }); // one document, one pending write
    assert.equal(await s.pending(), 3);
    assert.deepEqual(await s.sync(), { pushed: 3, pulled: 0 });
    assert.equal(await s.pending(), 0);
    await s.delete(d1._id);
    assert.equal(await s.pending(), 1);
    assert.deepEqual(await s.sync(), { pushed: 1, pulled: 0 });
    assert.equal(await s.pending(), 0);
    assert.deepEqual(s.seen.conflict, []);
    assert.deepEqual(s.seen.error, []);
  });

  for (const firstName of ['a', 'b']) {
    test(`offline edits of one document converge, the first to sync wins (${firstName} first)`, async () => {
      const { a, b, id } = await shared();
      const stores = { a, b };
      const first = stores[firstName];
      const second = firstName === 'a' ? b : a;
      const secondName = firstName === 'a' ? 'b' : 'a';
      const mine = {
        a: await a.put('orders', { _key: 'k', v: 'from a' }),
        b: await b.put('orders', { _key: 'k', v: 'from b' }),
      };

      assert.deepEqual(await first.sync(), { pushed: 1, pulled: 0 });
      const r = await second.sync();
      assert.equal(r.pushed, 0, 'the losing write was pushed');
      const r2 = await first.sync();
      assert.equal(r2.pulled, 0, 'the winner pulled a change');

      const kept = await converged(a, b, id);
      assert.equal(kept.v, `from ${firstName}`);
      assert.equal(kept._rev, mine[firstName]._rev);

      // The losing version stays readable, and the loser was told.
      const lost = await second.conflicts(id);
      assert.deepEqual(lost, [{ id, rev: mine[secondName]._rev, doc: mine[secondName], deleted: false }]);
      // The winner hears of it too: the losing write, won over.
      assert.deepEqual(await first.conflicts(id), [{ id, rev: mine[secondName]._rev, doc: mine[secondName], deleted: false, won: true }]);
      await waitFor(() => second.seen.conflict.length === 1, 2000, 'a conflict event');
      const ev = second.seen.conflict[0];
      assert.equal(ev.id, id);
      assert.equal(ev.kept, 'remote');
      assert.equal(ev.local.rev, mine[secondName]._rev);
      assert.equal(ev.local.doc.v, `from ${secondName}`);
      assert.equal(ev.remote.rev, mine[firstName]._rev);
      await waitFor(() => first.seen.conflict.length === 1, 2000, "the winner's conflict event");
      assert.equal(ev.won, false);
      assert.equal(first.seen.conflict[0].won, true);
      assert.equal(first.seen.conflict[0].kept, 'local');
      assert.equal(first.seen.conflict[0].remote.rev, mine[secondName]._rev);
      // The loser's document changed under it: that is a change.
      await waitFor(() => second.seen.change.some((e) => e.changes.some((c) => c.id === id && c.rev === kept._rev)), 2000, 'a change event');

      await second.clearConflicts(id);
      assert.deepEqual(await second.conflicts(id), []);
    });
  }

  test('live sync carries a put to the other store and an edit back', async () => {
    const db = freshDB();
    const a = await opened(db, { sync: true });
    const b = await opened(db, { sync: true });
    const doc = await a.put('orders', { item: 'apple' });
    const got = await waitFor(() => b.get(doc._id), 5000, `${doc._id} on b`);
    assert.deepEqual(got, doc);
    await waitFor(() => b.seen.change.some((e) => e.changes.some((c) => c.id === doc._id && c.rev === doc._rev && !c.deleted)), 2000, 'a change event on b');

    const edited = await b.put('orders', { ...got, item: 'pear' });
    await waitFor(async () => (await a.get(doc._id))._rev === edited._rev, 5000, 'the edit on a');
    assert.equal((await a.get(doc._id)).item, 'pear');

    await a.delete(doc._id);
    await waitFor(() => b.get(doc._id).then(() => false, (err) => err.code === 'not_found'), 5000, 'the delete on b');
    await waitFor(() => b.seen.change.some((e) => e.changes.some((c) => c.id === doc._id && c.deleted)), 2000, 'a delete change event');
    await waitFor(async () => (await a.pending()) === 0 && (await b.pending()) === 0, 5000, 'nothing pending');
    // Writes echoed back from the server are not changes of the writer.
    assert.ok(!a.seen.change.some((e) => e.changes.some((c) => c.id === doc._id && c.rev === doc._rev)), 'a saw its own put as a change');
    assert.deepEqual([...a.seen.error, ...b.seen.error], []);
  });

  test('live sync keeps up with 200 puts from each of two stores', async () => {
    const db = freshDB();
    const a = await opened(db, { sync: true });
    const b = await opened(db, { sync: true });
    const [da, dbs] = await Promise.all([
      Promise.all(Array.from({ length: 200 }, (_, i) => a.put('orders', { from: 'a', i }))),
      Promise.all(Array.from({ length: 200 }, (_, i) => b.put('orders', { from: 'b', i }))),
    ]);
    await waitFor(async () => {
      await Promise.all([...da.map((d) => b.get(d._id)), ...dbs.map((d) => a.get(d._id))]);
      return true;
    }, 5000, 'every document on both stores');
    await waitFor(async () => (await a.pending()) === 0 && (await b.pending()) === 0, 5000, 'nothing pending');
  });

  test("onConflict 'local' keeps the local write and pushes it on top", async () => {
    const { a, b, id } = await shared({}, { onConflict: 'local' });
    const fromA = await a.put('orders', { _key: 'k', v: 'from a' });
    const fromB = await b.put('orders', { _key: 'k', v: 'from b' });
    await a.sync();
    const r = await b.sync();
    assert.equal(r.pushed, 1, 'the local winner was not pushed');
    await a.sync();
    const kept = await converged(a, b, id);
    assert.equal(kept.v, 'from b');
    assert.notEqual(kept._rev, fromB._rev, 'the winner must be a new write on top of the server');
    // b keeps the version it overrode.
    assert.deepEqual(
      (await b.conflicts(id)).map((c) => [c.rev, c.doc.v]),
      [[fromA._rev, 'from a']],
    );
    await waitFor(() => b.seen.conflict.length === 1, 2000, 'a conflict event');
    assert.equal(b.seen.conflict[0].kept, 'local');
  });

  test('an onConflict function merges, and the merge reaches every store', async () => {
    const calls = [];
    const union = (local, remote) => {
      calls.push({ local, remote });
      return { ...remote.doc, tags: [...new Set([...remote.doc.tags, ...local.doc.tags])].sort() };
    };
    const { a, b, id } = await shared({ onConflict: union }, { onConflict: union }, { tags: ['x'] });
    const fromA = await a.put('orders', { _key: 'k', tags: ['x', 'a'] });
    const fromB = await b.put('orders', { _key: 'k', tags: ['x', 'b'] });
    await b.sync();
    await a.sync(); // a merges and pushes
    await b.sync();
    const kept = await converged(a, b, id);
    assert.deepEqual(kept.tags, ['a', 'b', 'x']);
    assert.equal(kept._id, id);
    assert.equal(calls.length, 1, 'the merge function ran more than once');
    assert.equal(calls[0].local.rev, fromA._rev);
    assert.equal(calls[0].remote.rev, fromB._rev);
    assert.equal(calls[0].local.deleted, false);
    assert.deepEqual(calls[0].remote.doc.tags, ['x', 'b']);
    await waitFor(() => a.seen.conflict.length === 1, 2000, 'a conflict event');
    assert.equal(a.seen.conflict[0].kept, 'merged');
  });

  test('an onConflict function that returns a Promise is refused: the server wins and an error is reported', async () => {
    const { a, b, id } = await shared({}, { onConflict: async (local) => local.doc });
    await a.put('orders', { _key: 'k', v: 'from a' });
    const fromB = await b.put('orders', { _key: 'k', v: 'from b' });
    await a.sync();
    await b.sync();
    const kept = await converged(a, b, id);
    assert.equal(kept.v, 'from a');
    assert.deepEqual((await b.conflicts(id)).map((c) => c.rev), [fromB._rev]);
    await waitFor(() => b.seen.error.length === 1, 2000, 'an error event');
    assert.equal(b.seen.error[0].code, 'merge_failed');
    assert.match(b.seen.error[0].message, /Promise/);
  });

  test('an onConflict function that returns null deletes', async () => {
    const { a, b, id } = await shared({}, { onConflict: () => null });
    await a.put('orders', { _key: 'k', v: 'from a' });
    await b.put('orders', { _key: 'k', v: 'from b' });
    await a.sync();
    await b.sync();
    await a.sync();
    assert.equal(await converged(a, b, id), null);
  });

  test('a delete against an edit: the first to sync wins either way', async () => {
    // a deletes, b edits; a syncs first: the delete wins.
    {
      const { a, b, id } = await shared();
      await a.delete(id);
      const edit = await b.put('orders', { _key: 'k', v: 'edited' });
      await a.sync();
      await b.sync();
      await a.sync();
      assert.equal(await converged(a, b, id), null);
      assert.deepEqual(await b.conflicts(id), [{ id, rev: edit._rev, doc: edit, deleted: false }]);
      await waitFor(() => b.seen.change.some((e) => e.changes.some((c) => c.id === id && c.deleted)), 2000, 'a delete change event');
    }
    // a deletes, b edits; b syncs first: the edit wins, the delete is kept as a conflict.
    {
      const { a, b, id } = await shared();
      await a.delete(id);
      const edit = await b.put('orders', { _key: 'k', v: 'edited' });
      await b.sync();
      await a.sync();
      await b.sync();
      const kept = await converged(a, b, id);
      assert.equal(kept.v, 'edited');
      assert.equal(kept._rev, edit._rev);
      const lost = await a.conflicts(id);
      assert.equal(lost.length, 1);
      assert.equal(lost[0].deleted, true);
      assert.equal(lost[0].doc, null);
      await waitFor(() => a.seen.conflict.length === 1 && a.seen.conflict[0].local.deleted, 2000, 'a conflict event');
    }
  });

  test('sync without a server rejects with needs_server and keeps the writes pending', async () => {
    const port = await freePort();
    const s = await openStore({ url: `ws://127.0.0.1:${port}/v1/sync`, database: 'shop' });
    open.push(s);
    await s.put('orders', { _key: 'offline' });
    await rejectsWith(s.sync(), 'needs_server', 1900);
    assert.equal(await s.pending(), 1);
  });

  test('live sync without a server reports the error once, then catches up when the server is there', async () => {
    const port = await freePort();
    const url = `ws://127.0.0.1:${port}/v1/sync`;
    const s = await openStore({ url, database: 'late', sync: true });
    open.push(s);
    const errors = [];
    s.on('error', (e) => errors.push(e));
    await s.put('orders', { _key: 'early', v: 1 });
    await waitFor(() => errors.length > 0, 5000, 'an error event');
    assert.equal(errors[0].code, 'needs_server');
    await new Promise((ok) => setTimeout(ok, 600)); // several retries
    assert.equal(errors.length, 1, `the same error was reported ${errors.length} times`);
    const late = await startServer(bin, [], { port });
    try {
      await waitFor(async () => (await s.pending()) === 0, 8000, 'the pending write pushed');
      const other = await openStore({ url, database: 'late' });
      try {
        await other.sync();
        assert.equal((await other.get('orders/early')).v, 1);
      } finally {
        await other.close();
      }
    } finally {
      await s.close();
      await late.stop();
    }
  });

  test('a change event is made once someone listens for it', async () => {
    const db = freshDB();
    const s = await openStore({ url: server.wsURL, database: db, sync: false }); // no listener yet
    open.push(s);
    const other = await opened(db);
    await other.put('orders', { _key: 'a' });
    await other.sync();
    assert.equal((await s.sync()).pulled, 1);
    const heard = [];
    s.on('change', (e) => heard.push(e));
    await other.put('orders', { _key: 'b' });
    await other.sync();
    assert.equal((await s.sync()).pulled, 1);
    await waitFor(() => heard.length === 1, 2000, 'the change event');
    assert.deepEqual(
      heard[0].changes.map((c) => c.id),
      ['orders/b'],
    );
  });

  test('bad options and listeners are refused', async () => {
    const db = freshDB();
    await rejectsWith(openStore({ url: server.wsURL, database: db, onConflict: 'mine' }), 'bad_request', 400);
    await rejectsWith(openStore({ url: server.wsURL, database: db, sync: 'yes' }), 'bad_request', 400);
    await rejectsWith(openStore({ url: server.wsURL, database: db, persist: 7 }), 'bad_request', 400);
    const s = await opened(db);
    assert.throws(() => s.on('changes', () => {}), (err) => err.code === 'bad_request');
    assert.throws(() => s.on('change', 'nope'), (err) => err.code === 'bad_request');
    await rejectsWith(s.conflicts(7), 'bad_request', 400);
    // A removed listener hears nothing more.
    const heard = [];
    const off = s.on('change', (e) => heard.push(e));
    off();
    const other = await opened(db);
    await other.put('orders', { _key: 'x' });
    await other.sync();
    assert.equal((await s.sync()).pulled, 1);
    await new Promise((ok) => setTimeout(ok, 50));
    assert.deepEqual(heard, []);
    assert.equal(s.seen.change.length, 1);
  });
});

// rangesLeased reads the server's count of HiLo ranges leased.
async function rangesLeased() {
  const text = await (await fetch(`${server.base}/metrics`)).text();
  const m = /^hilodb_ranges_leased_total (\d+)$/m.exec(text);
  assert.ok(m, 'no hilodb_ranges_leased_total in /metrics');
  return Number(m[1]);
}

describe('persist in Node', () => {
  let dir;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hilodb-persist-'));
  });

  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('documents, pending writes, conflicts, the node tag and the HiLo range survive a reopen', async () => {
    const db = freshDB();
    const path = join(dir, 'shop.hilodb');
    const first = await opened(db, { persist: path });
    const docs = [];
    for (let i = 0; i < 5; i++) docs.push(await first.put('orders', { i }));
    assert.deepEqual(
      docs.map((d) => d._id),
      ['orders/1-A', 'orders/2-A', 'orders/3-A', 'orders/4-A', 'orders/5-A'],
    );
    const node = (await first.info()).node;
    const leased = await rangesLeased();
    await first.close();
    open = open.filter((s) => s !== first);
    assert.deepEqual((await readdir(dir)).sort(), ['shop.hilodb', 'shop.hilodb.log', 'shop.hilodb.node', 'shop.hilodb.ranges']);

    const again = await opened(db, { persist: path });
    for (const d of docs) assert.deepEqual(await again.get(d._id), d);
    assert.equal(await again.pending(), 5);
    assert.equal((await again.info()).node, node);
    // After a clean close the range goes on right after the last id handed
    // out (the journal was written ahead; close brings its mark back), and
    // without a new lease.
    const next = await again.put('orders', { i: 5 });
    assert.equal(next._id, 'orders/6-A');
    assert.equal(await rangesLeased(), leased, 'a new range was leased');
    assert.deepEqual(await again.sync(), { pushed: 6, pulled: 0 });

    const reader = await opened(db);
    await reader.sync();
    for (const d of [...docs, next]) assert.equal((await reader.get(d._id))._rev, d._rev);
  });

  test('puts made together and not awaited before close are all stored, and survive a reopen', async () => {
    const db = freshDB();
    const path = join(dir, 'together.hilodb');
    const first = await opened(db, { persist: path });
    const calls = Array.from({ length: 2000 }, (_, i) => first.put('orders', { i }));
    await first.close();
    open = open.filter((s) => s !== first);
    const docs = await Promise.all(calls);
    assert.equal(new Set(docs.map((d) => d._id)).size, 2000);
    const again = await opened(db, { persist: path });
    for (const d of docs) assert.deepEqual(await again.get(d._id), d);
    assert.equal(await again.pending(), 2000);
  });

  test('a second store on the same persist path is refused while the first is open', async () => {
    const path = join(dir, 'locked.hilodb');
    const first = await opened(freshDB(), { persist: path });
    await rejectsWith(openStore({ url: server.wsURL, database: 'x', persist: path }), 'locked', 423);
    await first.close();
    await opened(freshDB(), { persist: path });
  });

  test('a write is in the log when it resolves; close compacts the log into the snapshot', async () => {
    const path = join(dir, 'flush.hilodb');
    const db = freshDB();
    const s = await opened(db, { persist: path });
    const { readFile, stat } = await import('node:fs/promises');
    await s.put('orders', { _key: 'a' });
    assert.match(await readFile(`${path}.log`, 'latin1'), /orders\/a/, 'put resolved before its write was in the log');
    await s.delete('orders/a');
    await s.put('orders', { _key: 'b' });
    await s.flush();
    await s.close();
    open = open.filter((x) => x !== s);
    assert.equal((await stat(`${path}.log`)).size, 0);
    assert.match(await readFile(path, 'latin1'), /orders\/b/);
    const again = await opened(db, { persist: path });
    assert.equal((await again.get('orders/b'))._key, 'b');
    await rejectsWith(again.get('orders/a'), 'not_found', 1202);
  });

  test('durability must be strict, flushed or relaxed; relaxed writes are durable after flush', async () => {
    const path = join(dir, 'relaxed.hilodb');
    await rejectsWith(openStore({ url: server.wsURL, database: 'x', persist: path, durability: 'eventually' }), 'bad_request', 400);
    const s = await opened(freshDB(), { persist: path, durability: 'relaxed' });
    await s.put('orders', { _key: 'r' });
    await s.flush();
    const { readFile } = await import('node:fs/promises');
    assert.match(await readFile(`${path}.log`, 'latin1'), /orders\/r/);
    await s.close();
    open = open.filter((x) => x !== s);
    const f = await opened(freshDB(), { persist: join(dir, 'flushed.hilodb'), durability: 'flushed' });
    await f.put('orders', { _key: 'f' });
    // Resolved once appended, with nothing to flush.
    assert.match(await readFile(join(dir, 'flushed.hilodb.log'), 'latin1'), /orders\/f/);
  });
  test('a store written with snapshot format 1 opens, and is written back in the current format (3)', async () => {
    // fixtures/format1: a store the version before format 2 wrote (a
    // snapshot, then a log it did not compact): orders/k0…k20 but k1 and
    // k3, k2 edited after a sync; k2, k20 and the deletion of k3 pending.
    const { copyFile, readFile } = await import('node:fs/promises');
    const path = join(dir, 'format1.hilodb');
    const fixtures = new URL('./fixtures/format1/', import.meta.url);
    for (const f of ['format1.hilodb', 'format1.hilodb.log']) await copyFile(new URL(f, fixtures), join(dir, f));
    const offline = `ws://127.0.0.1:${await freePort()}/v1/sync`; // nothing listens: the store opens offline
    const check = async (s, extra) => {
      for (let i = 0; i <= 20; i++) {
        if (i === 1 || i === 3) await rejectsWith(s.get(`orders/k${i}`), 'not_found', 1202);
        else assert.equal((await s.get(`orders/k${i}`)).i, i);
      }
      assert.equal((await s.get('orders/k2')).edited, true);
      assert.equal(await s.pending(), 3 + extra);
    };
    const s = await openStore({ url: offline, database: 'fixture', persist: path });
    open.push(s);
    await check(s, 0);
    await s.put('orders', { _key: 'k21', i: 21 });
    await s.close();
    open = open.filter((x) => x !== s);
    assert.match(await readFile(path, 'latin1'), /^[^\n]*\nhilodb-snapshot 3 /, 'close wrote no format 3 snapshot');
    const again = await openStore({ url: offline, database: 'fixture', persist: path });
    open.push(again);
    await check(again, 1);
    assert.equal((await again.get('orders/k21')).i, 21);
  });
});

describe('the read cache', () => {
  test('a get never answers older than the last write, local or remote', async () => {
    const db = freshDB();
    const a = await opened(db);
    const b = await opened(db);
    const v1 = await a.put('orders', { _key: 'c', v: 1 });
    assert.equal((await a.get(v1._id)).v, 1); // now cached
    const mine = await a.get(v1._id);
    mine.v = 99; // callers get their own copy
    assert.equal((await a.get(v1._id)).v, 1);
    await a.put('orders', { _key: 'c', v: 2 });
    assert.equal((await a.get(v1._id)).v, 2);
    await a.sync();
    await b.sync();
    const fromB = await b.get(v1._id);
    await b.put('orders', { ...fromB, v: 3 });
    await b.sync();
    await a.sync(); // a remote change replaces the cached version
    assert.equal((await a.get(v1._id)).v, 3);
    await a.delete(v1._id);
    await rejectsWith(a.get(v1._id), 'not_found', 1202);
    await a.close();
    open = open.filter((s) => s !== a);
    await rejectsWith(a.get(v1._id), 'closed', 1902);
  });
});

describe('collection definitions', () => {
  test('replicate: the first definition the server got wins, and every client makes keys alike', async () => {
    const db = freshDB();
    const a = await opened(db);
    const b = await opened(db);
    const c = await opened(db);
    await a.createCollection('users', { keyOptions: { type: 'traditional' } });
    await b.createCollection('users', { keyOptions: { type: 'padded' } }); // offline from a: loses
    await a.sync();
    await b.sync();
    await c.sync(); // never defined it
    const keys = new Set();
    for (const s of [a, b, c]) {
      for (let i = 0; i < 3; i++) {
        const r = await s.collection('users').save({ i });
        assert.match(r._key, /^[0-9]+$/, 'a key not made by the first (traditional) definition');
        assert.ok(!keys.has(r._key), `key ${r._key} made twice`);
        keys.add(r._key);
      }
    }
    // c's definition made later reaches a at its next sync.
    await c.createCollection('events', { keyOptions: { type: 'autoincrement', offset: 1000, increment: 10 } });
    await c.sync();
    await a.sync();
    const ev = await a.collection('events').save({});
    assert.ok(Number(ev._key) >= 1000 && (Number(ev._key) - 1000) % 10 === 0, `events key ${ev._key}`);
    await rejectsWith(a.createCollection('events'), 'duplicate_name', 1207);
  });
});

describe('the change feed', () => {
  test('changes({since}) lists local writes and remote changes, each once at its latest write', async () => {
    const db = freshDB();
    const a = await opened(db, { changeFeed: true });
    const b = await opened(db);
    await rejectsWith(b.changes(), 'bad_parameter', 10); // no feed kept
    await a.put('orders', { _key: 'x', v: 1 });
    await a.put('orders', { _key: 'y', v: 1 });
    const first = await a.changes();
    assert.deepEqual(first.results.map((r) => [r.seq, r.id, r.deleted]), [[1, 'orders/x', false], [2, 'orders/y', false]]);
    assert.equal(first.results[0].doc.v, 1);
    assert.equal(first.last, 2);
    // A remote change and a local delete.
    await b.put('orders', { _key: 'z', v: 9 });
    await b.sync();
    await a.sync();
    await a.delete('orders/x');
    const next = await a.changes({ since: first.last });
    assert.deepEqual(next.results.map((r) => [r.id, r.deleted]), [['orders/z', false], ['orders/x', true]]);
    assert.equal(next.results[1].doc, null);
    assert.deepEqual((await a.changes({ since: next.last })).results, []);
    assert.equal((await a.changes({ limit: 1 })).results.length, 1);
  });

  test('watch() delivers local writes and remote changes with their documents, live, none lost', async () => {
    const db = freshDB();
    const a = await opened(db, { changeFeed: true, sync: true });
    const b = await opened(db, { sync: true });
    assert.throws(() => b.watch(() => {}), (err) => err.code === 'bad_request');
    assert.throws(() => a.watch(() => {}, { since: -1 }), (err) => err.code === 'bad_request');
    assert.throws(() => a.watch(() => {}, { sincee: 1 }), (err) => err.code === 'bad_request');
    await a.put('orders', { _key: 'before', v: 0 }); // before the watch: not delivered

    const seen = [];
    const stop = a.watch(
      async ({ results, last }) => {
        assert.equal(last, results.at(-1).seq);
        await new Promise((ok) => setTimeout(ok, 5)); // a slow listener loses nothing
        for (const r of results) seen.push({ id: r.id, rev: r.rev, v: r.doc?.v ?? null, deleted: r.deleted });
      },
      { limit: 7 },
    );
    const written = [];
    for (let i = 0; i < 40; i++) written.push(a.put('orders', { _key: `k${i}`, v: i }));
    await Promise.all(written);
    await waitFor(() => seen.length === 40, 5000, 'the 40 writes in the watch');
    await a.delete('orders/k3');
    await b.put('orders', { _key: 'remote', v: 'b' }); // reaches a through the live sync
    await waitFor(() => seen.some((e) => e.id === 'orders/remote'), 10000, 'the remote change in the watch');
    await waitFor(() => seen.length >= 42, 5000, 'every local write in the watch');
    const ids = seen.map((e) => e.id);
    assert.ok(!ids.includes('orders/before'), 'a write made before watch() was delivered');
    const versions = seen.map((e) => `${e.id}@${e.rev}`);
    assert.equal(new Set(versions).size, versions.length, `a version delivered twice: ${versions}`);
    for (let i = 0; i < 40; i++) assert.ok(ids.includes(`orders/k${i}`), `orders/k${i} missing`);
    // k3 was written, then deleted: both, in that order.
    assert.deepEqual(seen.filter((e) => e.id === 'orders/k3').map((e) => [e.v, e.deleted]), [[3, false], [null, true]]);
    assert.equal(seen.find((e) => e.id === 'orders/remote').v, 'b');

    // From a sequence number: the whole feed again, then stopped.
    const replay = [];
    const stop2 = a.watch(({ results }) => replay.push(...results.map((r) => r.id)), { since: 0 });
    await waitFor(() => replay.length === 42, 5000, 'the replay from 0');
    stop2();
    stop();
    const count = seen.length;
    await a.put('orders', { _key: 'after', v: 1 });
    await new Promise((ok) => setTimeout(ok, 100));
    assert.equal(seen.length, count, 'a stopped watcher was called');
    assert.equal(replay.length, 42);
  });
});

describe('a server that stops answering', () => {
  test('calls fail in bounded time, status goes offline, writes made meanwhile reach the server when it is back', async () => {
    const frozen = await startServer(bin);
    const database = freshDB();
    try {
      const store = await openStore({ url: frozen.wsURL, database, sync: true, requestTimeout: 600, heartbeat: 300 });
      open.push(store);
      const states = [];
      store.on('status', (e) => states.push(e.state));
      const first = await store.put('orders', { i: 0 }); // leases a range
      await waitFor(async () => (await store.pending()) === 0, 5000, 'the first write pushed');
      assert.equal((await store.info()).connected, true);

      process.kill(frozen.pid, 'SIGSTOP');
      try {
        await waitFor(() => states.includes('offline'), 5000, "a 'status' event saying offline");
        assert.equal((await store.info()).connected, false);
        const start = Date.now();
        await rejectsWith(store.sync(), 'needs_server', 1900);
        assert.ok(Date.now() - start < 3000, `sync() against a frozen server took ${Date.now() - start} ms`);
        // Writes go on offline, from the range already leased.
        const meanwhile = [];
        for (let i = 1; i <= 3; i++) meanwhile.push(await store.put('orders', { i }));
        assert.equal(new Set([first, ...meanwhile].map((d) => d._id)).size, 4);
        states.length = 0;
        process.kill(frozen.pid, 'SIGCONT');
        await waitFor(async () => (await store.pending()) === 0, 15000, 'the offline writes pushed');
        assert.ok(states.includes('online'), `status events after the server is back: ${states}`);
        const reader = await opened(database, { url: frozen.wsURL });
        await reader.sync();
        for (const d of meanwhile) assert.equal((await reader.get(d._id))._rev, d._rev);
      } finally {
        process.kill(frozen.pid, 'SIGCONT');
      }
    } finally {
      await Promise.allSettled(open.map((s) => s.close()));
      open = [];
      await frozen.stop();
    }
  });
});
