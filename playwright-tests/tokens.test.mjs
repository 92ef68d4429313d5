// A persisted store shared by the tabs of an origin runs in the host
// worker (js/host.js), which cannot be given a page's token function: it
// asks the page for a token by message whenever it needs one (js/token.js,
// js/tabs.js). Here, in Debian's Chromium against the real sync server
// started with -jwt-hs256-file, a page's store writes for 9 s with tokens
// that live 3 s: the host keeps asking the page, and every write reaches
// the server.

import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';

import { serveWithChromium } from './harness.mjs';

const secret = 'a secret of at least thirty-two bytes, for the browser tests';
const secretDir = mkdtempSync(join(tmpdir(), 'hilodb-jwt-'));
const secretFile = join(secretDir, 'hs256');
writeFileSync(secretFile, secret);
after(() => rmSync(secretDir, { recursive: true, force: true }));

const env = serveWithChromium({ serverArgs: ['-jwt-hs256-file', secretFile, '-rate', '-1'] });

// sign issues an HS256 token for sub, writer of user-{sub}, living seconds.
function sign(sub, seconds, db = { 'user-{sub}': 'write' }) {
  const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const data = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ sub, exp: Math.floor(Date.now() / 1000) + seconds, hilodb: { db } })}`;
  return `${data}.${createHmac('sha256', secret).update(data).digest('base64url')}`;
}

test("a shared store's host asks the page for fresh tokens: writes across expiries reach the server", async (t) => {
  const context = await env.browser.newContext();
  const errors = [];
  try {
    const page = await context.newPage();
    page.on('pageerror', (err) => errors.push(err));
    // A page of the server's origin without the demo app (whose own store
    // has no token).
    await page.route(`${env.server.base}/blank.html`, (route) => route.fulfill({ contentType: 'text/html', body: '<!doctype html><title>tokens</title>' }));
    await page.goto(`${env.server.base}/blank.html`);
    // The page's token function, as an app's fetch('/api/hilodb-token').
    const issued = [];
    await page.exposeFunction('issueToken', () => {
      issued.push(Date.now());
      return sign('alice', 3);
    });
    const info = await page.evaluate(async () => {
      const { openStore } = await import('/index.js');
      window.statuses = [];
      window.store = await openStore({
        url: `ws://${location.host}/v1/sync`,
        database: 'user-alice',
        persist: 'alice',
        sync: true,
        token: () => window.issueToken(),
      });
      window.store.on('status', (s) => window.statuses.push(s.state));
      return window.store.info();
    });
    assert.equal(info.shared, true, 'the store runs in the host worker');

    // Writes for 9 s, past at least two expiries of 3 s tokens.
    const written = await page.evaluate(async () => {
      const out = [];
      const end = Date.now() + 9000;
      for (let n = 0; Date.now() < end; n++) {
        const docs = await Promise.all([0, 1, 2, 3].map((k) => window.store.put('notes', { n, k })));
        for (const d of docs) out.push({ id: d._id, rev: d._rev });
        await new Promise((ok) => setTimeout(ok, 100));
      }
      await window.store.sync();
      return out;
    });
    t.diagnostic(`${written.length} writes; the page was asked for ${issued.length} tokens`);
    assert.ok(written.length >= 100, `only ${written.length} writes`);
    assert.equal(new Set(written.map((d) => d.id)).size, written.length, 'an id was given twice');
    assert.equal(await page.evaluate(() => window.store.pending()), 0, 'writes are left pending');
    assert.ok(issued.length >= 3, `the page was asked for ${issued.length} tokens; want a fresh one every ~1.5 to 3 s`);
    assert.ok(issued.at(-1) - issued[0] >= 4000, `tokens asked for only within ${issued.at(-1) - issued[0]} ms`);

    // The server has every write, with its _rev: read back over its
    // ArangoDB door with a token of another client.
    const res = await fetch(`${env.server.base}/_db/user-alice/_api/cursor`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sign('reader', 60, { 'user-alice': 'read' })}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'FOR d IN notes RETURN [d._id, d._rev]', batchSize: 10000 }),
    });
    assert.equal(res.status, 201, await res.clone().text());
    const onServer = new Map((await res.json()).result);
    assert.equal(onServer.size, written.length);
    for (const d of written) assert.equal(onServer.get(d.id), d.rev, `${d.id} is not on the server as written`);
    assert.deepEqual(errors, []);
    await page.evaluate(() => window.store.close());
  } finally {
    await context.close();
  }
});
