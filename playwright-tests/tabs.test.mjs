// Tabs of one origin sharing one persisted store (run in one tab's host
// worker that the SharedWorker names), in Debian's Chromium against the
// real sync server.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { logBackend, serveWithChromium } from './harness.mjs';

const env = serveWithChromium();
const pageErrors = [];

// openPages opens n pages with database's persisted store open. With
// hooks, their host workers serve the tests' hook (js/shared.js).
async function openPages(context, n, database, { hooks = false } = {}) {
  const pages = [];
  for (let i = 0; i < n; i++) {
    const page = await context.newPage();
    page.on('pageerror', (err) => pageErrors.push(err));
    // Before the page's scripts: the demo page opens a store as it loads.
    if (hooks) await page.addInitScript(() => (globalThis.__hilodbTestHooks = true));
    await page.goto(`${env.server.base}/`);
    await page.evaluate(async (database) => {
      const { openStore } = await import('/index.js');
      window.store = await openStore({ url: `ws://${location.host}/v1/sync`, database, persist: database, sync: true });
      window.changed = new Set();
      window.store.on('change', ({ changes }) => changes.forEach((c) => window.changed.add(c.id)));
    }, database);
    pages.push(page);
  }
  return pages;
}

// holdNextWrite arms the hook of the host worker running the store (opened
// with hooks): the next receipted write it gets (of method, when given) is
// held in flight, made first when hold is 'made', and never answered.
// Resolves once armed; page.evaluate('window.held') resolves to the held
// write's method.
async function holdNextWrite(page, hold, method) {
  await page.evaluate(
    ([hold, method]) =>
      new Promise((armed) => {
        // Kept on window: a channel nothing refers to may be collected.
        const bc = (window.hookChannel = new BroadcastChannel('hilodb-test-hooks'));
        window.held = new Promise((held) => {
          bc.onmessage = (m) => {
            if (m.data?.armed) armed();
            if (m.data?.held) held(m.data.held);
          };
        });
        bc.postMessage({ hold, method });
      }),
    [hold, method],
  );
}

// recordCalls makes page record the method of each call its stores send
// to their host, in window.calls, until window.stopRecording(), which
// returns them.
async function recordCalls(page) {
  await page.evaluate(() => {
    window.calls = [];
    const post = MessagePort.prototype.postMessage;
    MessagePort.prototype.postMessage = function (msg, ...rest) {
      if (msg?.t === 'call') window.calls.push(msg.m);
      return post.call(this, msg, ...rest);
    };
    window.stopRecording = () => {
      MessagePort.prototype.postMessage = post;
      return window.calls;
    };
  });
}

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
      const s = await openStore({ url: `ws://${location.host}/v1/sync`, database });
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

