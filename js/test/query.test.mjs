// Queries, indexes and live queries through the npm package (query.js and
// the WebAssembly store) against the real sync server: find, explain,
// count, the index calls, live queries after local and remote writes, bad
// queries refused with bad_query, and RavenDB's session query.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { openStore } from '../node.js';
import { HostWatches, SharedWatches } from '../query.js';
import { buildServer, startServer } from './server.mjs';

const fastKey = Symbol.for('hilodb.fastReads');

let cleanupBin = async () => {};
let server;
let n = 0;
const opened = [];

async function fresh(options = {}) {
  const s = await openStore({ url: server.wsURL, database: `query${++n}`, ...options });
  opened.push(s);
  return s;
}

before(async () => {
  const built = await buildServer();
  cleanupBin = built.cleanup;
  server = await startServer(built.bin);
});

after(async () => {
  try {
    await Promise.allSettled(opened.map((s) => s.close()));
    await server?.stop();
  } finally {
    await cleanupBin();
  }
});

async function rejectsWith(promise, code, num) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof Error, `got ${err}, want an Error`);
    assert.equal(err.code, code, `code of ${err.message}`);
    assert.equal(err.num, num, `num of ${err.message}`);
    return true;
  });
}

// todos stores count todos: title tN, done every third, n = N, a tag.
async function todos(store, count) {
  const docs = [];
  for (let i = 0; i < count; i++) docs.push({ _key: `t${String(i).padStart(3, '0')}`, title: `t${i}`, done: i % 3 === 0, n: i, tag: ['a', 'b', 'c', 'd'][i % 4] });
  await store.putMany('todos', docs);
}

// waitFor resolves to result number count of a live query's results.
function waitFor(results, count, what) {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + 10000;
    const tick = () => {
      if (results.length >= count) return resolve(results[count - 1]);
      if (Date.now() > deadline) return reject(new Error(`timed out waiting for ${what}: ${results.length} results`));
      setTimeout(tick, 5);
    };
    tick();
  });
}

// waitUntil resolves to a live query's latest result once ok(result) holds.
function waitUntil(results, ok, what) {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + 10000;
    const tick = () => {
      const r = results.at(-1);
      if (r && ok(r)) return resolve(r);
      if (Date.now() > deadline) return reject(new Error(`timed out waiting for ${what}: last result ${JSON.stringify(r?.docs)}`));
      setTimeout(tick, 5);
    };
    tick();
  });
}

