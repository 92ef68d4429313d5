// Failover of the npm package: a store given several servers (urls) moves to
// the next when the one in use cannot be reached or goes away.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { openStore } from '../node.js';
import { buildServer, freePort, startServer } from './server.mjs';

let bin;
let cleanupBin = async () => {};

before(async () => {
  ({ bin, cleanup: cleanupBin } = await buildServer());
});

after(async () => {
  await cleanupBin();
});

test('a store whose first server is unreachable works through the next', async () => {
  const live = await startServer(bin, ['-node-tag', 'B']);
  const dead = `ws://127.0.0.1:${await freePort()}/v1/sync`;
  const store = await openStore({ url: dead, urls: [live.wsURL], database: 'failover', requestTimeout: 1000 });
  try {
    const doc = await store.put('orders', { total: 1 });
    assert.match(doc._id, /^orders\/1-/);
    const info = await store.info();
    assert.equal(info.serverTag, 'B');
    assert.equal(info.connected, true);
  } finally {
    await store.close();
    await live.stop();
  }
});

test('a store moves on when its server goes away', async () => {
  const first = await startServer(bin, ['-node-tag', 'S']);
  const second = await startServer(bin, ['-node-tag', 'T']);
  const store = await openStore({ url: first.wsURL, urls: [second.wsURL], database: 'failover', requestTimeout: 1000 });
  try {
    await store.nextIdentityFor('companies');
    assert.equal((await store.info()).serverTag, 'S');
    await first.stop();
    let value;
    for (let i = 0; i < 5 && value === undefined; i++) {
      try {
        value = await store.nextIdentityFor('companies');
      } catch (err) {
        if (err.code !== 'needs_server' && err.code !== 'unavailable') throw err;
      }
    }
    assert.notEqual(value, undefined, 'no identity after the first server went');
    assert.equal((await store.info()).serverTag, 'T');
  } finally {
    await store.close();
    await first.stop();
    await second.stop();
  }
});

test('urls must be an array of strings', async () => {
  await assert.rejects(
    openStore({ url: 'ws://127.0.0.1:1/v1/sync', urls: 'ws://127.0.0.1:2/v1/sync', database: 'x' }),
    (err) => err.code === 'bad_request' && /urls must be an array of strings/.test(err.message),
  );
});
