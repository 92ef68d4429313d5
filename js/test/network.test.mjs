// The truth about the network, in Node against the real sync server: a
// server that stops answering while its socket stays open (SIGSTOP) turns
// the status offline within 2 s with the default options, and the
// 'pending' event reports the count of unpushed writes as it changes.

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

// until resolves once check() is true, or fails after ms.
async function until(check, ms, what) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((ok) => setTimeout(ok, 20));
  }
}

test('a dead socket turns the status offline within 2 s, and pending events follow the writes', { timeout: 60_000 }, async () => {
  const server = await startServer(bin);
  let frozen = false;
  const store = await openStore({ url: server.wsURL, database: 'network' });
  try {
    const states = [];
    store.on('status', ({ state }) => states.push({ state, at: Date.now() }));
    const counts = [];
    store.on('pending', ({ pending }) => counts.push(pending));
    await until(() => counts.length > 0, 2000, 'first pending event');
    assert.equal(counts[0], 0);
    assert.equal((await store.info()).connected, true);

    // Nothing is read from the socket once the server is stopped.
    process.kill(server.pid, 'SIGSTOP');
    frozen = true;
    const stoppedAt = Date.now();
    await store.put('orders', { _key: 'while-down' });
    await until(() => states.some((s) => s.state === 'offline'), 5000, 'offline status');
    const took = states.find((s) => s.state === 'offline').at - stoppedAt;
    assert.ok(took <= 2000, `status turned offline ${took} ms after the server stopped, want at most 2000`);
    assert.equal((await store.info()).connected, false);
    await until(() => counts.includes(1), 2000, 'pending event of 1');

    process.kill(server.pid, 'SIGCONT');
    frozen = false;
    await until(() => states.at(-1)?.state === 'online', 10000, 'online again');
    await until(() => counts.at(-1) === 0, 10000, 'pending event back to 0');
    assert.deepEqual(counts, [0, 1, 0]);
  } finally {
    if (frozen) process.kill(server.pid, 'SIGCONT');
    await store.close();
    await server.stop();
  }
});
