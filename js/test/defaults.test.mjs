// What a store does when the app leaves options out: a store opened with a
// server's URL pushes its writes, close() waits for them and says how many
// are left, and every failure is a HiloError. Against the real sync server.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { HiloError, openStore } from '../node.js';
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

describe('a first write offline', () => {
  const uuidv7 = '[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}';

  test('a store whose server is down from the start writes; once the server is up a second client reads it', async () => {
    const port = await freePort();
    const url = `ws://127.0.0.1:${port}/v1/sync`;
    const store = await openStore({ url, database: 'firstrun', requestTimeout: 1000 });
    let late;
    try {
      assert.equal((await store.info()).connected, false);
      const a = await store.put('todos', { title: 'a' }); // no HiLo range was ever leased
      const b = await store.put('todos', { _id: 'todos/', title: 'b' }); // no node tag from the server
      const [c, d] = await store.putMany('todos', [{ title: 'c' }, { title: 'd' }]);
      for (const doc of [a, b, c, d]) assert.match(doc._id, new RegExp(`^todos/${uuidv7}$`));
      assert.ok(a._id < b._id && b._id < c._id && c._id < d._id, 'ids made later sort later');
      const listed = (await store.list('todos')).docs.map((x) => x.title);
      assert.deepEqual(listed, ['a', 'b', 'c', 'd']);
      // An identity needs the server: the error names what works offline.
      const ident = await store.put('todos', { _id: 'todos|' }).catch((e) => e);
      assert.ok(ident instanceof HiloError && ident.code === 'needs_server', `got ${ident}`);
      assert.match(ident.message, /end the id in "\/" or leave it out/);

      late = await startServer(bin, [], { port });
      // The live sync dials again by itself and pushes them.
      const deadline = Date.now() + 20000;
      while ((await store.pending()) > 0 && Date.now() < deadline) await new Promise((ok) => setTimeout(ok, 100));
      assert.equal(await store.pending(), 0);
      // Now online, ids come from a leased range again.
      assert.match((await store.put('todos', { title: 'e' }))._id, /^todos\/\d+-A$/);
      assert.deepEqual(await store.close(), { pending: 0, lost: 0 });

      const other = await openStore({ url, database: 'firstrun' });
      try {
        await other.sync();
        assert.deepEqual((await other.list('todos')).docs.map((x) => x.title).sort(), ['a', 'b', 'c', 'd', 'e']);
        assert.equal((await other.get(a._id)).title, 'a');
      } finally {
        await other.close();
      }
    } finally {
      await store.close();
      await late?.stop();
    }
  });
});
