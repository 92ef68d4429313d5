// A store whose server is frozen (SIGSTOP) while it reconnects: local
// calls answer from what the store knows, at once, not after the
// reconnect's request timeout.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { openStore } from '../node.js';
import { buildServer, startServer } from './server.mjs';

let bin;
let cleanupBin = async () => {};

before(async () => {
  ({ bin, cleanup: cleanupBin } = await buildServer());
});

after(async () => {
  await cleanupBin();
});

test('info(), get() and put() answer at once while a reconnect to a frozen server waits', { timeout: 60_000 }, async () => {
  const frozen = await startServer(bin);
  let store;
  try {
    store = await openStore({ url: frozen.wsURL, database: 'stalled', sync: true, requestTimeout: 4000, heartbeat: 300 });
    const states = [];
    store.on('status', (e) => states.push(e.state));
    const doc = await store.put('orders', { i: 0 });
    const before = await store.info();
    assert.equal(before.connected, true);
    process.kill(frozen.pid, 'SIGSTOP');
    try {
      const deadline = Date.now() + 5000;
      while (!states.includes('offline') && Date.now() < deadline) await new Promise((ok) => setTimeout(ok, 50));
      assert.ok(states.includes('offline'), 'no offline status');
      // A sync dials again: its hello waits for the frozen server.
      const syncing = store.sync().catch((err) => err);
      await new Promise((ok) => setTimeout(ok, 200));
      let slowest = 0;
      for (let i = 0; i < 8; i++) {
        const start = Date.now();
        const info = await store.info();
        await store.get(doc._id);
        await store.put('orders', { _key: `k${i}` });
        slowest = Math.max(slowest, Date.now() - start);
        assert.equal(info.connected, false);
        assert.equal(info.serverTag, before.serverTag);
        await new Promise((ok) => setTimeout(ok, 250));
      }
      assert.ok(slowest < 500, `a local call took ${slowest} ms while the reconnect waited`);
      const err = await syncing;
      assert.equal(err?.code, 'needs_server');
    } finally {
      process.kill(frozen.pid, 'SIGCONT');
    }
  } finally {
    await store?.close();
    await frozen.stop();
  }
});
