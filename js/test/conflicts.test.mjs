// store.conflicts() without an id: the documents with unresolved
// conflicts, kept across a reopen of a persisted store. Against the real
// sync server.

import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { openStore } from '../index.js';
import { buildServer, startServer } from './server.mjs';

let bin;
let cleanupBin = async () => {};
let server;
let dir;

before(async () => {
  ({ bin, cleanup: cleanupBin } = await buildServer());
  server = await startServer(bin);
  dir = await mkdtemp(join(tmpdir(), 'hilodb-conflicts-'));
});

after(async () => {
  await server?.stop();
  await cleanupBin();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('conflicts() lists the ids with unresolved conflicts, across a reopen, until cleared', async () => {
  const database = 'conflicts';
  const path = join(dir, 'a');
  let a = await openStore({ url: server.wsURL, database, persist: path, sync: false });
  const b = await openStore({ url: server.wsURL, database, sync: false });
  try {
    const first = await a.put('notes', { _key: 'n1', text: 'first' });
    await a.put('notes', { _key: 'n2', text: 'calm' });
    await a.sync();
    await b.sync();
    // Both edit notes/n1; b reaches the server first and wins.
    await b.put('notes', { ...(await b.get(first._id)), text: 'from b' });
    await b.sync();
    await a.put('notes', { ...first, text: 'from a' });
    assert.deepEqual(await a.conflicts(), []);
    await a.sync();
    assert.deepEqual(await a.conflicts(), ['notes/n1']);
    assert.equal((await a.get('notes/n1')).text, 'from b');
    assert.equal((await a.close()).lost, 0);

    a = await openStore({ url: server.wsURL, database, persist: path, sync: false });
    assert.deepEqual(await a.conflicts(), ['notes/n1'], 'the conflict is kept across a reopen');
    assert.deepEqual((await a.conflicts('notes/n1')).map((v) => v.doc?.text), ['from a']);
    await a.clearConflicts('notes/n1');
    assert.deepEqual(await a.conflicts(), []);
  } finally {
    await a.close();
    await b.close();
  }
});
