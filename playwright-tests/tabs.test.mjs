// Tabs of one origin sharing one persisted store (run in one tab's host
// worker that the SharedWorker names), in Debian's Chromium against the
// real sync server. takeover.test.mjs has the tab running the store go
// away.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { logBackend, serveWithChromium } from './harness.mjs';
import { openPagesWith, recordCalls } from './tabs.mjs';

const env = serveWithChromium();
const pageErrors = [];
const openPages = openPagesWith(env, pageErrors);

test('three pages write into one persisted store at once: ids distinct, every page sees every write', async () => {
  const database = `tabs${Date.now()}`;
  const context = await env.browser.newContext();
  try {
    const pages = await openPages(context, 3, database);
    const written = await Promise.all(
      pages.map((page, p) =>
        page.evaluate(async (p) => {
          const docs = await Promise.all(Array.from({ length: 50 }, (_, i) => window.store.put('orders', { p, i })));
          return docs.map((d) => ({ id: d._id, rev: d._rev }));
        }, p),
      ),
    );
    const all = written.flat();
    assert.equal(new Set(all.map((d) => d.id)).size, 150, 'ids are not distinct');
    for (const [p, page] of pages.entries()) {
      const revs = await page.evaluate((ids) => Promise.all(ids.map((id) => window.store.get(id).then((d) => d._rev))), all.map((d) => d.id));
      assert.deepEqual(revs, all.map((d) => d.rev), `page ${p} does not see every write`);
      const heard = await page.evaluate(() => [...window.changed]);
      const others = written.filter((_, q) => q !== p).flat().map((d) => d.id);
      for (const id of others) assert.ok(heard.includes(id), `page ${p} heard no 'change' for ${id}`);
    }
    // Collections go through the shared store too.
    const saved = await pages[0].evaluate(async () => {
      const users = await window.store.createCollection('users', { keyOptions: { type: 'autoincrement' } });
      return users.save({ name: 'ann' });
    });
    const read = await pages[2].evaluate((key) => window.store.collection('users').document(key), saved._key);
    assert.equal(read.name, 'ann');
    assert.deepEqual(await pages[1].evaluate(() => window.store.collection('users').count()), { count: 1 });
    // One store per origin: it synced once, and the server has every write.
    await pages[0].evaluate(() => window.store.sync());
    const reader = await context.newPage();
    await reader.goto(`${env.server.base}/`);
    const onServer = await reader.evaluate(async ({ database, ids }) => {
      const { openStore } = await import('/index.js');
      const s = await openStore({ url: `ws://${location.host}/v1/sync`, database, persist: false });
      await s.sync();
      const revs = await Promise.all(ids.map((id) => s.get(id).then((d) => d._rev)));
      await s.close();
      return revs;
    }, { database, ids: all.map((d) => d.id) });
    assert.deepEqual(onServer, all.map((d) => d.rev));
    assert.deepEqual(pageErrors, []);
  } finally {
    await context.close();
  }
});

