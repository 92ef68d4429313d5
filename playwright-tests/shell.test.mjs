// The app shell: the demo page registers hilodb's service worker
// (registerShell, sw.js), and a reload with the server gone starts the
// page from it, offline, with the documents of its persisted store. The
// server serves the WebAssembly compressed at build, by Accept-Encoding.

import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';

import { serveWithChromium } from './harness.mjs';
import { buildServer, startServer } from '../js/test/server.mjs';

const env = serveWithChromium();

// named lists the files a module of the web root names beside itself
// (new URL('./x', import.meta.url)) and the files it imports (by path).
function named(text) {
  const refs = [...text.matchAll(/new URL\((['"])\.\/([^'"]+)\1, import\.meta\.url\)/g)].map((m) => m[2]);
  const imports = [...text.matchAll(/(?:^|[;\s])(?:import|export)\s*(?:[\w*{}\s,$]+from\s*)?(['"])(\.{0,2}\/[^'"]+)\1|import\((['"])(\.{0,2}\/[^'"]+)\3\)/g)].map((m) => m[2] ?? m[4]);
  return { refs: [...new Set(refs)].sort(), imports };
}

test('the web root: one module for the page and one for its workers, all but the entry under hashed names served immutable', async () => {
  const get = async (path) => {
    const res = await fetch(`${env.server.base}/${path}`);
    assert.equal(res.status, 200, path);
    return { text: await res.text(), cache: res.headers.get('cache-control') };
  };
  const entry = await get('index.js');
  assert.equal(entry.cache, 'no-cache', 'the entry keeps its name, apps import it');
  const page = named(entry.text);
  assert.deepEqual(page.imports, [], 'the page loads one module');
  const workers = page.refs.filter((f) => f.endsWith('.js'));
  const wasm = page.refs.filter((f) => f.endsWith('.wasm'));
  assert.equal(workers.length, 2, `the store's worker and the writer: ${page.refs}`);
  assert.equal(wasm.length, 1, `the WebAssembly: ${page.refs}`);
  for (const f of page.refs) {
    assert.match(f, /-[0-9a-f]{12}\.(js|wasm)$/, f);
    const { text, cache } = await get(f);
    assert.equal(cache, 'public, max-age=31536000, immutable', f);
    if (f.endsWith('.js')) {
      const w = named(text);
      assert.deepEqual(w.imports, [], `${f} loads no other module`);
      for (const r of w.refs) assert.ok(page.refs.includes(r), `${f} names ${r}, which the page does not`);
    }
  }
});

test('the server serves the wasm brotli- or gzip-compressed, as asked', async () => {
  const wasm = (await readdir(join(env.webRoot, 'dist'))).find((f) => /^hilodb-[0-9a-f]+\.wasm$/.test(f));
  for (const [accept, want] of [['br, gzip', 'br'], ['gzip', 'gzip'], ['identity', null]]) {
    const res = await fetch(`${env.server.base}/dist/${wasm}`, { headers: { 'Accept-Encoding': accept } });
    await res.arrayBuffer();
    assert.equal(res.headers.get('content-encoding'), want, `Accept-Encoding: ${accept}`);
    assert.equal(res.headers.get('content-type'), 'application/wasm');
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
    // The page, demo.css, demo.js, index.js, shell.js, the workers' two
    // modules and the WebAssembly.
    assert.ok(shell.kept >= 8, `kept ${shell.kept} files`);
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
