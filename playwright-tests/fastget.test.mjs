// get's fast path (a //go:wasmexport call, wasm/fastget.go) in Debian's
// Chromium, against the real sync server: the page's Go instance exports it,
// gets of documents never read take it, between writes, syncs, forced
// collections and documents large enough to grow the WebAssembly memory.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { serveWithChromium } from './harness.mjs';

const env = serveWithChromium();

test('in a page, gets of documents never read are answered by the fast path, never older than a resolved write', async () => {
  const page = await env.browser.newPage();
  const pageErrors = [];
  page.on('pageerror', (err) => pageErrors.push(err));
  try {
    await page.goto(`${env.server.base}/`);
    const out = await page.evaluate(async (database) => {
      const { openStore } = await import('/index.js');
      const store = await openStore({ url: `ws://${location.host}/v1/sync`, database, persist: false });
      const other = await openStore({ url: `ws://${location.host}/v1/sync`, database, persist: false });
      const fast = globalThis.__hilodb[Symbol.for('hilodb.fastReads')];
      if (!fast) return { error: 'no fast path in this page' };
      const get = fast.get.bind(fast);
      let hits = 0;
      fast.get = (n, id) => {
        const r = get(n, id);
        if (r !== undefined) hits++;
        return r;
      };
      const wrong = [];
      const pad = 'x'.repeat(300 << 10);
      try {
        for (let round = 0; round < 20; round++) {
          // putMany leaves the read cache alone: each get below reaches Go.
          const docs = Array.from({ length: 100 }, (_, i) => ({ _key: `k${i}`, round, i, ...(i % 50 === 0 ? { pad } : {}) }));
          await store.putMany('orders', docs);
          for (let i = 0; i < 100; i++) {
            const d = await store.get(`orders/k${i}`);
            if (d.round !== round || d.i !== i) wrong.push(`orders/k${i}: round ${d.round}, want ${round}`);
          }
          await other.putMany('remote', [{ _key: 'r', round }]);
          await other.sync();
          await store.sync();
          const r = await store.get('remote/r');
          if (r.round !== round) wrong.push(`remote/r: round ${r.round}, want ${round}`);
          if (round % 5 === 0) await globalThis.__hilodb.gc();
        }
      } finally {
        await store.close();
        await other.close();
        delete fast.get;
      }
      return { hits, wrong };
    }, `fast${Date.now()}`);
    assert.equal(out.error, undefined);
    assert.deepEqual(out.wrong, []);
    // 100 + 1 gets a round; the first get of a document larger than the
    // output buffer (and of each remote version's first read) may fall back.
    assert.ok(out.hits >= 1900, `only ${out.hits} of 2020 gets took the fast path`);
    assert.deepEqual(pageErrors, []);
  } finally {
    await page.close();
  }
});