test('sessions and live watches work in shared tabs: a session in one tab, its documents in the other tab\'s watch', async () => {
  const database = `tabsession${Date.now()}`;
  const context = await env.browser.newContext();
  try {
    const pages = [];
    for (let i = 0; i < 2; i++) {
      const page = await context.newPage();
      page.on('pageerror', (err) => pageErrors.push(err));
      await page.goto(`${env.server.base}/`);
      await page.evaluate(async (database) => {
        const { openStore } = await import('/index.js');
        window.store = await openStore({ url: `ws://${location.host}/v1/sync`, database, persist: database, sync: true, changeFeed: true });
        window.seen = [];
        window.store.watch(({ results }) => window.seen.push(...results.map((r) => ({ id: r.id, doc: r.doc, deleted: r.deleted }))));
      }, database);
      pages.push(page);
    }
    const saved = await pages[0].evaluate(async () => {
      class Order {
        constructor(item) {
          this.item = item;
        }
      }
      const info = await window.store.info();
      // Before any session: a class's names are not known in this tab yet.
      let before = '';
      try {
        window.store.conventions.findCollectionName(Order);
      } catch (err) {
        before = err.code;
      }
      await window.store.conventions.preload(Order);
      const collection = window.store.conventions.findCollectionName(Order);
      const session = window.store.openSession({ useOptimisticConcurrency: true });
      const a = new Order('pen');
      const b = new Order('ink');
      await session.store(a);
      await session.store(b);
      await session.store({ note: 'literal' }, 'notes/1');
      await session.saveChanges();
      // A stale session loses against a newer write from another session.
      const s1 = window.store.openSession({ useOptimisticConcurrency: true });
      const s2 = window.store.openSession({ useOptimisticConcurrency: true });
      const x1 = await s1.load(a.id);
      const x2 = await s2.load(a.id);
      x1.item = 'pencil';
      await s1.saveChanges();
      x2.item = 'quill';
      let stale = '';
      try {
        await s2.saveChanges();
      } catch (err) {
        stale = err.code;
      }
      return { shared: info.shared, before, collection, ids: [a.id, b.id], stale, sep: window.store.conventions.identityPartsSeparator };
    });
    assert.deepEqual(
      { shared: saved.shared, before: saved.before, collection: saved.collection, stale: saved.stale, sep: saved.sep },
      { shared: true, before: 'bad_request', collection: 'Orders', stale: 'conflict', sep: '/' },
    );
    for (const id of saved.ids) assert.match(id, /^orders\/\d+-A$/);
    // The other tab's watch saw every write, with its document.
    await pages[1].waitForFunction((n) => window.seen.length >= n, 4, { timeout: 10000 });
    const seen = await pages[1].evaluate(() => window.seen);
    const last = new Map(seen.map((e) => [e.id, e]));
    assert.deepEqual([...last.keys()].sort(), [...saved.ids, 'notes/1'].sort());
    assert.equal(last.get(saved.ids[0]).doc.item, 'pencil');
    assert.equal(last.get(saved.ids[1]).doc.item, 'ink');
    assert.equal(last.get(saved.ids[0]).doc['@metadata']['Raven-Node-Type'], 'Order');
    // The loading tab reads the session's documents back as entities.
    const loaded = await pages[1].evaluate(async (id) => {
      const s = window.store.openSession();
      const e = await s.load(id);
      return { item: e.item, id: e.id };
    }, saved.ids[1]);
    assert.deepEqual(loaded, { item: 'ink', id: saved.ids[1] });
    assert.deepEqual(pageErrors, []);
  } finally {
    await context.close();
  }
});

test('put in a shared store honours its options in every tab: a stale rev is refused, the current one and ignoreRevs are taken', async () => {
  const database = `tabrev${Date.now()}`;
  const context = await env.browser.newContext();
  try {
    const pages = await openPages(context, 2, database);
    // The first page's host worker runs the store: the second page's calls
    // cross to it, the first page's stay in its own tab.
    for (const [i, page] of pages.entries()) {
      const got = await page.evaluate(async (key) => {
        const s = window.store;
        const first = await s.put('orders', { _key: key, n: 1 });
        const second = await s.put('orders', { _key: key, n: 2 });
        const codes = {};
        const attempt = async (name, fn) => {
          try {
            await fn();
            codes[name] = 'ok';
          } catch (err) {
            codes[name] = err.code;
          }
        };
        await attempt('staleRev', () => s.put('orders', { _key: key, n: 3 }, { rev: first._rev }));
        await attempt('staleIfMatch', () => s.put('orders', { _key: key, n: 3 }, { ifMatch: first._rev }));
        await attempt('staleInDoc', () => s.put('orders', { _key: key, _rev: first._rev, n: 3 }));
        await attempt('currentRev', () => s.put('orders', { _key: key, n: 4 }, { rev: second._rev }));
        await attempt('ignoreRevs', () => s.put('orders', { _key: key, _rev: first._rev, n: 5 }, { ignoreRevs: true }));
        await attempt('unknownOption', () => s.put('orders', { _key: key, n: 6 }, { revision: second._rev }));
        return { codes, n: (await s.get(`orders/${key}`)).n, shared: (await s.info()).shared };
      }, `k${i}`);
      assert.deepEqual(got, {
        codes: { staleRev: 'conflict', staleIfMatch: 'conflict', staleInDoc: 'conflict', currentRev: 'ok', ignoreRevs: 'ok', unknownOption: 'bad_request' },
        n: 5,
        shared: true,
      }, `page ${i}`);
    }
    assert.deepEqual(pageErrors, []);
  } finally {
    await context.close();
  }
});

