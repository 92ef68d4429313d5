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

  // newPage opens the demo page and records errors thrown in it.
  async function newPage() {
    const page = await browser.newPage();
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
          const store = await openStore({ url: `ws://${location.host}/v1/sync`, database: 'e2e' });
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

  test('a store opens offline when the server cannot be reached', async () => {
    const page = await newPage();
    try {
      const port = await freePort(); // nothing listens here
      const got = await page.evaluate(async (port) => {
        const { openStore } = await import('/index.js');
        const store = await openStore({ url: `ws://127.0.0.1:${port}/v1/sync`, database: 'e2e' });
        try {
          const info = await store.info();
          const keyed = await store.put('orders', { _key: 'offline-1' });
          let hilo;
          try {
            hilo = { doc: await store.put('orders', {}) };
          } catch (err) {
            hilo = { code: err.code, num: err.num };
          }
          return { connected: info.connected, keyedID: keyed._id, hilo };
        } finally {
          await store.close();
        }
      }, port);
      assert.equal(got.connected, false);
      assert.equal(got.keyedID, 'orders/offline-1');
      assert.deepEqual(got.hilo, { code: 'needs_server', num: 1900 });
      assert.deepEqual(pageErrors, []);
    } finally {
      await page.close();
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
