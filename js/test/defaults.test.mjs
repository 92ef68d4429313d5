// What a store does when the app leaves options out: a store opened with a
// server's URL pushes its writes, close() waits for them and says how many
// are left, and every failure is a HiloError. Against the real sync server.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { HiloError, openStore } from '../index.js';
import { buildServer, freePort, startServer } from './server.mjs';

let bin;
let cleanupBin = async () => {};
let server;

before(async () => {
  ({ bin, cleanup: cleanupBin } = await buildServer());
  server = await startServer(bin);
});

after(async () => {
  await server?.stop();
  await cleanupBin();
});

// readBack reads id through a second client, as another device would.
async function readBack(database, id) {
  const other = await openStore({ url: server.wsURL, database });
  try {
    await other.sync();
    return await other.get(id);
  } finally {
    await other.close();
  }
}

describe('defaults', () => {
  test("a default store's write reaches the server and a second client reads it", async () => {
    const store = await openStore({ url: server.wsURL, database: 'defaults1' });
    const doc = await store.put('orders', { item: 'apple' });
    // Closed at once: close waits for the push.
    assert.deepEqual(await store.close(), { pending: 0, lost: 0 });
    assert.equal((await readBack('defaults1', doc._id)).item, 'apple');
  });

  test('a write of a default store is pushed while it stays open', async () => {
    const store = await openStore({ url: server.wsURL, database: 'defaults2' });
    try {
      const doc = await store.put('orders', { item: 'pear' });
      const deadline = Date.now() + 5000;
      while ((await store.pending()) > 0 && Date.now() < deadline) await new Promise((ok) => setTimeout(ok, 20));
      assert.equal(await store.pending(), 0);
      assert.equal((await readBack('defaults2', doc._id)).item, 'pear');
    } finally {
      await store.close();
    }
  });

  test('a local-only store (sync: false) keeps its writes until sync(), and close says they are lost', async () => {
    const store = await openStore({ url: server.wsURL, database: 'defaults3', sync: false });
    const doc = await store.put('orders', { item: 'plum' });
    assert.equal(await store.pending(), 1);
    await assert.rejects(readBack('defaults3', doc._id), (err) => err instanceof HiloError && err.code === 'not_found');
    assert.deepEqual(await store.close(), { pending: 1, lost: 1 });
  });

  test('close with the server gone answers within its bound and counts the writes left', async () => {
    const port = await freePort(); // nothing listens there
    const store = await openStore({ url: `ws://127.0.0.1:${port}/v1/sync`, database: 'defaults4', requestTimeout: 500 });
    await store.put('orders', { _key: 'k1', item: 'fig' });
    const began = Date.now();
    assert.deepEqual(await store.close({ timeout: 1000 }), { pending: 1, lost: 1 });
    assert.ok(Date.now() - began < 4000, `close took ${Date.now() - began} ms`);
  });

  test('close refuses unknown options', async () => {
    const store = await openStore({ url: server.wsURL, database: 'defaults5' });
    await assert.rejects(store.close({ wait: 1 }), (err) => err instanceof HiloError && err.code === 'bad_request');
    assert.deepEqual(await store.close(), { pending: 0, lost: 0 });
  });
});

describe('HiloError', () => {
  test('is the class of errors from Go, from the package and of putMany entries', async () => {
    const store = await openStore({ url: server.wsURL, database: 'errors1' });
    try {
      const fromGo = await store.get('orders/none').catch((e) => e);
      assert.ok(fromGo instanceof HiloError, `got ${fromGo}`);
      assert.ok(fromGo instanceof Error);
      assert.equal(fromGo.name, 'HiloError');
      assert.equal(fromGo.code, 'not_found');
      assert.equal(fromGo.num, 1202);

      const fromJS = await store.put('orders', { item: 1 }, { nope: true }).catch((e) => e);
      assert.ok(fromJS instanceof HiloError, `got ${fromJS}`);
      assert.equal(fromJS.code, 'bad_request');

      const [entry] = await store.putMany('orders', [{ _key: 'a b/c' }]);
      assert.ok(entry instanceof HiloError, `got ${JSON.stringify(entry)}`);
      assert.equal(entry.code, 'illegal_key');
    } finally {
      await store.close();
    }
    const opening = await openStore({ url: server.wsURL, database: 'errors1', sync: 'yes' }).catch((e) => e);
    assert.ok(opening instanceof HiloError);
    assert.equal(String(new HiloError('m', 'conflict', 1200)), 'HiloError: m');
  });
});