test('puts made together in a shared store go to the host as one write, each settled with its own document or error, in call order', async () => {
  const database = `tabputs${Date.now()}`;
  const context = await env.browser.newContext();
  try {
    const pages = await openPages(context, 2, database);
    for (const [i, page] of pages.entries()) {
      await recordCalls(page);
      const got = await page.evaluate(async (tag) => {
        const s = window.store;
        try {
          const calls = [];
          calls.push(s.put('orders', { _key: `${tag}-k`, n: 1 })); // the first goes at once
          calls.push(s.put('orders', { _key: `${tag}-k`, n: 2 })); // the rest together
          for (let k = 0; k < 10; k++) calls.push(s.put('orders', k === 4 ? { _key: 'not a key' } : { n: k, tag }));
          const late = { n: 100, tag };
          calls.push(s.put('orders', late));
          late.n = -1; // after its put: stored as it was at the call
          calls.push(s.put('other', { n: 200, tag })); // another collection: a group of its own
          // A read made now sees every put made before it.
          const read = s.get(`orders/${tag}-k`);
          calls.push(s.put('orders', { n: 300, tag }, { ignoreRevs: true })); // with options: alone
          const settled = await Promise.allSettled(calls);
          const before = window.stopRecording();
          const results = settled.map((r) => (r.status === 'fulfilled' ? { id: r.value._id, n: r.value.n } : { error: r.reason.code }));
          const stored = [];
          for (const r of results) if (r.id) stored.push((await s.get(r.id)).n);
          return { sent: before, results, stored, read: (await read).n };
        } finally {
          window.stopRecording();
        }
      }, `t${i}`);
      const msg = `page ${i}`;
      assert.deepEqual(got.sent, ['put', '_putManyText', '_putManyText', 'get', 'put'], msg);
      assert.equal(got.read, 2, msg);
      assert.equal(got.results.length, 15, msg);
      assert.deepEqual(got.results[6], { error: 'illegal_key' }, msg);
      const ok = got.results.filter((r) => !r.error);
      assert.equal(ok.length, 14, msg);
      assert.deepEqual(ok.map((r) => r.n), [1, 2, 0, 1, 2, 3, 5, 6, 7, 8, 9, 100, 200, 300], msg);
      assert.deepEqual(got.stored, [2, 2, 0, 1, 2, 3, 5, 6, 7, 8, 9, 100, 200, 300], msg);
      // HiLo ids in call order, each once.
      const nums = ok.slice(2).map((r) => Number(r.id.split('/')[1].split('-')[0]));
      assert.equal(new Set(ok.map((r) => r.id)).size, 13, msg);
      const orders = nums.filter((_, k) => k !== 10);
      assert.deepEqual(orders, [...orders].sort((a, b) => a - b), msg);
    }
    assert.deepEqual(pageErrors, []);
  } finally {
    await context.close();
  }
});

test('gets made together in a shared store go to the host as one message, each settled with its own document or error', async () => {
  const database = `tabgets${Date.now()}`;
  const context = await env.browser.newContext();
  try {
    const pages = await openPages(context, 2, database);
    for (const [i, page] of pages.entries()) {
      const tag = `g${i}`;
      const made = await page.evaluate((tag) => window.store.putMany('orders', Array.from({ length: 20 }, (_, k) => ({ k, tag }))).then((docs) => docs.map((d) => d._id)), tag);
      await recordCalls(page);
      const got = await page.evaluate(
        async ([tag, made]) => {
          const s = window.store;
          const late = s.put('orders', { _key: `${tag}-late`, n: 1 }); // made before the gets
          const ids = [...made, 'orders/missing', `orders/${tag}-late`];
          const settled = await Promise.allSettled([late, ...ids.map((id) => s.get(id))]);
          return { sent: window.stopRecording(), results: settled.slice(1).map((r) => (r.status === 'fulfilled' ? [r.value.k ?? r.value.n, r.value.tag ?? ''] : r.reason.code)) };
        },
        [tag, made],
      );
      const msg = `page ${i}`;
      assert.deepEqual(got.sent, ['put', 'get', '_getMany'], msg);
      assert.deepEqual(
        got.results,
        [...Array.from({ length: 20 }, (_, k) => [k, `g${i}`]), 'not_found', [1, '']],
        msg,
      );
    }
    assert.deepEqual(pageErrors, []);
  } finally {
    await context.close();
  }
});

