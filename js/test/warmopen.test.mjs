// A persisted store this device opened before opens from its own files:
// a server that hangs (SIGSTOP) or refuses the token does not hold up
// openStore, which resolves once the documents are loaded; the store
// connects in the background, and a refusal comes as an 'error' event.

import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { SignJWT } from 'jose';

import { openStore } from '../node.js';
import { buildServer, startServer } from './server.mjs';

const secret = new TextEncoder().encode('a secret of at least thirty-two bytes, for tests');
let bin;
let dir;
let cleanupBin = async () => {};

before(async () => {
  ({ bin, cleanup: cleanupBin } = await buildServer());
  dir = await mkdtemp(join(tmpdir(), 'hilodb-warmopen-'));
  await writeFile(join(dir, 'hs256'), secret);
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
  await cleanupBin();
});

function sign(sub, seconds) {
  return new SignJWT({ hilodb: { db: { 'user-{sub}': 'write' } } })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setExpirationTime(Math.floor(Date.now() / 1000) + seconds)
    .sign(secret);
}

const until = async (what, ok, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
};

test('a store opened before opens at once while its server hangs, and syncs once the server is back', { timeout: 60_000 }, async () => {
  const server = await startServer(bin);
  const persist = join(dir, 'hangs');
  try {
    let s = await openStore({ url: server.wsURL, database: 'warm', persist });
    const kept = await s.put('orders', { n: 1 });
    await s.close();

    process.kill(server.pid, 'SIGSTOP');
    let stopped = true;
    s = undefined;
    try {
      const t0 = Date.now();
      s = await openStore({ url: server.wsURL, database: 'warm', persist });
      const took = Date.now() - t0;
      // The first dial's bound is 10 s: a store that waited for it took that.
      assert.ok(took < 3000, `openStore took ${took} ms while the server hung`);
      assert.equal((await s.info()).connecting, true);
      assert.deepEqual((await s.get(kept._id)).n, 1);
      const offline = await s.put('orders', { _key: 'made-offline', n: 2 });
      process.kill(server.pid, 'SIGCONT');
      stopped = false;
      // Connected in the background: the write made meanwhile reaches the
      // server, and a HiLo id is leased.
      await until('the offline write pushed', async () => (await s.pending()) === 0);
      const other = await openStore({ url: server.wsURL, database: 'warm', persist: false });
      try {
        await other.sync();
        assert.equal((await other.get(offline._id)).n, 2);
      } finally {
        await other.close();
      }
      const next = await s.put('orders', { n: 3 });
      assert.match(next._id, /^orders\/\d+-/);
      const info = await s.info();
      assert.equal(info.connected, true);
      assert.equal(info.connecting, false);
    } finally {
      if (stopped) process.kill(server.pid, 'SIGCONT');
      await s?.close();
    }
  } finally {
    await server.stop();
  }
});

test('a store opened before whose server is gone opens, and its status turns offline', { timeout: 60_000 }, async () => {
  const server = await startServer(bin);
  const persist = join(dir, 'gone');
  let s = await openStore({ url: server.wsURL, database: 'gone', persist });
  const kept = await s.put('orders', { n: 1 });
  await s.close();
  await server.stop();
  s = await openStore({ url: server.wsURL, database: 'gone', persist });
  try {
    const states = [];
    s.on('status', (e) => states.push(e.state));
    assert.equal((await s.get(kept._id)).n, 1);
    await until('an offline status', () => states.includes('offline'));
    const info = await s.info();
    assert.equal(info.connected, false);
    assert.equal(info.connecting, false);
    assert.deepEqual(await s.close(), { pending: 0, lost: 0 });
  } finally {
    await s.close();
  }
});

// close() right after such an open waits for the connection on its way, then
// for the push: nothing written offline is left behind by a quick close.
test('close() right after a warm open waits for the connection on its way and pushes', { timeout: 60_000 }, async () => {
  const server = await startServer(bin);
  const persist = join(dir, 'quick-close');
  try {
    let s = await openStore({ url: server.wsURL, database: 'quick', persist });
    await s.put('orders', { n: 1 });
    await s.close();
    // Offline: a write kept in the file.
    s = await openStore({ url: 'ws://127.0.0.1:9/v1/sync', database: 'quick', persist, requestTimeout: 1000 });
    const offline = await s.put('orders', { n: 2 });
    assert.deepEqual(await s.close(), { pending: 1, lost: 0 });
    s = await openStore({ url: server.wsURL, database: 'quick', persist });
    assert.deepEqual(await s.close(), { pending: 0, lost: 0 });
    const other = await openStore({ url: server.wsURL, database: 'quick', persist: false });
    try {
      await other.sync();
      assert.equal((await other.get(offline._id)).n, 2);
    } finally {
      await other.close();
    }
  } finally {
    await server.stop();
  }
});

test('a store opened before opens with a refused token, and says so in an error event', { timeout: 60_000 }, async () => {
  const server = await startServer(bin, ['-jwt-hs256-file', join(dir, 'hs256'), '-rate', '-1']);
  const persist = join(dir, 'refused');
  try {
    let s = await openStore({ url: server.wsURL, database: 'user-alice', token: await sign('alice', 60), persist });
    const kept = await s.put('orders', { n: 1 });
    await s.close();

    // Bob's token does not reach alice's database: a new store is refused
    // by openStore itself.
    const bob = await sign('bob', 60);
    await assert.rejects(openStore({ url: server.wsURL, database: 'user-alice', token: bob, persist: join(dir, 'new') }), (err) => err.code === 'unauthorized');
    // The store opened before opens with what it holds, and hears why
    // it cannot sync.
    s = await openStore({ url: server.wsURL, database: 'user-alice', token: bob, persist });
    try {
      const errors = [];
      s.on('error', (e) => errors.push(e));
      assert.equal((await s.get(kept._id)).n, 1);
      await until('an unauthorized error event', () => errors.some((e) => e.code === 'unauthorized'));
      await assert.rejects(s.sync(), (err) => err.code === 'unauthorized');
    } finally {
      await s.close();
    }
  } finally {
    await server.stop();
  }
});