describe('find, explain, count and indexes', () => {
  test('find filters, sorts, pages with a bookmark and projects, with and without an index', async () => {
    const store = await fresh();
    await todos(store, 60);
    const want = [];
    for (let i = 59; i >= 0; i--) if (i % 3 !== 0 && i >= 10) want.push(`t${i}`);
    const q = { selector: { done: false, n: { $gte: 10 } }, sort: [{ n: 'desc' }], limit: 7, fields: ['title'] };
    const read = async () => {
      const got = [];
      let bookmark;
      for (;;) {
        const page = await store.find('todos', bookmark ? { ...q, bookmark } : q);
        assert.ok(page.docs.length <= 7);
        for (const d of page.docs) assert.deepEqual(Object.keys(d), ['title']);
        got.push(...page.docs.map((d) => d.title));
        if (!page.bookmark) break;
        bookmark = page.bookmark;
      }
      return got;
    };
    assert.deepEqual(await read(), want);
    const scan = await store.explain('todos', q);
    assert.equal(scan.index, '');
    assert.equal(scan.examined, 60);

    assert.deepEqual(await store.createIndex('todos', { fields: ['done', 'n'] }), { result: 'created', name: 'idx-done-n' });
    assert.deepEqual(await store.createIndex('todos', { fields: ['done', { n: 'asc' }], name: 'other' }), { result: 'exists', name: 'idx-done-n' });
    assert.deepEqual(await read(), want);
    const plan = await store.explain('todos', q);
    assert.equal(plan.index, 'idx-done-n');
    assert.deepEqual(plan.fields, ['done', 'n']);
    assert.equal(plan.equality, 1);
    assert.equal(plan.range, true);
    assert.equal(plan.sortedByIndex, true);
    assert.equal(plan.descending, true);
    assert.deepEqual(plan.sort, ['n desc']);
    assert.deepEqual((await store.explain('todos', { selector: { done: false } })).sort, ['done', 'n'], 'without a sort: the index\'s order');
    assert.equal(plan.matched, 7);
    assert.ok(plan.examined < 10, `examined ${plan.examined} through the index`);
  });

  test('count matches find, and getIndexes and deleteIndex keep the definitions', async () => {
    const store = await fresh();
    await todos(store, 40);
    for (const selector of [{}, { done: true }, { tag: { $in: ['a', 'c'] }, n: { $lt: 30 } }, { $or: [{ tag: 'b' }, { n: { $gt: 35 } }] }, { title: { $regex: /^T1/i } }]) {
      const { docs } = await store.find('todos', { selector });
      assert.equal(await store.count('todos', { selector }), docs.length, JSON.stringify(selector));
    }
    assert.equal(await store.count('todos'), 40);
    assert.deepEqual(await store.getIndexes('todos'), { indexes: [] });
    await store.createIndex('todos', { fields: ['tag'], name: 'by-tag' });
    await store.createIndex('todos', { fields: ['tag', 'n'] });
    assert.deepEqual(await store.getIndexes('todos'), {
      indexes: [
        { name: 'by-tag', type: 'json', def: { fields: [{ tag: 'asc' }] } },
        { name: 'idx-tag-n', type: 'json', def: { fields: [{ tag: 'asc' }, { n: 'asc' }] } },
      ],
    });
    const { docs } = await store.find('todos', { selector: { tag: 'c' }, use_index: 'by-tag' });
    assert.equal(docs.length, 10);
    assert.deepEqual(await store.deleteIndex('todos', 'by-tag'), { ok: true });
    await rejectsWith(store.deleteIndex('todos', 'by-tag'), 'not_found', 1202);
    await rejectsWith(store.find('todos', { selector: { tag: 'c' }, use_index: 'by-tag' }), 'bad_query', 1912);
    assert.deepEqual((await store.getIndexes('todos')).indexes.map((i) => i.name), ['idx-tag-n']);
  });

  test('an index answers as a scan does after writes, updates and deletes', async () => {
    const store = await fresh();
    await store.createIndex('items', { fields: ['kind', 'rank'] });
    const ids = [];
    for (let i = 0; i < 50; i++) ids.push((await store.put('items', { kind: ['x', 'y'][i % 2], rank: (i * 37) % 11 }))._id);
    for (let i = 0; i < 50; i += 3) {
      const d = await store.get(ids[i]);
      await store.put('items', { ...d, kind: 'y', rank: d.rank + 100 });
    }
    for (let i = 1; i < 50; i += 7) await store.delete(ids[i]);
    const query = { selector: { kind: 'y', rank: { $gt: 3 } }, sort: ['kind', 'rank'] };
    const byIndex = await store.find('items', query);
    assert.equal((await store.explain('items', query)).index, 'idx-kind-rank');
    const all = (await store.find('items', { selector: {} })).docs;
    const want = all.filter((d) => d.kind === 'y' && d.rank > 3).sort((a, b) => a.rank - b.rank || (a._id < b._id ? -1 : 1));
    assert.deepEqual(byIndex.docs.map((d) => d._id), want.map((d) => d._id));
  });

  test('an index defined on one client is used by another after sync, and a drop travels the same way', async () => {
    const database = `query${++n}-ix`;
    const a = await openStore({ url: server.wsURL, database });
    const b = await openStore({ url: server.wsURL, database });
    opened.push(a, b);
    await todos(a, 30);
    assert.deepEqual(await a.createIndex('todos', { fields: ['tag', 'n'], name: 'by-tag' }), { result: 'created', name: 'by-tag' });
    await a.sync();
    await b.sync();
    assert.deepEqual((await b.getIndexes('todos')).indexes.map((i) => i.name), ['by-tag']);
    const q = { selector: { tag: 'b', n: { $gt: 10 } }, sort: ['tag', 'n'] };
    const plan = await b.explain('todos', q);
    assert.equal(plan.index, 'by-tag');
    assert.equal(plan.examined, plan.matched);
    assert.deepEqual((await b.find('todos', q)).docs.map((d) => d.n), [13, 17, 21, 25, 29]);
    await b.deleteIndex('todos', 'by-tag');
    await b.sync();
    await a.sync();
    assert.deepEqual(await a.getIndexes('todos'), { indexes: [] });
    assert.equal((await a.explain('todos', q)).index, '');
  });

  test('bad queries, selectors and index definitions are refused with bad_query', async () => {
    const store = await fresh();
    await todos(store, 3);
    const bad = [
      () => store.find('todos', { selector: { n: { $near: 1 } } }),
      () => store.find('todos', { selector: { n: 1 }, sort: [{ n: 'up' }] }),
      () => store.find('todos', { selector: { n: 1 }, limit: -1 }),
      () => store.find('todos', { selector: { n: 1 }, bookmark: 'nonsense' }),
      () => store.find('todos', { selector: { n: 1 }, where: 2 }),
      () => store.find('todos', { selector: { $or: {} } }),
      () => store.find('todos', { selector: { title: { $regex: '(' } } }),
      () => store.find('todos'),
      () => store.find('todos', [1]),
      () => store.explain('todos', { selector: { n: { $in: 3 } } }),
      () => store.count('todos', { selector: { $and: 1 } }),
      () => store.count('todos', { selector: {}, limit: 1 }),
      () => store.createIndex('todos', { fields: [] }),
      () => store.createIndex('todos', { fields: ['n'], name: 'no spaces' }),
      () => store.createIndex('todos', { fields: [{ n: 'desc' }] }),
      () => store.createIndex('todos', { fields: ['n'], partial: true }),
    ];
    for (const call of bad) await rejectsWith(call(), 'bad_query', 1912);
    const live = store.watchQuery('todos', { selector: { n: { $foo: 1 } } }, () => assert.fail('no result for a bad query'));
    await rejectsWith(live.ready, 'bad_query', 1912);
    await rejectsWith(store.find('no/such', { selector: {} }), 'illegal_name', 1208);
    assert.equal((await store.find('todos', { selector: {} })).docs.length, 3, 'nothing changed');
  });

  test('find through the export (wasm/fastfind.go) answers as the store object does, and gives way when it must', async (t) => {
    const store = await fresh();
    await todos(store, 300);
    await store.put('todos', { _key: 'uni', title: 'ünïcödé ✓ 𝄞', n: -1, tag: 'é' });
    await store.createIndex('todos', { fields: ['tag', 'n'] });
    const fast = globalThis.__hilodb?.[fastKey];
    assert.ok(fast, 'the Go instance exports no fast path');
    const find = fast.find.bind(fast);
    const counts = { fast: 0, gaveWay: 0 };
    const counting = (...args) => {
      const r = find(...args);
      if (r === undefined) counts.gaveWay++;
      else counts.fast++;
      return r;
    };
    const big = 'x'.repeat(12000);
    try {
      // Each query once through the export, once through the store object
      // (the export made to give way): the same pages, the same errors.
      const queries = [
        { selector: { tag: 'b' }, sort: [{ n: 'desc' }], limit: 9 },
        { selector: { tag: 'é' } },
        { selector: { title: { $regex: '^ünï' } }, fields: ['_key', 'title'] },
        { selector: { n: { $gte: 100, $lt: 140 } }, sort: ['n'], limit: 15, skip: 3 },
        { selector: { done: true, tag: { $in: ['a', 'd'] } }, fields: ['n'] },
        { selector: { n: { $in: Array.from({ length: 20000 }, (_, i) => i * 2) } }, limit: 5 }, // past the write buffer
        { selector: {} },
        { selector: { n: { $near: 1 } } },
      ];
      const through = async (fastOn, q) => {
        if (!fastOn) fast.find = () => undefined;
        try {
          const pages = [];
          for (let bookmark, k = 0; k < 3; k++) {
            const page = await store.find('todos', bookmark ? { ...q, bookmark } : q);
            pages.push(page);
            if (!page.bookmark) break;
            bookmark = page.bookmark;
          }
          return pages;
        } catch (err) {
          return { code: err.code, num: err.num, message: err.message, hilo: err instanceof Error };
        } finally {
          if (!fastOn) delete fast.find;
        }
      };
      for (const q of queries) {
        fast.find = counting;
        const got = await through(true, q);
        assert.deepEqual(got, await through(false, q), JSON.stringify(q).slice(0, 80));
      }
      assert.deepEqual((await through(true, queries.at(-1))).code, 'bad_query');
      // A page larger than the buffer Go keeps between calls (1 MiB).
      await store.putMany('big', Array.from({ length: 120 }, (_, i) => ({ _key: `b${i}`, i, big })));
      fast.find = counting;
      const page = await store.find('big', { selector: {}, sort: ['i'] });
      assert.equal(page.docs.length, 120);
      assert.ok(page.docs.every((d, i) => d.i === i && d.big === big));
      t.diagnostic(`${counts.fast} pages through the export, ${counts.gaveWay} gave way`);
      assert.ok(counts.fast >= queries.length, `only ${counts.fast} pages came through the export`);
      assert.ok(counts.gaveWay >= 1, 'the query past the write buffer did not give way');
    } finally {
      delete fast.find;
    }
    await store.close();
    await rejectsWith(store.find('todos', { selector: {} }), 'closed', 1902);
  });

  test('a query, a put, a get Go must answer and changes made inside a merge function run once the merge is done', async () => {
    // Go calls the merge function inside the write transaction that pulls
    // the remote version: a call that Go answers at once, run there and
    // then, would wait for that transaction, which cannot end first.
    const database = `merge-query${++n}`;
    let b;
    const asked = [];
    const merge = (local, remote) => {
      const key = local.doc._key;
      asked.push({
        key,
        page: b.find('orders', { selector: { _key: key } }),
        count: b.count('orders', { selector: { v: 'a' } }),
        put: b.put('merges', { _key: key, at: 'merge' }),
        missing: b.get(`orders/none-${key}`).catch((err) => err.code),
        changes: b.changes({ limit: 1000 }),
      });
      return { ...remote.doc, merged: true };
    };
    const a = await fresh({ database });
    b = await fresh({ database, onConflict: merge, changeFeed: true });
    await a.putMany('orders', Array.from({ length: 20 }, (_, i) => ({ _key: `k${i}`, v: 'a' })));
    await b.putMany('orders', Array.from({ length: 20 }, (_, i) => ({ _key: `k${i}`, v: 'b' })));
    await a.sync();
    await b.sync();
    assert.equal(asked.length, 20, 'the merge function ran for each conflict');
    for (const { key, page, count, put, missing, changes } of asked) {
      const { docs } = await page;
      assert.equal(docs.length, 1);
      assert.equal(docs[0]._key, key);
      assert.equal(docs[0].merged, true, 'the query ran after the merge');
      assert.equal(await count, 20);
      assert.equal((await put)._id, `merges/${key}`);
      assert.equal(await missing, 'not_found');
      assert.ok((await changes).results.some((c) => c.id === `orders/${key}`));
    }
    assert.equal((await b.find('merges', { selector: {} })).docs.length, 20);
  });
});

