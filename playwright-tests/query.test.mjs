// Queries, indexes and live queries in Debian's Chromium against the real
// sync server: in a page's own store, and in a persisted store shared by
// two tabs (run in one tab's host worker), where a live query of one tab
// follows the other tab's writes and goes on when the tab running the
// store goes away.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { serveWithChromium } from './harness.mjs';
import { openPagesWith } from './tabs.mjs';

const env = serveWithChromium();
const pageErrors = [];
const openPages = openPagesWith(env, pageErrors);

// untilResult resolves, in page, once the latest result of the live query
// window[name] keeps satisfies the predicate (as source text) ok.
function untilResult(page, name, ok) {
  return page.evaluate(
    ([name, ok]) =>
      new Promise((resolve, reject) => {
        const test = new Function('r', `return (${ok})(r)`);
        const deadline = Date.now() + 15000;
        const tick = () => {
          const r = window[name].at(-1);
          if (r && test(r)) return resolve(r);
          if (Date.now() > deadline) return reject(new Error(`no result of ${name} passed ${ok}: last ${JSON.stringify(r)}`));
          setTimeout(tick, 10);
        };
        tick();
      }),
    [name, ok.toString()],
  );
}

test('find, explain, count, a live query and a session query in a page', async () => {
  const page = await env.browser.newPage();
  page.on('pageerror', (err) => pageErrors.push(err));
  try {
    await page.goto(`${env.server.base}/`);
    const got = await page.evaluate(async (database) => {
      const { openStore } = await import('/index.js');
      const store = await openStore({ url: `ws://${location.host}/v1/sync`, database });
      await store.putMany('todos', Array.from({ length: 100 }, (_, i) => ({ _key: `t${i}`, done: i % 4 === 0, n: i })));
      const created = await store.createIndex('todos', { fields: ['done', 'n'] });
      const q = { selector: { done: false, n: { $lt: 50 } }, sort: [{ n: 'desc' }], limit: 5, fields: ['_id', 'n'] };
      const page1 = await store.find('todos', q);
      const page2 = await store.find('todos', { ...q, bookmark: page1.bookmark });
      const plan = await store.explain('todos', q);
      const count = await store.count('todos', { selector: { done: true } });
      let bad;
      await store.find('todos', { selector: { n: { $almost: 3 } } }).catch((e) => (bad = [e.code, e.num]));

      window.live = [];
      const live = store.watchQuery('todos', { selector: { done: true, n: { $gte: 90 } }, sort: ['n'] }, (r) => window.live.push(r));
      await live.ready;
      await store.put('todos', { _key: 'new', done: true, n: 95 });
      await new Promise((resolve) => setTimeout(resolve, 200));
      live.close();

      class Todo {}
      store.conventions.registerEntityType(Todo);
      const session = store.openSession();
      for (const title of ['buy tea', 'boil water', 'brew']) {
        const t = new Todo();
        t.title = title;
        t.len = title.length;
        await session.store(t);
      }
      await session.saveChanges();
      const s2 = store.openSession();
      const found = await s2.query(Todo).whereStartsWith('title', 'b').andAlso().not().whereEquals('title', 'brew').orderByDescending('len').all();
      const foundAt = found.map((t) => [t.title, t instanceof Todo]);
      found[0].title = 'boil more water';
      await s2.saveChanges();
      const after = await store.openSession().query({ collection: 'Todos' }).whereEquals('title', 'boil more water').single();
      await store.close();
      return {
        created,
        page1: page1.docs.map((d) => d.n),
        page2: page2.docs.map((d) => d.n),
        keys: Object.keys(page1.docs[0]),
        plan,
        count,
        bad,
        live: window.live.map((r) => ({ docs: r.docs.map((d) => d.n), changes: r.changes.map((c) => [c.type, c.id, c.index]) })),
        found: foundAt,
        after: [after.title, after instanceof Todo],
      };
    }, `pagequery${Date.now()}`);
    assert.deepEqual(got.created, { result: 'created', name: 'idx-done-n' });
    assert.deepEqual(got.page1, [49, 47, 46, 45, 43]);
    assert.deepEqual(got.page2, [42, 41, 39, 38, 37]);
    assert.deepEqual(got.keys, ['_id', 'n']);
    assert.equal(got.plan.index, 'idx-done-n');
    assert.equal(got.plan.sortedByIndex, true);
    assert.ok(got.plan.examined <= 6, `examined ${got.plan.examined} for a page of 5`);
    assert.equal(got.count, 25);
    assert.deepEqual(got.bad, ['bad_query', 1912]);
    assert.deepEqual(got.live, [
      { docs: [92, 96], changes: [['added', 'todos/t92', 0], ['added', 'todos/t96', 1]] },
      { docs: [92, 95, 96], changes: [['added', 'todos/new', 1]] },
    ]);
    assert.deepEqual(got.found, [['boil water', true], ['buy tea', true]]);
    assert.deepEqual(got.after, ['boil more water', true]);
    assert.deepEqual(pageErrors, []);
  } finally {
    await page.close();
  }
});

