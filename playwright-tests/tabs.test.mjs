// Tabs of one origin sharing one persisted store through the SharedWorker,
// in Debian's Chromium against the real sync server.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';

import { chromium } from 'playwright-core';

import { buildServer, repoRoot, startServer } from '../js/test/server.mjs';

const run = promisify(execFile);
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';

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

async function openPages(context, n, database) {
  const pages = [];
  for (let i = 0; i < n; i++) {
    const page = await context.newPage();
    page.on('pageerror', (err) => pageErrors.push(err));
    await page.goto(`${server.base}/`);
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

test('three pages write into one persisted store at once: ids distinct, every page sees every write', async () => {
  const database = `tabs${Date.now()}`;
  const context = await browser.newContext();
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
    await reader.goto(`${server.base}/`);
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
  const context = await browser.newContext();
  try {
    const [first, ...rest] = await openPages(context, 3, database);
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
    // The others keep writing and read every acknowledged write.
    const more = await rest[0].evaluate(async () => {
      const docs = [];
      for (let i = 0; i < 20; i++) docs.push(await window.store.put('orders', { after: i }));
      return docs.map((d) => d._id);
    });
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
