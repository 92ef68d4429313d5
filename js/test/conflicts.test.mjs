// store.conflicts() without an id: the documents with unresolved
// conflicts, kept across a reopen of a persisted store. Against the real
// sync server.

import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { openStore } from '../node.js';
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

test('both sides hear of a conflict: the store whose write won gets a conflict event with won: true', async () => {
  const database = 'conflicts-won';
  // The winner follows the live feed; the loser syncs when asked.
  const win = await openStore({ url: server.wsURL, database });
  const lose = await openStore({ url: server.wsURL, database, sync: false });
  try {
    const heard = [];
    const wonEvent = new Promise((resolve) => {
      win.on('conflict', (e) => {
        heard.push(e);
        if (e.won) resolve(e);
      });
    });
    const loserEvents = [];
    lose.on('conflict', (e) => loserEvents.push(e));
    const first = await win.put('notes', { _key: 'n1', text: 'first' });
    await win.sync();
    await lose.sync();
    // Both edit notes/n1; the winner's edit reaches the server first.
    await win.put('notes', { ...first, text: 'from winner' });
    await win.sync();
    await lose.put('notes', { ...(await lose.get('notes/n1')), text: 'from loser' });
    await lose.sync();

    assert.deepEqual(await lose.conflicts(), ['notes/n1']);
    const [lost] = await lose.conflicts('notes/n1');
    assert.equal(lost.doc.text, 'from loser');
    assert.equal(lost.won, undefined, "the loser's kept version is its own write");
    assert.equal(loserEvents.length, 1);
    assert.equal(loserEvents[0].won, false);
    assert.equal(loserEvents[0].kept, 'remote');

    const e = await Promise.race([wonEvent, new Promise((_, reject) => setTimeout(() => reject(new Error(`no won conflict event; heard ${JSON.stringify(heard)}`)), 10000))]);
    assert.equal(e.id, 'notes/n1');
    assert.equal(e.kept, 'local');
    assert.equal(e.local.doc.text, 'from winner');
    assert.equal(e.remote.rev, lost.rev);
    assert.equal(e.remote.doc.text, 'from loser');
    assert.deepEqual(await win.conflicts(), ['notes/n1']);
    const kept = await win.conflicts('notes/n1');
    assert.deepEqual(kept.map((v) => [v.rev, v.doc?.text, v.won]), [[lost.rev, 'from loser', true]]);
    assert.equal((await win.get('notes/n1')).text, 'from winner');

    await win.clearConflicts('notes/n1');
    await win.sync();
    assert.deepEqual(await win.conflicts(), []);
    assert.equal(heard.length, 1, 'one event, however often the change comes');
  } finally {
    await win.close();
    await lose.close();
  }
});