test('two tabs share a store: a put in tab B updates tab A\'s live query, and it goes on in B when A, running the store, goes away', async () => {
  const database = `tabquery${Date.now()}`;
  const context = await env.browser.newContext();
  try {
    const [a, b] = await openPages(context, 2, database); // a runs the store
    await a.evaluate(async () => {
      await window.store.createIndex('todos', { fields: ['done', 'n'] });
      window.live = [];
      window.liveQuery = window.store.watchQuery('todos', { selector: { done: false }, sort: ['n'] }, (r) => window.live.push(r));
      await window.liveQuery.ready;
    });
    await b.evaluate(async () => {
      window.live = [];
      window.liveQuery = window.store.watchQuery('todos', { selector: { done: false }, sort: ['n'], limit: 3 }, (r) => window.live.push(r));
      await window.liveQuery.ready;
      await window.store.putMany('todos', [
        { _key: 'x', done: false, n: 2 },
        { _key: 'y', done: true, n: 1 },
        { _key: 'z', done: false, n: 1 },
      ]);
    });
    let r = await untilResult(a, 'live', (r) => r.docs.length === 2);
    assert.deepEqual(r.docs.map((d) => d._id), ['todos/z', 'todos/x']);
    await b.evaluate(() => window.store.put('todos', { _key: 'w', done: false, n: 0 }));
    r = await untilResult(a, 'live', (r) => r.docs.length === 3);
    assert.deepEqual(r.docs.map((d) => d._id), ['todos/w', 'todos/z', 'todos/x']);
    assert.deepEqual(r.changes.map((c) => [c.type, c.id, c.index]), [['added', 'todos/w', 0]]);

    // The index tab A defined serves tab B's find; a session query in B.
    const inB = await b.evaluate(async () => {
      const q = { selector: { done: false, n: { $gte: 1 } }, sort: ['n'] };
      const plan = await window.store.explain('todos', q);
      const { docs } = await window.store.find('todos', q);
      const session = window.store.openSession();
      const some = await session.query({ collection: 'todos' }).whereEquals('done', false).whereGreaterThanOrEqual('n', 1).orderBy('n').all();
      return { index: plan.index, found: docs.map((d) => d._id), session: some.map((d) => d.id) };
    });
    assert.deepEqual(inB, { index: 'idx-done-n', found: ['todos/z', 'todos/x'], session: ['todos/z', 'todos/x'] });
    await untilResult(b, 'live', (r) => r.docs.length === 3);

    // A goes away: B's host worker takes the store over, and B's live
    // query starts again there without giving its documents again.
    const before = await b.evaluate(() => window.live.length);
    await a.close();
    await b.evaluate(() => window.store.put('todos', { _key: 'v', done: false, n: -1 }));
    r = await untilResult(b, 'live', (r) => r.docs[0]?._id === 'todos/v');
    assert.deepEqual(r.docs.map((d) => d._id), ['todos/v', 'todos/w', 'todos/z']);
    const since = await b.evaluate((n) => window.live.slice(n).flatMap((r) => r.changes.map((c) => [c.type, c.id])), before);
    assert.deepEqual(since, [['added', 'todos/v'], ['removed', 'todos/x']]);
    await b.evaluate(() => window.liveQuery.close());
    assert.deepEqual(pageErrors, []);
  } finally {
    await context.close();
  }
});