test('a store whose log is in IndexedDB keeps it there when pages that can write OPFS open it', async () => {
  const database = `tabslegacy${Date.now()}`;
  const context = await env.browser.newContext();
  try {
    // Made by a page without dedicated workers: no writer, so IndexedDB.
    const old = await context.newPage();
    old.on('pageerror', (err) => pageErrors.push(err));
    await old.addInitScript(() => delete window.Worker);
    await old.goto(`${env.server.base}/`);
    const ids = await old.evaluate(async (database) => {
      const { openStore } = await import('/index.js');
      const store = await openStore({ url: `ws://${location.host}/v1/sync`, database, persist: database });
      const ids = [];
      for (let i = 0; i < 20; i++) ids.push((await store.put('orders', { i }))._id);
      await store.close();
      return ids;
    }, database);
    assert.equal(await logBackend(old, database), 'indexeddb');
    await old.close();
    const [page] = await openPages(context, 1, database);
    const found = await page.evaluate((ids) => Promise.all(ids.map((id) => window.store.get(id).then((d) => d._id))), ids);
    assert.deepEqual(found, ids);
    const more = await page.evaluate(async () => (await window.store.put('orders', { more: true }))._id);
    assert.equal(await logBackend(page, database), 'indexeddb');
    await page.evaluate(() => window.store.close());
    const [again] = await openPages(context, 1, database);
    assert.equal((await again.evaluate((id) => window.store.get(id), more))._id, more);
    await again.evaluate(() => window.store.close());
  } finally {
    await context.close();
  }
});

test('a persisted store opened with shared: false in a page writes its OPFS log through a writer of its own', async () => {
  const database = `tabsown${Date.now()}`;
  const context = await env.browser.newContext();
  try {
    const page = await context.newPage();
    page.on('pageerror', (err) => pageErrors.push(err));
    await page.goto(`${env.server.base}/`);
    const ids = await page.evaluate(async (database) => {
      const { openStore } = await import('/index.js');
      const store = await openStore({ url: `ws://${location.host}/v1/sync`, database, persist: database, shared: false });
      const ids = [];
      for (let i = 0; i < 30; i++) ids.push((await store.put('orders', { i }))._id);
      window.own = store;
      return ids;
    }, database);
    assert.equal(await logBackend(page, database), 'opfs');
    // Closed (the log compacted into an OPFS snapshot), then opened again
    // on its own and through the shared worker: everything is there.
    const found = await page.evaluate(async ({ database, ids }) => {
      await window.own.close();
      const { openStore } = await import('/index.js');
      const out = [];
      for (const shared of [false, true]) {
        const store = await openStore({ url: `ws://${location.host}/v1/sync`, database, persist: database, shared });
        out.push(await Promise.all(ids.map((id) => store.get(id).then((d) => d._id, (e) => `missing: ${e.code}`))));
        await store.close();
      }
      return out;
    }, { database, ids });
    assert.deepEqual(found, [ids, ids]);
    assert.deepEqual(pageErrors, []);
  } finally {
    await context.close();
  }
});

test('a persisted store in a dedicated worker holds its OPFS files itself; a worker ended mid-write loses no acknowledged write', async () => {
  const database = `tabsworker${Date.now()}`;
  const context = await env.browser.newContext();
  try {
    const page = await context.newPage();
    page.on('pageerror', (err) => pageErrors.push(err));
    await page.goto(`${env.server.base}/`);
    const got = await page.evaluate(async (database) => {
      // The worker counts the workers it starts: none, as it writes the
      // files itself.
      const code = `
        let started = 0;
        const W = globalThis.Worker;
        if (W) globalThis.Worker = class extends W { constructor(...a) { super(...a); started++; } };
        const { openStore } = await import('${location.origin}/index.js');
        const store = await openStore({ url: 'ws://${location.host}/v1/sync', database: '${database}', persist: '${database}' });
        postMessage({ started });
        for (let i = 0; ; i++) postMessage({ id: (await store.put('orders', { i }))._id });
      `;
      const w = new Worker(URL.createObjectURL(new Blob([code], { type: 'text/javascript' })), { type: 'module' });
      const acked = [];
      let started = -1;
      await new Promise((resolve, reject) => {
        w.onerror = (e) => reject(new Error(e.message));
        w.onmessage = (e) => {
          if (e.data.started !== undefined) started = e.data.started;
          else acked.push(e.data.id);
          if (acked.length === 40) {
            w.terminate(); // mid-write, as a crash would
            resolve();
          }
        };
      });
      return { acked: [...acked], started };
    }, database);
    assert.equal(got.started, 0, 'the worker started a writer worker');
    assert.equal(await logBackend(page, database), 'opfs');
    const [again] = await openPages(context, 1, database);
    const found = await again.evaluate((ids) => Promise.all(ids.map((id) => window.store.get(id).then((d) => d._id, (e) => `missing: ${e.code}`))), got.acked);
    assert.deepEqual(found, got.acked);
    await again.evaluate(() => window.store.close());
    assert.deepEqual(pageErrors, []);
  } finally {
    await context.close();
  }
});
