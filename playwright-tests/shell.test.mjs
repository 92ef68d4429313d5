// The app shell: the demo page registers hilodb's service worker
// (registerShell, sw.js), and a reload with the server gone starts the
// page from it, offline, with the documents of its persisted store. The
// server serves the WebAssembly compressed at build, by Accept-Encoding.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { serveWithChromium } from './harness.mjs';
import { buildServer, startServer } from '../js/test/server.mjs';

const env = serveWithChromium();

test('the server serves the wasm brotli- or gzip-compressed, as asked', async () => {
  for (const [accept, want] of [['br, gzip', 'br'], ['gzip', 'gzip'], ['identity', null]]) {
    const res = await fetch(`${env.server.base}/dist/hilodb.wasm`, { headers: { 'Accept-Encoding': accept } });
    await res.arrayBuffer();
    assert.equal(res.headers.get('content-encoding'), want, `Accept-Encoding: ${accept}`);
    assert.equal(res.headers.get('content-type'), 'application/wasm');
    assert.equal(res.headers.get('cache-control'), 'no-cache');
  }
});

test('a page reloads from its service worker with the server gone, and opens its store offline', async () => {
  // A server of this test's own, to stop.
  const { bin } = await buildServer();
  const server = await startServer(bin, ['-static', env.webRoot]);
  const context = await env.browser.newContext();
  const errors = [];
  try {
    const page = await context.newPage();
    page.on('pageerror', (err) => errors.push(String(err)));
    await page.goto(`${server.base}/`);
    await page.waitForSelector('#status[data-state="online"]');
    const shell = await page.evaluate(() => window.shell);
    assert.equal(shell.error, undefined, JSON.stringify(shell));
    assert.ok(shell.kept >= 10, `kept ${shell.kept} files`);
    await page.fill('#doc', '{"_key":"shell","item":"kept offline"}');
    await page.click('#store');
    await page.waitForSelector('#docs tbody tr[data-id="orders/shell"]');
    await page.waitForSelector('#pending[data-count="0"]');

    await server.stop();
    await page.reload();
    // The page and its 7 MB module start from the service worker's cache: on a
    // loaded machine that alone can take longer than 15 s.
    await page.waitForSelector('#status[data-state="offline"]', { timeout: 45000 });
    await page.waitForSelector('#docs tbody tr[data-id="orders/shell"]');
    assert.match(await page.textContent('#docs tbody tr[data-id="orders/shell"]'), /kept offline/);
    assert.equal(await page.isHidden('#error'), true, await page.textContent('#error'));
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
    await server.stop();
  }
});