test('the first page closed mid-write: nothing it was told is lost, the others go on', async () => {
  const database = `tabsclose${Date.now()}`;
  const context = await env.browser.newContext();
  try {
    const [first, ...rest] = await openPages(context, 3, database);
    // The log is in OPFS, written by the store in the first page's host
    // worker: closing that page moves the store to another page's.
    assert.equal(await logBackend(rest[0], database), 'opfs');
    const acked = [];
    await first.exposeFunction('ack', (d) => acked.push(d));
    await first.evaluate(() => {
      (async () => {
        for (let i = 0; ; i++) {
          const d = await window.store.put('orders', { first: i });
          window.ack({ id: d._id, rev: d._rev });
        }
      })();
    });
    await new Promise((ok) => setTimeout(ok, 300));
    await first.close();
    assert.ok(acked.length > 5, `only ${acked.length} writes acknowledged before the close`);
    // The others keep writing and read every acknowledged write. The first
    // page's host worker ran the store: a put sent to it as it went away is
    // sent again to the next host, which tells from its receipt whether it
    // was made, so none fails.
    const { more, retried } = await rest[0].evaluate(async () => {
      const docs = [];
      let retried = 0;
      while (docs.length < 20) {
        try {
          docs.push(await window.store.put('orders', { after: docs.length }));
        } catch (err) {
          if (err.code !== 'unavailable' || err.num !== 503) throw err;
          retried++;
        }
      }
      return { more: docs.map((d) => d._id), retried };
    });
    assert.equal(retried, 0, `${retried} puts rejected after their host went away`);
    const ids = [...acked.map((d) => d.id), ...more];
    assert.equal(new Set(ids).size, ids.length, 'an id was handed out twice');
    const revs = await rest[1].evaluate((ids) => Promise.all(ids.map((id) => window.store.get(id).then((d) => d._rev))), acked.map((d) => d.id));
    assert.deepEqual(revs, acked.map((d) => d.rev));
    // Closing the last pages closes the store; a new page reopens it from
    // IndexedDB with everything in it.
    for (const page of rest) await page.evaluate(() => window.store.close());
    const [again] = await openPages(context, 1, database);
    const found = await again.evaluate((ids) => Promise.all(ids.map((id) => window.store.get(id).then((d) => d._id))), ids);
    assert.deepEqual(found, ids);
    await again.evaluate(() => window.store.close());
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

test('the writing tab closes again and again while another tab writes: every acknowledged write is kept', async () => {
  const database = `tabsrotate${Date.now()}`;
  const context = await env.browser.newContext();
  try {
    // The store runs in the oldest open tab's host worker: each close
    // below takes the host away mid-write, and the next tab's host worker
    // opens the store from storage. A put or delete in flight to the host
    // that went away is sent again there and answered from its receipt, or
    // made: none fails, and none is made twice.
    const lent = await openPages(context, 3, database);
    const [writer] = await openPages(context, 1, database);
    assert.equal(await logBackend(writer, database), 'opfs');
    const acked = [];
    await writer.exposeFunction('ack', (d) => acked.push(d));
    await writer.evaluate(() => {
      window.stop = false;
      window.retried = 0;
      window.done = (async () => {
        for (let i = 0; !window.stop; i++) {
          let d;
          try {
            d = await window.store.put('orders', { rotate: i });
            // Every third document is deleted again: a delete sent again
            // to the next host must not fail with not_found.
            if (i % 3 === 2) {
              await window.store.delete(d._id);
              continue;
            }
          } catch (err) {
            if (err.code !== 'unavailable' || err.num !== 503) throw err;
            window.retried++;
            continue;
          }
          window.ack({ id: d._id, rev: d._rev });
        }
      })();
    });
    for (const page of [...lent]) {
      const before = acked.length;
      await page.close();
      // Writes go on through the next tab's writer.
      const deadline = Date.now() + 15000;
      while (acked.length < before + 20) {
        assert.ok(Date.now() < deadline, `writes stalled after a writing tab closed (${acked.length - before} since)`);
        await new Promise((ok) => setTimeout(ok, 20));
      }
    }
    const retried = await writer.evaluate(async () => {
      window.stop = true;
      await window.done;
      return window.retried;
    });
    assert.equal(retried, 0, `${retried} puts rejected for ${lent.length} hosts gone`);
    const ids = acked.map((d) => d.id);
    assert.equal(new Set(ids).size, ids.length, 'an id was handed out twice');
    // Each put of the loop stored once: a put made by a host that went away
    // and then sent again is not made a second time.
    const stored = await writer.evaluate(async () => {
      const seen = [];
      let after = null;
      do {
        const page = await window.store.list('orders', { limit: 1000, after });
        for (const d of page.docs) if (d.rotate !== undefined) seen.push(d.rotate);
        after = page.next;
      } while (after !== null);
      return seen;
    });
    assert.equal(new Set(stored).size, stored.length, 'a put was stored twice');
    assert.ok(stored.length >= acked.length, `${stored.length} puts stored, ${acked.length} acknowledged`);
    await writer.evaluate(() => window.store.close());
    await writer.close();
    const [again] = await openPages(context, 1, database);
    const revs = await again.evaluate((ids) => Promise.all(ids.map((id) => window.store.get(id).then((d) => d._rev, (e) => `missing: ${e.code}`))), ids);
    assert.deepEqual(revs, acked.map((d) => d.rev));
    await again.evaluate(() => window.store.close());
  } finally {
    await context.close();
  }
});

test('reads in flight when the tab running the store closes are answered by the next tab\'s host; writes go on there', async () => {
  const database = `tabsreads${Date.now()}`;
  const context = await env.browser.newContext();
  try {
    const [host, reader] = await openPages(context, 2, database);
    const ids = await host.evaluate(async () => {
      const ids = [];
      for (let i = 0; i < 20; i++) ids.push((await window.store.put('orders', { i }))._id);
      return ids;
    });
    // The reader keeps many gets in flight while the first page, whose
    // host worker runs the store, closes: none of them fails.
    await reader.evaluate((ids) => {
      window.stop = false;
      window.reads = 0;
      window.readFailures = [];
      window.reading = (async () => {
        while (!window.stop) {
          const got = await Promise.allSettled(ids.map((id) => window.store.get(id)));
          for (const g of got) if (g.status === 'rejected') window.readFailures.push(`${g.reason.code}: ${g.reason.message}`);
          window.reads += got.length;
        }
      })();
    }, ids);
    await new Promise((ok) => setTimeout(ok, 200));
    await host.close();
    const after = await reader.evaluate(async () => {
      const before = window.reads;
      const deadline = Date.now() + 15000;
      while (window.reads < before + 200 && Date.now() < deadline) await new Promise((ok) => setTimeout(ok, 20));
      window.stop = true;
      await window.reading;
      const doc = await window.store.put('orders', { after: true });
      return { more: window.reads - before, failures: window.readFailures, doc, info: await window.store.info() };
    });
    assert.deepEqual(after.failures, []);
    assert.ok(after.more >= 200, `only ${after.more} reads answered after the host closed`);
    assert.ok(!ids.includes(after.doc._id));
    assert.equal(after.info.shared, true);
    assert.equal(await logBackend(reader, database), 'opfs');
    await reader.evaluate(() => window.store.close());
  } finally {
    await context.close();
  }
});

// Each write below is certainly in flight when the tab running the store
// closes: the host worker's test hook holds it (made and durable, or not
// made) and never answers. The writing tab sends it again to the next host,
// which answers it from its receipt or makes it: it resolves, is stored
// once, and a third tab sees it.
const inFlight = [
  {
    name: 'a delete',
    hold: 'made',
    setup: () => window.store.put('orders', { _key: 'gone', n: 1 }),
    write: () => window.store.delete('orders/gone'),
    check: async (answer) => ({
      answer: answer === undefined,
      read: await window.store.get('orders/gone').then(
        () => 'found',
        (err) => err.code,
      ),
    }),
    want: { answer: true, read: 'not_found' },
  },
  {
    name: 'a session\'s saveChanges',
    hold: 'made',
    setup: async () => {},
    write: async () => {
      // New documents under optimistic concurrency: made twice, the
      // second would fail with conflict.
      const session = window.store.openSession({ useOptimisticConcurrency: true });
      await session.store({ note: 'in flight' }, 'notes/inflight');
      await session.store({ note: 'in flight too' }, 'notes/inflight2');
      await session.saveChanges();
    },
    check: async () => {
      const page = await window.store.list('notes', { limit: 100 });
      return { notes: page.docs.map((d) => [d._id, d.note]).sort() };
    },
    want: {
      notes: [
        ['notes/inflight', 'in flight'],
        ['notes/inflight2', 'in flight too'],
      ],
    },
  },
  {
    name: 'a collection save',
    hold: 'made',
    setup: async () => {},
    write: () => window.store.collection('orders').save({ _key: 'saved', n: 1 }, { returnNew: true }),
    check: async (answer) => {
      const doc = await window.store.get('orders/saved');
      return {
        answer: answer._id === doc._id && answer._key === 'saved' && answer._rev === doc._rev && answer.new._rev === doc._rev,
        count: await window.store.collection('orders').count(),
      };
    },
    want: { answer: true, count: { count: 1 } },
  },
  {
    name: 'puts made together',
    hold: 'made',
    method: '_putManyText',
    setup: async () => {},
    write: async () => {
      // The first goes alone; the others go together, as one write, the one
      // the host holds.
      const puts = [window.store.put('orders', { _key: 'alone', n: 0 })];
      for (let k = 1; k <= 4; k++) puts.push(window.store.put('orders', k === 2 ? { _key: 'not a key' } : { _key: `p${k}`, n: k }));
      const got = await Promise.allSettled(puts);
      return got.map((g) => (g.status === 'fulfilled' ? [g.value._key, g.value.n] : g.reason.code));
    },
    check: async (answer) => {
      const page = await window.store.list('orders', { limit: 100 });
      return { answer, stored: page.docs.map((d) => [d._key, d.n]).sort() };
    },
    want: {
      answer: [['alone', 0], ['p1', 1], 'illegal_key', ['p3', 3], ['p4', 4]],
      stored: [['alone', 0], ['p1', 1], ['p3', 3], ['p4', 4]],
    },
  },
  {
    name: 'a collection updateAll and removeAll not made yet',
    hold: 'unmade',
    setup: () => window.store.collection('orders').saveAll([{ _key: 'u', n: 1 }, { _key: 'r' }]),
    write: async () => {
      const c = window.store.collection('orders');
      const updated = await c.updateAll([{ _key: 'u', n: 2 }, { _key: 'none' }], { returnOld: true });
      return { updated, removed: await c.removeAll(['r']) };
    },
    check: async (answer) => ({
      old: answer.updated[0].old.n,
      missing: answer.updated[1].errorNum,
      removed: answer.removed[0]._key,
      n: (await window.store.get('orders/u')).n,
      count: await window.store.collection('orders').count(),
    }),
    want: { old: 1, missing: 1202, removed: 'r', n: 2, count: { count: 1 } },
  },
];

for (const c of inFlight) {
  test(`${c.name} in flight when the tab running the store closes resolves, is stored once, and is seen from the other tab`, { timeout: 60000 }, async () => {
    const database = `tabsinflight${Date.now()}`;
    const context = await env.browser.newContext();
    try {
      // The first page's host worker runs the store (the oldest tab).
      const [host] = await openPages(context, 1, database, { hooks: true });
      const [writer, reader] = await openPages(context, 2, database);
      await writer.evaluate(`(${c.setup})()`);
      await holdNextWrite(reader, c.hold, c.method);
      await writer.evaluate(`window.inflight = (${c.write})(); window.inflight.catch(() => {}); undefined`);
      assert.ok(['delete', '_saveBatch', '_collectionOp', '_putManyText'].includes(await reader.evaluate('window.held')));
      await host.close();
      const answer = await writer.evaluate('window.inflight');
      assert.deepEqual(await reader.evaluate(`(${c.check})(${JSON.stringify(answer ?? null)} ?? undefined)`), c.want);
      assert.deepEqual(await writer.evaluate(`(${c.check})(${JSON.stringify(answer ?? null)} ?? undefined)`), c.want);
      await writer.evaluate(() => window.store.close());
      await reader.evaluate(() => window.store.close());
    } finally {
      await context.close();
    }
  });
}

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
