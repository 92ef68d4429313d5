// A Node process writing to a persisted store is SIGKILLed mid-write; the
// store reopened on the same path holds every write that had resolved, and
// goes on without handing out an id twice.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';

import { openStore } from '../node.js';
import { buildServer, startServer } from './server.mjs';

const here = dirname(fileURLToPath(import.meta.url));
let bin;
let cleanupBin = async () => {};
let server;
let dir;

before(async () => {
  ({ bin, cleanup: cleanupBin } = await buildServer());
  server = await startServer(bin);
  dir = await mkdtemp(join(tmpdir(), 'hilodb-crash-'));
});

after(async () => {
  try {
    await server?.stop();
  } finally {
    await cleanupBin();
    if (dir) await rm(dir, { recursive: true, force: true });
  }
});

// runUntilKilled runs the writer, SIGKILLs it once it has reported at
// least after writes acknowledged (so the kill lands mid-write however busy
// the machine is) and returns the writes it reported.
function runUntilKilled(database, persist, after, durability, mode) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(here, 'fixtures', 'crash-writer.mjs'), server.wsURL, database, persist, durability, mode], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const acked = [];
    let buf = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.startsWith('acked ')) continue;
        acked.push(JSON.parse(line.slice(6)));
        if (acked.length === after) child.kill('SIGKILL');
      }
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`writer exited with ${code} before the kill`));
      else resolve(acked);
    });
  });
}

// Both levels that acknowledge a stored write: 'strict' (the operating
// system holds it) and 'flushed' (on the disk); and bulk writes, whose ids
// are journaled a range ahead (the range after the current one named in
// the journal before the current one is spent).
for (const [durability, mode] of [
  ['strict', 'put'],
  ['flushed', 'put'],
  ['strict', 'bulk'],
]) test(`${durability}, ${mode}: every acknowledged write survives SIGKILL, and no id is handed out twice`, async () => {
  const database = `crash${durability}${mode}${process.pid}`;
  const persist = join(dir, `${durability}-${mode}.hilodb`);
  const seen = new Map(); // id → rev of its acknowledged write
  for (const after of [100, 37, 250]) {
    const acked = await runUntilKilled(database, persist, after, durability, mode);
    assert.ok(acked.length >= after, `only ${acked.length} writes acknowledged before the kill`);
    for (const a of acked) {
      assert.ok(!seen.has(a.id), `id ${a.id} handed out twice`);
      seen.set(a.id, a.rev);
    }
    const store = await openStore({ url: server.wsURL, database, persist, durability });
    try {
      for (const [id, rev] of seen) {
        const doc = await store.get(id);
        assert.equal(doc._rev, rev, `acknowledged write of ${id} lost`);
      }
    } finally {
      await store.close();
    }
  }
  // Everything reaches the server, each id once.
  const store = await openStore({ url: server.wsURL, database, persist });
  try {
    await store.sync();
    assert.equal(await store.pending(), 0);
  } finally {
    await store.close();
  }
});

// A put is answered in the step that appends it to the log, except while
// the log is being compacted into a new snapshot: such a put is stored and
// resolves once it is appended after the compaction. Enough large writes to
// pass the compaction size a few times, each awaited, all there after
// reopening.
test('puts made while the log is compacted resolve once stored, and all are there after reopening', async () => {
  const database = `compact${process.pid}`;
  const persist = join(dir, 'compact.hilodb');
  const note = 'x'.repeat(8000);
  const n = 1500; // about 12 MB of log: the log is compacted at 4 MiB
  let store = await openStore({ url: server.wsURL, database, persist });
  try {
    for (let i = 0; i < n; i++) {
      const doc = await store.put('orders', { _key: `k${i}`, i, note });
      assert.equal(doc._key, `k${i}`);
      assert.equal(doc.i, i);
    }
  } finally {
    await store.close();
  }
  store = await openStore({ url: server.wsURL, database, persist });
  try {
    for (let i = 0; i < n; i++) {
      const doc = await store.get(`orders/k${i}`);
      assert.equal(doc.i, i, `orders/k${i} after reopening`);
      assert.equal(doc.note.length, note.length);
    }
  } finally {
    await store.close();
  }
});
