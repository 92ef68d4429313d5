// End-to-end tests of the hilodb browser build in Debian's Chromium, against
// the real sync server serving a web root made by js/build-web.sh.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { access, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';

import { chromium } from 'playwright-core';

import { buildServer, freePort, repoRoot, startServer } from '../js/test/server.mjs';

const run = promisify(execFile);
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
const hiloID = /^orders\/\d+-A$/;

// waitForChromium waits for the browser, which may still be being installed.
async function waitForChromium(timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await access(chromiumPath);
      return;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`${chromiumPath} not found: install Debian's chromium package`, { cause: err });
      await new Promise((ok) => setTimeout(ok, 1000));
    }
  }
}

describe('hilodb in Chromium', () => {
  let cleanupBin = async () => {};
  let webRoot;
  let server;
  let browser;
  const pageErrors = [];

  before(async () => {
    const built = await buildServer();
    cleanupBin = built.cleanup;
    webRoot = await mkdtemp(join(tmpdir(), 'hilodb-web-'));
    await run('bash', [join(repoRoot, 'js', 'build-web.sh'), webRoot], { maxBuffer: 16 << 20 });
    server = await startServer(built.bin, ['-static', webRoot]);
    await waitForChromium(60000);
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: ['--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
  });

  after(async () => {
    try {
      await browser?.close();
    } finally {
      await server?.stop();
      await cleanupBin();
      if (webRoot) await rm(webRoot, { recursive: true, force: true });
    }
  });

  // newPage opens the demo page and records errors thrown in it. Without a
  // context the page gets a context of its own (storage included).
  async function newPage(context) {
    const page = await (context ?? browser).newPage();
    page.on('pageerror', (err) => pageErrors.push(err));
    await page.goto(`${server.base}/`);
    return page;
  }

  test('two pages storing 100 documents each at the same time get 200 distinct ids', async () => {
    const pages = await Promise.all([newPage(), newPage()]);
    try {
      const storeHundred = (page) =>
        page.evaluate(async () => {
          // The same module the demo page loaded: one Go instance per page.
          const { openStore } = await import('/index.js');
          const store = await openStore({ url: `ws://${location.host}/v1/sync`, database: 'e2e', persist: false });
          try {
            const docs = await Promise.all(Array.from({ length: 100 }, (_, i) => store.put('orders', { i })));
            const again = await store.get(docs[0]._id);
            return { ids: docs.map((d) => d._id), revs: docs.map((d) => d._rev), firstAgain: again };
          } finally {
            await store.close();
          }
        });
      const [a, b] = await Promise.all(pages.map(storeHundred));
      const ids = [...a.ids, ...b.ids];
      assert.equal(ids.length, 200);
      for (const id of ids) assert.match(id, hiloID);
      assert.equal(new Set(ids).size, 200, 'ids are not distinct');
      for (const r of [a, b]) {
        assert.equal(r.firstAgain._id, r.ids[0]);
        assert.equal(r.firstAgain._rev, r.revs[0]);
        assert.equal(new Set(r.revs).size, 100, 'revisions are not distinct');
      }
      assert.deepEqual(pageErrors, []);
    } finally {
      await Promise.all(pages.map((p) => p.close()));
    }
  });

  test('a page whose origin the server refuses is told forbidden_origin', async () => {
    // A second server on another port: the demo page's origin is not its own.
    const other = await startServer(await (async () => (await buildServer()).bin)());
    const page = await newPage();
    try {
      const refused = await page.evaluate(async (url) => {
        const { openStore } = await import('/index.js');
        try {
          await openStore({ url, database: 'e2e' });
          return null;
        } catch (err) {
          return { code: err.code, num: err.num };
        }
      }, other.wsURL);
      assert.deepEqual(refused, { code: 'forbidden_origin', num: 403 });
    } finally {
      await page.close();
      await other.stop();
    }
  });

  test('a wasm file answered with a page (a dev server\'s fallback) is a clear error', async () => {
    const { cp, readdir, writeFile } = await import('node:fs/promises');
    const moved = await mkdtemp(join(tmpdir(), 'hilodb-moved-'));
    await cp(webRoot, moved, { recursive: true });
    const wasm = (await readdir(join(moved, 'dist'))).find((f) => /^hilodb-[0-9a-f]+\.wasm$/.test(f));
    for (const f of [wasm, `${wasm}.br`, `${wasm}.gz`]) await rm(join(moved, 'dist', f), { force: true });
    await writeFile(join(moved, 'dist', wasm), '<!doctype html><title>app</title><div id="root"></div>');
    const other = await startServer(await (async () => (await buildServer()).bin)(), ['-static', moved]);
    const page = await browser.newPage();
    try {
      await page.goto(`${other.base}/`);
      const err = await page.evaluate(async () => {
        const { openStore } = await import('/index.js');
        try {
          await openStore({ url: `ws://${location.host}/v1/sync`, database: 'e2e' });
          return null;
        } catch (e) {
          return { code: e.code, num: e.num, message: e.message };
        }
      });
      assert.equal(err?.code, 'unavailable', JSON.stringify(err));
      assert.match(err.message, /not WebAssembly.*optimizeDeps/s);
    } finally {
      await page.close();
      await other.stop();
      await rm(moved, { recursive: true, force: true });
    }
  });

  test('a store opens offline when the server cannot be reached', async () => {
    const page = await newPage();
    try {
      const port = await freePort(); // nothing listens here
      const got = await page.evaluate(async (port) => {
        const { openStore } = await import('/index.js');
        const store = await openStore({ url: `ws://127.0.0.1:${port}/v1/sync`, database: 'e2e', persist: false });
        try {
          const info = await store.info();
          const keyed = await store.put('orders', { _key: 'offline-1' });
          let hilo;
          try {
            hilo = { id: (await store.put('orders', {}))._id };
          } catch (err) {
            hilo = { code: err.code, num: err.num };
          }
          const listed = (await store.list('orders')).docs.map((d) => d._id);
          return { connected: info.connected, keyedID: keyed._id, hilo, listed };
        } finally {
          await store.close();
        }
      }, port);
      assert.equal(got.connected, false);
      assert.equal(got.keyedID, 'orders/offline-1');
      // No range was ever leased: a time-ordered UUID in the collection (docs/ids.md).
      assert.match(got.hilo.id ?? JSON.stringify(got.hilo), /^orders\/[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.ok(got.listed.includes(got.hilo.id), `list('orders') = ${got.listed}`);
      assert.deepEqual(pageErrors, []);
    } finally {
      await page.close();
    }
  });

  test('two pages with live sync on one database: 50 documents reach page 2, an edit reaches page 1', async () => {
    const pages = await Promise.all([newPage(), newPage()]);
    const database = `live${Date.now()}`;
    try {
      const openLive = (page) =>
        page.evaluate(async (database) => {
          const { openStore } = await import('/index.js');
          window.store = await openStore({ url: `ws://${location.host}/v1/sync`, database, sync: true, persist: false });
          window.changes = [];
          window.store.on('change', (e) => window.changes.push(...e.changes));
          window.syncErrors = [];
          window.store.on('error', (e) => window.syncErrors.push(`${e.code}: ${e.message}`));
        }, database);
      await Promise.all(pages.map(openLive));
      const [one, two] = pages;
      const docs = await one.evaluate(() => Promise.all(Array.from({ length: 50 }, (_, i) => window.store.put('orders', { i }))));
      assert.equal(new Set(docs.map((d) => d._id)).size, 50);

      // Page 2 polls for them, for at most 5 s.
      const seen = await two.evaluate(async (ids) => {
        const deadline = Date.now() + 5000;
        for (;;) {
          const got = await Promise.all(ids.map((id) => window.store.get(id).catch(() => null)));
          if (got.every(Boolean) || Date.now() > deadline) return got;
          await new Promise((ok) => setTimeout(ok, 25));
        }
      }, docs.map((d) => d._id));
      assert.deepEqual(seen, docs);
      assert.deepEqual(await two.evaluate(() => new Set(window.changes.map((c) => c.id)).size), 50);

      const edited = await two.evaluate((doc) => window.store.put('orders', { ...doc, i: 'edited on page 2' }), docs[7]);
      const back = await one.evaluate(async (edited) => {
        const deadline = Date.now() + 5000;
        for (;;) {
          const doc = await window.store.get(edited._id);
          if (doc._rev === edited._rev || Date.now() > deadline) return doc;
          await new Promise((ok) => setTimeout(ok, 25));
        }
      }, edited);
      assert.deepEqual(back, edited);
      assert.equal(back.i, 'edited on page 2');
      for (const page of pages) {
        assert.equal(await page.evaluate(() => window.store.pending()), 0);
        assert.deepEqual(await page.evaluate(() => window.syncErrors), []);
        await page.evaluate(() => window.store.close());
      }
      assert.deepEqual(pageErrors, []);
    } finally {
      await Promise.all(pages.map((p) => p.close()));
    }
  });

  test('a persisted store survives a reload: documents, pending writes, its HiLo range', async () => {
    const rangesLeased = async () => {
      const text = await (await fetch(`${server.base}/metrics`)).text();
      const m = /^hilodb_ranges_leased_total (\d+)$/m.exec(text);
      assert.ok(m, 'no hilodb_ranges_leased_total in /metrics');
      return Number(m[1]);
    };
    const database = `persist${Date.now()}`;
    // Two tabs of one profile: they share IndexedDB and Web Locks.
    const context = await browser.newContext();
    const page = await newPage(context);
    const other = await newPage(context);
    try {
      const openPersisted = (page) =>
        page.evaluate(async (database) => {
          const { openStore } = await import('/index.js');
          window.store = await openStore({ url: `ws://${location.host}/v1/sync`, database, persist: database, sync: false });
        }, database);
      await openPersisted(page);
      const before = await page.evaluate(async () => {
        const docs = [];
        for (let i = 0; i < 10; i++) docs.push(await window.store.put('orders', { i }));
        const info = await window.store.info();
        await window.store.flush();
        return { docs, pending: await window.store.pending(), node: info.node };
      });
      assert.equal(before.pending, 10);
      const leased = await rangesLeased();

      // Another tab opens the same persisted store meanwhile and sees its
      // documents (the tabs share one store); with shared: false it is
      // refused, since two stores resuming one HiLo range would repeat ids.
      const fromOther = await other.evaluate(async ({ database, id }) => {
        const { openStore } = await import('/index.js');
        let refused = null;
        try {
          await openStore({ url: `ws://${location.host}/v1/sync`, database, persist: database, shared: false, sync: false });
        } catch (err) {
          refused = { code: err.code, num: err.num };
        }
        const store = await openStore({ url: `ws://${location.host}/v1/sync`, database, persist: database, sync: false });
        const doc = await store.get(id);
        await store.close();
        return { refused, rev: doc._rev };
      }, { database, id: before.docs[0]._id });
      assert.deepEqual(fromOther, { refused: { code: 'locked', num: 423 }, rev: before.docs[0]._rev });

      await page.reload(); // no close: as a tab that is reloaded or killed
      await openPersisted(page);
      const after = await page.evaluate(async (ids) => {
        const docs = await Promise.all(ids.map((id) => window.store.get(id)));
        const pending = await window.store.pending();
        const info = await window.store.info();
        const more = [];
        for (let i = 0; i < 5; i++) more.push(await window.store.put('orders', { more: i }));
        return { docs, pending, node: info.node, more };
      }, before.docs.map((d) => d._id));
      assert.deepEqual(after.docs, before.docs);
      assert.equal(after.pending, 10);
      assert.equal(after.node, before.node);
      const number = (id) => Number(/^orders\/(\d+)-A$/.exec(id)[1]);
      const ids = [...before.docs, ...after.more].map((d) => d._id);
      assert.equal(new Set(ids).size, 15, `duplicate ids: ${ids}`);
      for (const d of after.more) {
        assert.ok(number(d._id) > 10 && number(d._id) <= 32, `${d._id} is not from the range leased before the reload`);
      }
      assert.equal(await rangesLeased(), leased, 'the reloaded page leased a new range');

      // The pending writes from before the reload still reach the server.
      assert.deepEqual(await page.evaluate(() => window.store.sync()), { pushed: 15, pulled: 0 });
      const seen = await other.evaluate(async ({ database, ids }) => {
        const { openStore } = await import('/index.js');
        const store = await openStore({ url: `ws://${location.host}/v1/sync`, database, persist: false });
        try {
          await store.sync();
          return await Promise.all(ids.map((id) => store.get(id).then((d) => d._rev)));
        } finally {
          await store.close();
        }
      }, { database, ids });
      assert.deepEqual(seen, [...before.docs, ...after.more].map((d) => d._rev));
      await page.evaluate(() => window.store.close());
      assert.deepEqual(pageErrors, []);
    } finally {
      await context.close();
    }
  });

  // twoTabs opens the persisted store database in two pages of one new
  // context (so one store shared by both), each recording the change
  // events it hears in window.changes; run gets both pages and closes
  // their stores and the context after it.
  async function twoTabs(database, run) {
    const context = await browser.newContext();
    try {
      const pages = [await newPage(context), await newPage(context)];
      for (const p of pages) {
        await p.evaluate(async (database) => {
          const { openStore } = await import('/index.js');
          window.store = await openStore({ url: `ws://${location.host}/v1/sync`, database, persist: database });
          window.changes = [];
          window.store.on('change', (e) => window.changes.push(...e.changes));
        }, database);
      }
      await run(...pages);
      for (const p of pages) await p.evaluate(() => window.store.close());
      assert.deepEqual(pageErrors, []);
    } finally {
      await context.close();
    }
  }

  // heard waits in page for n change events, then returns them and the
  // revisions of ids as page reads them.
  const heard = (page, n, ids) =>
    page.evaluate(
      async ([n, ids]) => {
        const deadline = Date.now() + 5000;
        while (window.changes.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        const docs = await Promise.all(ids.map((id) => window.store.get(id)));
        return { changes: window.changes, docs };
      },
      [n, ids],
    );

  test('putMany through a shared store: results in order, a failed document as a HiloError, the other tab told', async () => {
    await twoTabs(`many${Date.now()}`, async (page, other) => {
      const got = await page.evaluate(async () => {
        const docs = Array.from({ length: 500 }, (_, i) => ({ i, name: `Zoë ${i}` }));
        docs[3] = { _key: 'bad key!' }; // refused, the others stored
        docs[7] = { _key: 'k7', nested: { list: [1, 'two', null] } };
        const rs = await window.store.putMany('orders', docs);
        // A document that cannot be turned into JSON: the whole call says which.
        let cyclic = null;
        const loop = { a: 1 };
        loop.self = loop;
        try {
          await window.store.putMany('orders', [{ ok: 1 }, loop]);
        } catch (err) {
          cyclic = { code: err.code, num: err.num, message: err.message };
        }
        return {
          shared: (await window.store.info()).shared,
          results: rs.map((r) => (r instanceof Error ? { error: r.code, num: r.num } : r)),
          cyclic,
        };
      });
      assert.equal(got.shared, true);
      assert.equal(got.results.length, 500);
      assert.deepEqual(got.results[3], { error: 'illegal_key', num: 1221 });
      assert.deepEqual(got.results[7].nested, { list: [1, 'two', null] });
      assert.equal(got.results[7]._id, 'orders/k7');
      const stored = got.results.filter((r) => !r.error);
      assert.equal(stored.length, 499);
      for (const r of stored) if (r._key !== 'k7') assert.equal(r.name, `Zoë ${r.i}`);
      assert.equal(new Set(stored.map((r) => r._id)).size, 499);
      assert.equal(got.cyclic?.code, 'bad_json');
      assert.match(got.cyclic.message, /document 1/);
      // The other tab reads them and was told of each as a change.
      const seen = await heard(other, stored.length, stored.map((r) => r._id));
      assert.deepEqual(seen.docs.map((d) => d._rev), stored.map((r) => r._rev));
      assert.deepEqual(seen.changes.map((c) => c.id).sort(), stored.map((r) => r._id).sort());
    });
  });

  test('collection writes through a shared store fire change in the other tab, silent ones too', async () => {
    await twoTabs(`colchange${Date.now()}`, async (page, other) => {
      const wrote = await page.evaluate(async () => {
        const col = await window.store.createCollection('users');
        const a = await col.save({ _key: 'a', n: 1 });
        const many = await col.saveAll([{ _key: 'b' }, { _key: 'bad key!' }, { _key: 'c' }]);
        const silent = await col.update('a', { n: 2 }, { silent: true });
        const updated = await window.store.get('users/a');
        await col.remove('b');
        return { a, many, silent, updated };
      });
      assert.equal(wrote.silent, undefined, 'a silent write resolves to nothing');
      assert.equal(wrote.updated.n, 2);
      assert.equal(wrote.many[1].error, true);
      const want = [
        { id: 'users/a', rev: wrote.a._rev, deleted: false },
        { id: 'users/b', rev: wrote.many[0]._rev, deleted: false },
        { id: 'users/c', rev: wrote.many[2]._rev, deleted: false },
        { id: 'users/a', rev: wrote.updated._rev, deleted: false },
        { id: 'users/b', rev: '', deleted: true },
      ];
      const seen = await heard(other, want.length, ['users/a']);
      assert.deepEqual(seen.changes, want);
      assert.equal(seen.docs[0].n, 2);
      // The tab that wrote is not told of its own writes.
      assert.deepEqual(await page.evaluate(() => window.changes), []);
    });
  });

  test('a store in IndexedDB whose snapshot is in format 1 (the version before wrote it) opens, and is written back in the current format (3)', async () => {
    // database/testdata/format1: a snapshot in buntdb's file format and a
    // log after it, laid out in IndexedDB as that version kept them.
    const { readFile } = await import('node:fs/promises');
    const fixture = join(repoRoot, 'database', 'testdata', 'format1');
    const snapshot = [...(await readFile(join(fixture, 'snapshot')))];
    const log = [...(await readFile(join(fixture, 'log')))];
    const database = `format1x${Date.now()}`;
    const context = await browser.newContext();
    const page = await newPage(context);
    try {
      const got = await page.evaluate(
        async ({ database, snapshot, log }) => {
          await new Promise((resolve, reject) => {
            const req = indexedDB.open(`hilodb:${database}`, 1);
            req.onupgradeneeded = () => req.result.createObjectStore('kv');
            req.onerror = () => reject(req.error);
            req.onsuccess = () => {
              const tx = req.result.transaction('kv', 'readwrite');
              tx.objectStore('kv').put({ bytes: new Uint8Array(snapshot), savedAt: Date.now() }, 'snapshot');
              tx.objectStore('kv').put(new Uint8Array(log), ['log', 1]);
              tx.oncomplete = () => {
                req.result.close();
                resolve();
              };
              tx.onerror = () => reject(tx.error);
            };
          });
          const { openStore } = await import('/index.js');
          const open = () => openStore({ url: `ws://${location.host}/v1/sync`, database, persist: database, sync: false });
          const read = async (store) => {
            const ids = [];
            for (let i = 0; i < 25; i++) ids.push(await store.get(`orders/${i}`).then(() => i, () => -1));
            return { ids: ids.filter((i) => i >= 0), pending: await store.pending() };
          };
          let store = await open();
          const first = await read(store);
          await store.close();
          const head = await new Promise((resolve, reject) => {
            const req = indexedDB.open(`hilodb:${database}`, 1);
            req.onerror = () => reject(req.error);
            req.onsuccess = () => {
              const get = req.result.transaction('kv').objectStore('kv').get('snapshot');
              get.onsuccess = () => {
                req.result.close();
                resolve(new TextDecoder().decode(get.result.bytes.subarray(0, 18)));
              };
            };
          });
          store = await open();
          const again = await read(store);
          await store.close();
          return { first, head, again };
        },
        { database, snapshot, log },
      );
      const ids = Array.from({ length: 25 }, (_, i) => i).filter((i) => i !== 1 && i !== 2);
      // Written: orders/0…24 and users/…1-T, orders/0 acknowledged.
      assert.deepEqual(got.first, { ids, pending: 25 });
      assert.equal(got.head, 'hilodb-snapshot 3 ');
      assert.deepEqual(got.again, got.first);
      assert.deepEqual(pageErrors, []);
    } finally {
      await context.close();
    }
  });

  test('the demo page stores a document and shows its id', async () => {
    const page = await newPage();
    try {
      await page.waitForSelector('#status[data-state="online"]');
      await page.fill('#collection', 'orders');
      await page.fill('#doc', '{"item":"pear","qty":2}');
      await page.click('#store');
      const idCell = page.locator('#result-id');
      await page.waitForFunction(() => /^orders\/\d+-A$/.test(document.getElementById('result-id').textContent));
      const id = await idCell.textContent();
      assert.match(id, hiloID);
      const rev = await page.locator('#result-rev').textContent();
      assert.ok(rev.length > 11, `shown _rev ${rev}`);
      const shown = JSON.parse(await page.locator('#result').textContent());
      assert.equal(shown._id, id);
      assert.equal(shown.item, 'pear');
      assert.equal(shown.qty, 2);

      // A second document goes on top of the list.
      await page.fill('#doc', '{"item":"plum"}');
      await page.click('#store');
      await page.waitForFunction((first) => document.getElementById('result-id').textContent !== first, id);
      const second = await idCell.textContent();
      assert.match(second, hiloID);
      assert.notEqual(second, id);
      // The list is read again from the change feed after the result is
      // shown: wait for it, then check it.
      await page.waitForFunction(() => document.querySelectorAll('#docs tbody tr').length === 2);
      assert.equal(await page.locator('#docs tbody tr').count(), 2);
      assert.equal(await page.locator('#docs tbody tr').first().getAttribute('data-id'), second);
      assert.equal(await page.locator('#count').textContent(), '2');

      // An illegal key shows the error and stores nothing.
      await page.fill('#doc', '{"_key":"a b"}');
      await page.click('#store');
      await page.waitForSelector('#error:not([hidden])');
      assert.match(await page.locator('#error').textContent(), /^illegal_key \(1221\)/);
      assert.equal(await page.locator('#docs tbody tr').count(), 2);

      // Clicking a row shows that document again.
      await page.locator(`#docs tbody tr[data-id="${id}"]`).click();
      await page.waitForFunction((want) => document.getElementById('result-id').textContent === want, id);

      const shot = join(tmpdir(), `hilodb-demo-${process.pid}.png`);
      await page.screenshot({ path: shot, fullPage: true });
      assert.ok((await stat(shot)).size > 1000, 'screenshot is empty');
      console.log(`# demo page screenshot: ${shot}`);
      assert.deepEqual(pageErrors, []);
    } finally {
      await page.close();
    }
  });
});