describe('live queries', () => {
  test('a live query follows local puts, updates and deletes with its changes', async () => {
    const store = await fresh();
    await todos(store, 9);
    const results = [];
    const live = store.watchQuery('todos', { selector: { done: true }, sort: ['n'] }, (r) => results.push(r));
    await live.ready;
    const first = results[0];
    assert.deepEqual(first.docs.map((d) => d.n), [0, 3, 6]);
    assert.deepEqual(first.changes.map((c) => [c.type, c.id, c.index]), [['added', 'todos/t000', 0], ['added', 'todos/t003', 1], ['added', 'todos/t006', 2]]);
    assert.equal(first.changes[1].doc, first.docs[1]);

    await store.put('todos', { _key: 'new', done: true, n: 4 });
    let r = await waitFor(results, 2, 'the put');
    assert.deepEqual(r.docs.map((d) => d.n), [0, 3, 4, 6]);
    assert.deepEqual(r.changes, [{ type: 'added', id: 'todos/new', index: 2, oldIndex: -1, doc: r.docs[2] }]);

    await store.put('todos', { _key: 'other', done: false, n: 5 }); // not in the result
    const moved = await store.get('todos/t000');
    await store.put('todos', { ...moved, n: 10 });
    r = await waitFor(results, 3, 'the move');
    assert.deepEqual(r.docs.map((d) => d.n), [3, 4, 6, 10]);
    assert.deepEqual(r.changes.map((c) => [c.type, c.id, c.index, c.oldIndex]), [['moved', 'todos/t000', 3, 0]]);

    await store.delete('todos/t003');
    r = await waitFor(results, 4, 'the delete');
    assert.deepEqual(r.docs.map((d) => d.n), [4, 6, 10]);
    assert.deepEqual(r.changes, [{ type: 'removed', id: 'todos/t003', index: -1, oldIndex: 0 }]);

    live.close();
    await store.put('todos', { _key: 'late', done: true, n: 1 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(results.length, 4, 'no result after close');
  });

  test('a live query follows a change another client made, through the server', async () => {
    const database = `query${++n}-shared`;
    const a = await openStore({ url: server.wsURL, database, sync: true });
    const b = await openStore({ url: server.wsURL, database, sync: true });
    opened.push(a, b);
    await a.createIndex('todos', { fields: ['done', 'n'] });
    const results = [];
    const live = a.watchQuery('todos', { selector: { done: false }, sort: [{ n: 'desc' }], limit: 2 }, (r) => results.push(r));
    await live.ready;
    assert.deepEqual(results[0].docs, []);
    await b.put('todos', { _key: 'r1', done: false, n: 1 });
    let r = await waitFor(results, 2, 'the remote put');
    assert.deepEqual(r.docs.map((d) => d._id), ['todos/r1']);
    assert.equal(r.changes[0].type, 'added');
    await b.put('todos', { _key: 'r2', done: false, n: 2 });
    await b.put('todos', { _key: 'r3', done: false, n: 3 });
    r = await waitUntil(results, (x) => x.docs[0]?._id === 'todos/r3', 'the remote puts');
    assert.deepEqual(r.docs.map((d) => d._id), ['todos/r3', 'todos/r2']);
    await b.delete('todos/r3');
    r = await waitUntil(results, (x) => x.docs[0]?._id !== 'todos/r3', 'the remote delete');
    assert.deepEqual(r.docs.map((d) => d._id), ['todos/r2', 'todos/r1'], 'the window refills from the rest');
    assert.deepEqual(r.changes.map((c) => [c.type, c.id]), [['added', 'todos/r1'], ['removed', 'todos/r3']]);
    live.close();
  });
});

describe('live query results made from what changed', () => {
  // Go sends what changed; the page makes each result from the one before.
  // Over random puts, replacements and deletes (a full window that loses
  // and refills rows, ties, moves), each result equals a fresh find, and a
  // document that did not change stays the same object.
  test('every result equals a fresh find, directly and through a host', async () => {
    const store = await fresh();
    let seed = 7;
    const rnd = (n) => {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
      return (seed >>> 8) % n;
    };
    const query = { selector: { done: false }, sort: [{ p: 'desc' }], limit: 6, skip: 1 };
    const direct = [];
    const live = store.watchQuery('todos', query, (r) => direct.push(r));
    await live.ready;
    const host = new HostWatches();
    const call = (m, args) => (m === '_watchQuery' ? host.start(store, args, (payload) => tab.deliver(payload)) : Promise.resolve(host.stop(args[0])));
    const tab = new SharedWatches(call);
    const shared = [];
    const stop = await tab.start('todos', JSON.stringify(query), (r) => shared.push(r));
    await waitFor(shared, 1, 'the first shared result');
    const ids = (docs) => docs.map((d) => `${d._id}:${d.p}:${d.v}`);
    for (let i = 0; i < 120; i++) {
      const key = `k${rnd(15)}`;
      const before = [direct.length, shared.length];
      if (rnd(5) === 0) await store.delete(`todos/${key}`).catch(() => {});
      else await store.put('todos', { _key: key, done: rnd(4) === 0, p: rnd(5), v: i });
      const want = ids((await store.find('todos', query)).docs);
      for (const [name, results, n] of [['direct', direct, before[0]], ['shared', shared, before[1]]]) {
        const deadline = Date.now() + 3000;
        while (JSON.stringify(ids(results.at(-1).docs)) !== JSON.stringify(want) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 2));
        const last = results.at(-1);
        assert.deepEqual(ids(last.docs), want, `${name} after write ${i}`);
        if (results.length > n && n > 0) {
          const prev = results[n - 1];
          const changed = new Set(last.changes.map((c) => c.id));
          for (const d of last.docs) {
            const was = prev.docs.find((x) => x._id === d._id);
            if (was && !changed.has(d._id)) assert.equal(d, was, `${name}: ${d._id} unchanged is the same object`);
          }
        }
      }
    }
    const kinds = new Set(direct.flatMap((r) => r.changes.map((c) => c.type)));
    assert.deepEqual([...kinds].sort(), ['added', 'changed', 'moved', 'removed'], 'every kind of change came');
    live.close();
    stop();
  });
});

describe('live queries of a store shared by tabs', () => {
  // The tab's SharedWatches and the host's HostWatches over a real store,
  // with the host's port replaced by a call: what tabs.js and host.js do.
  test('a live query started again at a host gives only what changed, whether it moved or its start was sent twice', async () => {
    const store = await fresh();
    await todos(store, 6);
    const host = new HostWatches();
    const call = (m, args) => (m === '_watchQuery' ? host.start(store, args, (payload) => tab.deliver(payload)) : Promise.resolve(host.stop(args[0])));
    const tab = new SharedWatches(call);
    const results = [];
    const stop = await tab.start('todos', JSON.stringify({ selector: { done: false }, sort: ['n'] }), (r) => results.push(typeof r === 'string' ? JSON.parse(r) : r));
    const first = await waitFor(results, 1, 'the first result');
    assert.deepEqual(first.docs.map((d) => d.n), [1, 2, 4, 5]);
    assert.deepEqual(first.changes.map((c) => [c.type, c.id, c.index, c.oldIndex]), [['added', 'todos/t001', 0, -1], ['added', 'todos/t002', 1, -1], ['added', 'todos/t004', 2, -1], ['added', 'todos/t005', 3, -1]]);
    assert.equal(first.changes[0].doc._id, 'todos/t001');

    tab.resume(); // nothing changed: nothing to give
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(results.length, 1);

    await store.put('todos', { ...(await store.get('todos/t004')), done: true });
    await store.put('todos', { _key: 'u', done: false, n: 3 });
    tab.resume();
    tab.resume(); // sent twice
    const r = await waitUntil(results, (x) => x.docs.some((d) => d._id === 'todos/u') && !x.docs.some((d) => d._id === 'todos/t004'), 'the writes');
    assert.deepEqual(r.docs.map((d) => d.n), [1, 2, 3, 5]);
    const since = results.slice(1).flatMap((x) => x.changes.map((c) => [c.type, c.id]));
    assert.deepEqual(since.filter(([type]) => type !== 'changed').sort(), [['added', 'todos/u'], ['removed', 'todos/t004']], 'each change once');
    stop();
    await store.put('todos', { _key: 'v', done: false, n: 0 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.ok(!results.at(-1).docs.some((d) => d._id === 'todos/v'), 'no result after stop');
  });
});

describe('session queries', () => {
  class Product {
    constructor(name, price, tags) {
      this.name = name;
      this.price = price;
      if (tags !== undefined) this.tags = tags;
    }

    label() {
      return `${this.name} ${this.price}`;
    }
  }

  test('where…, not, andAlso, orElse and subclauses compile to one Mango query', async () => {
    const store = await fresh();
    const session = store.openSession();
    const q = session
      .query({ collection: 'Products' })
      .whereEquals('name', 'tea')
      .orElse()
      .openSubclause()
      .whereBetween('price', 2, 5)
      .not()
      .whereStartsWith('name', 'c.(')
      .closeSubclause()
      .andAlso()
      .whereExists('tags')
      .orderByDescending('price')
      .orderBy('name', 'String')
      .skip(1)
      .take(3);
    assert.deepEqual(q.toQuery(), {
      selector: {
        $or: [{ name: { $eq: 'tea' } }, { $and: [{ $and: [{ price: { $gte: 2, $lte: 5 } }, { $not: { name: { $regex: '^c\\.\\(' } } }] }, { tags: { $exists: true } }] }],
      },
      sort: [{ price: 'desc' }, { name: 'asc' }],
      skip: 1,
      limit: 3,
    });
    assert.deepEqual(session.query({ collection: 'Products' }).whereEquals('id', 'products/1-A').selectFields('id', 'name').toQuery(), {
      selector: { _id: { $eq: 'products/1-A' } },
      fields: ['_id', 'name'],
    });
    assert.throws(() => session.query({ collection: 'Products' }).openSubclause().whereEquals('a', 1).toQuery(), (e) => e.code === 'bad_query');
    assert.throws(() => session.query({ collection: 'Products' }).whereEquals('a', 1).closeSubclause().toQuery(), (e) => e.code === 'bad_query');
    assert.throws(() => session.query({ collection: 'Products' }).whereEquals('a', 1).orElse().toQuery(), (e) => e.code === 'bad_query');
    assert.throws(() => session.query({ collection: 'Products', indexName: 'x' }), (e) => e.code === 'bad_query');
  });

  test('results are instances of the class, tracked by the session', async () => {
    const store = await fresh();
    store.conventions.registerEntityType(Product);
    const writer = store.openSession();
    for (const [name, price, tags] of [['tea', 3, ['hot']], ['coffee', 5, ['hot']], ['cocoa', 8, []], ['milk', 2, ['cold']], ['c.(x', 1]]) await writer.store(new Product(name, price, tags));
    await writer.saveChanges();

    const session = store.openSession();
    const some = await session.query(Product).whereIn('name', ['milk', 'tea', 'juice']).orderBy('name').all();
    assert.deepEqual(some.map((p) => p.name), ['milk', 'tea']);
    const cheap = await session.query(Product).whereLessThan('price', 5).orderBy('price').all();
    assert.deepEqual(cheap.map((p) => p.label()), ['c.(x 1', 'milk 2', 'tea 3']);
    assert.ok(cheap.every((p) => p instanceof Product));
    assert.equal(cheap[2].id, 'products/1-A');
    assert.equal(await session.load('products/1-A'), cheap[2], 'the same tracked entity');

    const co = await session.query(Product).whereStartsWith('name', 'co').orderByDescending('price').all();
    assert.deepEqual(co.map((p) => p.name), ['cocoa', 'coffee']);
    assert.deepEqual((await session.query(Product).whereStartsWith('name', 'c.(').all()).map((p) => p.name), ['c.(x'], 'the prefix is quoted');
    assert.equal((await session.query(Product).whereGreaterThanOrEqual('price', 5).whereLessThanOrEqual('price', 5).single()).name, 'coffee');
    assert.equal((await session.query(Product).whereNotEquals('name', 'tea').orderBy('name').first()).name, 'c.(x');
    assert.equal(await session.query(Product).whereGreaterThan('price', 100).firstOrNull(), null);
    await assert.rejects(session.query(Product).whereGreaterThan('price', 100).first(), (e) => e.code === 'not_found');
    await assert.rejects(session.query(Product).single(), (e) => e.code === 'bad_request');
    assert.equal(await session.query(Product).not().whereExists('tags').count(), 1);
    assert.equal(await session.query({ collection: 'Products' }).openSubclause().whereEquals('name', 'tea').orElse().whereEquals('name', 'milk').closeSubclause().count(), 2);
    assert.equal(await session.query(Product).whereEquals('name', 'juice').any(), false);
    assert.equal(await session.query(Product).whereEquals('name', 'milk').any(), true);
    assert.deepEqual(await session.query(Product).orderByDescending('price').skip(1).take(2).selectFields('name', 'id').all(), [
      { name: 'coffee', id: 'products/2-A' },
      { name: 'tea', id: 'products/1-A' },
    ]);

    // A later saveChanges stores the edits of entities a query gave.
    const [milk] = await session.query(Product).whereEquals('name', 'milk').all();
    milk.price = 4;
    await session.saveChanges();
    assert.equal((await store.get(milk.id)).price, 4);
    const plain = await store.openSession().query({ collection: 'Products' }).whereEquals('price', 4).all();
    assert.deepEqual(plain.map((p) => [p.name, p instanceof Product]), [['milk', true]], 'the registered class from Raven-Node-Type');
  });
});
