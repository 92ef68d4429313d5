// Debian's Chromium, on an on-disk profile, is SIGKILLed (with every
// process of it) while a page writes into a persisted store, by single puts
// and bulk writes; restarted on the same profile, the store holds every
// write whose put had resolved, and ids go on without one handed out
// twice.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';

import { buildServer, repoRoot, startServer } from '../js/test/server.mjs';
import { logBackend, startChromium } from './harness.mjs';

const run = promisify(execFile);

let cleanupBin = async () => {};
let webRoot;
let profile;
let server;

before(async () => {
  const built = await buildServer();
  cleanupBin = built.cleanup;
  webRoot = await mkdtemp(join(tmpdir(), 'hilodb-web-'));
  profile = await mkdtemp(join(tmpdir(), 'hilodb-profile-'));
  await run('bash', [join(repoRoot, 'js', 'build-web.sh'), webRoot], { maxBuffer: 16 << 20 });
  server = await startServer(built.bin, ['-static', webRoot]);
});

after(async () => {
  try {
    await server?.stop();
  } finally {
    await cleanupBin();
    for (const d of [webRoot, profile]) if (d) await rm(d, { recursive: true, force: true });
  }
});

// Both places a store's log can be: OPFS (a store made where a tab can
// start its writer worker, the default) and IndexedDB (a store made where
// none can: here, pages whose Worker constructor is taken away).
for (const backend of ['opfs', 'indexeddb']) test(`Chromium SIGKILLed mid-write keeps every acknowledged write (log in ${backend})`, async () => {
  const database = `crash${backend}${Date.now()}`;
  const seen = new Map(); // id → rev of an acknowledged write
  let node; // the store's node tag, kept in the profile across restarts
  // Killed once this many writes were acknowledged, so the kill lands
  // mid-write however busy the machine is.
  for (const target of [100, 37]) {
    const { browser, kill } = await startChromium(profile);
    const acked = [];
    let opened;
    try {
      const context = browser.contexts()[0];
      const page = await context.newPage();
      let enough;
      const reached = new Promise((ok) => (enough = ok));
      await page.exposeFunction('ack', (a) => {
        acked.push(a);
        if (acked.length === target) enough();
      });
      if (backend === 'indexeddb') await page.addInitScript(() => delete window.Worker);
      await page.goto(`${server.base}/`);
      opened = await page.evaluate(async (database) => {
        const { openStore } = await import('/index.js');
        const store = await openStore({ url: `ws://${location.host}/v1/sync`, database, persist: database });
        // The first write leases a range, so the store has met the server and
        // holds its node tag from then on.
        const first = await store.put('orders', { first: true });
        window.ack({ id: first._id, rev: first._rev });
        const { node } = await store.info();
        const writer = async (w) => {
          for (let i = 0; ; i++) {
            const d = await store.put('orders', { w, i, pad: 'x'.repeat(200) });
            window.ack({ id: d._id, rev: d._rev });
          }
        };
        // Bulk writes too, whose ids run past the ranges at hand: the
        // range after the current one is journaled before it is spent.
        const bulkWriter = async (w) => {
          for (let k = 0; ; k++) {
            const docs = Array.from({ length: 1 + ((k * 97) % 300) }, (_, i) => ({ w, k, i, pad: 'x'.repeat(200) }));
            for (const d of await store.putMany('orders', docs)) window.ack({ id: d._id, rev: d._rev });
          }
        };
        writer(0);
        writer(1);
        bulkWriter(2);
        return node;
      }, database);
      assert.equal(await logBackend(page, database), backend);
      await reached;
    } finally {
      await kill(); // mid-write, or after a failed check (a live browser would hold the test open)
    }
    if (node !== undefined) assert.equal(opened, node, 'the store reopened with another node tag: its profile lost what it held');
    node = opened;
    assert.ok(acked.length >= target, `only ${acked.length} writes acknowledged before the kill`);
    for (const a of acked) {
      assert.ok(!seen.has(a.id), `id ${a.id} handed out twice`);
      seen.set(a.id, a.rev);
    }

    const again = await startChromium(profile);
    try {
      const p = await again.browser.contexts()[0].newPage();
      if (backend === 'indexeddb') await p.addInitScript(() => delete window.Worker);
      await p.goto(`${server.base}/`);
      const found = await p.evaluate(
        async ({ database, ids }) => {
          const { openStore } = await import('/index.js');
          // Read, then killed with the store open, as the rounds are:
          // closing it would compact the log and close IndexedDB, and a
          // Chromium killed in the seconds after that was seen, twice in
          // some forty runs, to come back with the profile's whole
          // IndexedDB database gone (a new node tag, every document
          // missing, those written after it present).
          const store = await openStore({ url: `ws://${location.host}/v1/sync`, database, persist: database });
          return Promise.all(ids.map((id) => store.get(id).then((d) => d._rev, (e) => `missing: ${e.code}`)));
        },
        { database, ids: [...seen.keys()] },
      );
      const lost = [...seen].map(([id, rev], i) => ({ id, acked: rev, found: found[i] })).filter((l) => l.found !== l.acked);
      assert.deepEqual(lost, [], `${lost.length} of ${seen.size} acknowledged writes lost (first: ${JSON.stringify(lost.slice(0, 3))})`);
    } finally {
      await again.kill();
    }
  }
});
