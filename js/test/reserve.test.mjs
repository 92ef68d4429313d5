// The reserve option: whole HiLo ranges leased ahead, so a store goes on
// making ids offline after its current range is spent.

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

async function rangesLeased(server) {
  const text = await (await fetch(`${server.base}/metrics`)).text();
  const m = /^hilodb_ranges_leased_total (\d+)$/m.exec(text);
  assert.ok(m, 'no hilodb_ranges_leased_total in /metrics');
  return Number(m[1]);
}

async function waitFor(check, ms, what) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((ok) => setTimeout(ok, 25));
  }
  assert.fail(`timed out waiting for ${what}`);
}

// putOffline stores n documents and returns the ids, or the error of the
// first put that failed.
async function putOffline(store, n) {
  const ids = [];
  for (let i = 0; i < n; i++) {
    try {
      ids.push((await store.put('orders', { i }))._id);
    } catch (err) {
      return { ids, err };
    }
  }
  return { ids };
}

test('with reserve: 2, ids go on offline past the current range', async () => {
  const server = await startServer(bin);
  const store = await openStore({ url: server.wsURL, database: 'res', reserve: 2 });
  try {
    await store.put('orders', { first: true });
    await waitFor(async () => (await rangesLeased(server)) >= 3, 5000, 'the reserve to be leased');
    await server.stop();
    const { ids, err } = await putOffline(store, 150);
    assert.equal(err, undefined, `offline put failed after ${ids.length} ids: ${err?.message}`);
    assert.equal(new Set(ids).size, 150, 'duplicate ids');
    for (const id of ids) assert.match(id, /^orders\/\d+-A$/);
  } finally {
    await store.close().catch(() => {});
    await server.stop();
  }
});

test('without a reserve, offline ids end with the current range', async () => {
  const server = await startServer(bin);
  const store = await openStore({ url: server.wsURL, database: 'nores' });
  try {
    await store.put('orders', { first: true });
    await server.stop();
    const { ids, err } = await putOffline(store, 150);
    assert.equal(ids.length, 31, 'the rest of the first range of 32');
    assert.ok(['needs_server', 'unavailable'].includes(err?.code), `got ${err?.code}: ${err?.message}`);
  } finally {
    await store.close().catch(() => {});
    await server.stop();
  }
});

test('reserve must be a whole number from 0 to 16', async () => {
  for (const reserve of [-1, 1.5, 17, 'two']) {
    await assert.rejects(openStore({ url: 'ws://127.0.0.1:9/v1/sync', database: 'x', reserve }), (err) => {
      assert.equal(err.code, 'bad_request');
      return true;
    });
  }
});
