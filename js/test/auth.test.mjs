// Signed tokens through the npm package against the real sync server:
// tokens that expire are refreshed on the live connection while writes go
// on; each user reaches only their own database; a shared database is
// read-only for users, every push refused with nothing stored.

import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { SignJWT } from 'jose';

import { openStore } from '../node.js';
import { buildServer, startServer } from './server.mjs';

const secret = new TextEncoder().encode('a secret of at least thirty-two bytes, for tests');
const users = { 'user-{sub}': 'write', shared: 'read' };
let server;
let dir;
let cleanupBin = async () => {};

before(async () => {
  const built = await buildServer();
  cleanupBin = built.cleanup;
  dir = await mkdtemp(join(tmpdir(), 'hilodb-auth-'));
  await writeFile(join(dir, 'hs256'), secret);
  server = await startServer(built.bin, ['-jwt-hs256-file', join(dir, 'hs256'), '-rate', '-1']);
});

after(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
  await cleanupBin();
});

// sign issues a token for sub with the roles dbs, living seconds.
function sign(sub, dbs, seconds) {
  return new SignJWT({ hilodb: { db: dbs } })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setExpirationTime(Math.floor(Date.now() / 1000) + seconds)
    .sign(secret);
}

test('tokens refreshed on live connections under load: no write lost, no id twice', async () => {
  // Tokens live 5 to 6 s (exp is whole seconds): the server warns
  // halfway, and closes a connection whose token ran out. Two stores of
  // one user write for 13 s, past two expiries.
  const made = [0, 0];
  const stores = await Promise.all(
    [0, 1].map((i) =>
      openStore({
        url: server.wsURL,
        database: 'user-alice',
        sync: true,
        token: () => {
          made[i]++;
          return sign('alice', users, 6);
        },
      }),
    ),
  );
  const statuses = [];
  for (const s of stores) s.on('status', (st) => statuses.push(st));
  const written = [];
  const end = Date.now() + 13000;
  await Promise.all(
    stores.map(async (s, i) => {
      for (let n = 0; Date.now() < end; n++) {
        const batch = [];
        for (let k = 0; k < 20; k++) batch.push(s.put('orders', { by: i, n: n * 20 + k }));
        for (const d of await Promise.all(batch)) written.push(d._id);
        await new Promise((ok) => setTimeout(ok, 5));
      }
    }),
  );
  for (const s of stores) {
    await s.sync();
    assert.equal(await s.pending(), 0);
  }
  assert.ok(made[0] >= 3 && made[1] >= 3, `tokens made: ${made}; want a refresh every ~3 s`);
  assert.deepEqual(statuses.filter((s) => s.state === 'offline'), [], 'no connection lost');
  assert.equal(new Set(written).size, written.length, 'an id was handed out twice');
  assert.ok(written.length > 500, `only ${written.length} writes`);
  await Promise.all(stores.map((s) => s.close()));

  // A new client of the database sees every write.
  const reader = await openStore({ url: server.wsURL, database: 'user-alice', token: await sign('alice', users, 60) });
  await reader.sync();
  const seen = new Set();
  for (let after = null; ; ) {
    const page = await reader.list('orders', { limit: 10000, after });
    for (const d of page.docs) seen.add(d._id);
    if (page.next === null) break;
    after = page.next;
  }
  await reader.close();
  assert.equal(seen.size, written.length);
  for (const id of written) assert.ok(seen.has(id), `${id} lost`);
});

test('each user reaches only their own database; shared is read-only', async () => {
  const alice = () => sign('alice', users, 300);
  const bob = () => sign('bob', users, 300);
  const a = await openStore({ url: server.wsURL, database: 'user-alice', token: alice });
  await a.put('notes', { _id: 'notes/a', text: "alice's" });
  await a.sync();
  await a.close();

  // Bob cannot open Alice's database.
  await assert.rejects(openStore({ url: server.wsURL, database: 'user-alice', token: bob }), (err) => err.code === 'unauthorized');
  const b = await openStore({ url: server.wsURL, database: 'user-bob', token: bob });
  await b.sync();
  await assert.rejects(b.get('notes/a'), (err) => err.code === 'not_found');
  await b.close();

  // An editor fills shared; users read it and cannot write it.
  const editor = await openStore({ url: server.wsURL, database: 'shared', token: () => sign('editor', { shared: 'write' }, 300) });
  await editor.put('news', { _id: 'news/1', text: 'hello' });
  await editor.sync();
  const r = await openStore({ url: server.wsURL, database: 'shared', token: bob });
  await r.sync();
  assert.equal((await r.get('news/1')).text, 'hello');
  await r.put('news', { _id: 'news/2', text: "bob's" });
  await r.put('news', { _id: 'news/1', text: 'overwritten' });
  const res = await r.sync().catch((err) => err);
  // Both pushes refused: the sync fails naming forbidden, the writes stay pending here.
  assert.equal(res?.code, 'rejected', `sync with a read token: ${res}`);
  assert.match(res.message, /forbidden/);
  assert.equal(await r.pending(), 2);
  await r.close();
  await editor.sync();
  await assert.rejects(editor.get('news/2'), (err) => err.code === 'not_found');
  assert.equal((await editor.get('news/1')).text, 'hello');
  await editor.close();
});
