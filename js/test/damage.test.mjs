// A persisted store in Node whose files were damaged after they were
// written: a flipped byte in the log (not its last frame) or in the
// snapshot stops openStore with `damaged`, and nothing is changed; a log
// cut short opens without its last write only.

import assert from 'node:assert/strict';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { openStore } from '../node.js';

// Offline: nothing comes back from a server to hide what the files lost.
const url = 'ws://127.0.0.1:1/v1/sync';
const writes = 200;
let dir;
let open = [];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hilodb-damage-'));
});

after(async () => {
  for (const s of open) await s.close().catch(() => {});
  if (dir) await rm(dir, { recursive: true, force: true });
});

const suffixes = ['', '.log', '.node', '.ranges'];

// copyStore copies the files of the store at from to the path to.
async function copyStore(from, to) {
  for (const s of suffixes) {
    await copyFile(`${from}${s}`, `${to}${s}`).catch((err) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }
}

// countHeld says how many of orders/k0…k(writes-1) the store holds.
async function countHeld(store) {
  let n = 0;
  for (let i = 0; i < writes; i++) {
    try {
      await store.get(`orders/k${i}`);
      n++;
    } catch (err) {
      if (err.code !== 'not_found') throw err;
    }
  }
  return n;
}

// refusesDamaged opens the store at path and expects it refused with
// damaged, its message matching each of patterns. A store that opens is
// closed, and fails the test.
async function refusesDamaged(path, ...patterns) {
  let s;
  try {
    s = await openStore({ url, database: 'damage', persist: path });
  } catch (err) {
    assert.equal(err.code, 'damaged', err.message);
    assert.equal(err.num, 1913);
    for (const p of patterns) assert.match(err.message, p);
    return;
  }
  const held = await countHeld(s);
  await s.close();
  assert.fail(`opened, holding ${held} of ${writes} writes`);
}

// logged returns the path of a store, left open, whose log holds 200
// writes of one frame each.
let logged;
async function loggedStore() {
  if (logged) return logged;
  logged = join(dir, 'logged.hilodb');
  const s = await openStore({ url, database: 'damage', persist: logged });
  open.push(s);
  for (let i = 0; i < writes; i++) await s.put('orders', { _key: `k${i}`, i });
  await s.flush();
  return logged;
}

test('a byte flipped at 10% of the log stops the open with damaged, and leaves the log as it was', async () => {
  const path = join(dir, 'flipped.hilodb');
  await copyStore(await loggedStore(), path);
  const log = await readFile(`${path}.log`);
  log[Math.floor(log.length / 10)] ^= 0x20;
  await writeFile(`${path}.log`, log);
  await refusesDamaged(path, /damaged at byte \d+/, /docs\/operations\.md/);
  assert.deepEqual(await readFile(`${path}.log`), log, 'the failed open changed the log');
});

test('a log cut short opens without its last write only', async () => {
  const path = join(dir, 'cut.hilodb');
  await copyStore(await loggedStore(), path);
  const log = await readFile(`${path}.log`);
  await writeFile(`${path}.log`, log.subarray(0, log.length - 3));
  const s = await openStore({ url, database: 'damage', persist: path });
  open.push(s);
  assert.equal(await countHeld(s), writes - 1);
  await assert.rejects(s.get(`orders/k${writes - 1}`), { code: 'not_found' });
});

test('a byte flipped in the snapshot stops the open with damaged', async () => {
  const path = join(dir, 'snap.hilodb');
  const s = await openStore({ url, database: 'damage', persist: path });
  for (let i = 0; i < writes; i++) await s.put('orders', { _key: `k${i}`, i });
  await s.close(); // compacts the log into the snapshot
  const snap = await readFile(path);
  const body = snap.indexOf(10) + 1; // after the file's own header line
  assert.ok(body > 0 && snap.length - body > 1000, 'no snapshot written');
  for (const at of [body + 30, body + Math.floor((snap.length - body) / 2), snap.length - 5]) {
    const bad = Buffer.from(snap);
    bad[at] ^= 0x01;
    await writeFile(path, bad);
    await refusesDamaged(path, /checksum/);
  }
  await writeFile(path, snap);
  const again = await openStore({ url, database: 'damage', persist: path });
  open.push(again);
  assert.equal(await countHeld(again), writes);
});
