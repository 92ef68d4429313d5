// A Node process writing into a persisted store with two indexes is
// SIGKILLed mid-write; reopened, every query through an index answers as
// a scan of the collection filtered here does, and holds the writes that
// had resolved.

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
let cleanupBin = async () => {};
let server;
let dir;

before(async () => {
  const built = await buildServer();
  cleanupBin = built.cleanup;
  server = await startServer(built.bin);
  dir = await mkdtemp(join(tmpdir(), 'hilodb-querycrash-'));
});

after(async () => {
  try {
    await server?.stop();
  } finally {
    await cleanupBin();
    if (dir) await rm(dir, { recursive: true, force: true });
  }
});

// runUntilKilled runs the writer and SIGKILLs it once it has reported at
// least after acknowledged writes; it returns them.
function runUntilKilled(database, persist, after) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(here, 'fixtures', 'query-writer.mjs'), server.wsURL, database, persist], { stdio: ['ignore', 'pipe', 'inherit'] });
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
    child.on('exit', (code, signal) => (signal === 'SIGKILL' ? resolve(acked) : reject(new Error(`writer exited with ${code} before the kill`))));
  });
}

// scan reads every document of collection in key order, without an index.
async function scan(store, collection) {
  const docs = [];
  let after = null;
  do {
    const page = await store.list(collection, { limit: 1000, after });
    docs.push(...page.docs);
    after = page.next;
  } while (after !== null);
  return docs;
}

const byRank = (a, b) => a.rank - b.rank || (a._id < b._id ? -1 : a._id > b._id ? 1 : 0);

test('after SIGKILL, answers through an index equal a scan filtered here, with every acknowledged write', async () => {
  const database = `querycrash${process.pid}`;
  const persist = join(dir, 'tasks.hilodb');
  const latest = new Map(); // id → acknowledged document, or null once deleted
  for (const [round, target] of [150, 60, 300].entries()) {
    const acked = await runUntilKilled(database, persist, target);
    assert.ok(acked.length >= target, `only ${acked.length} writes acknowledged before the kill`);
    for (const a of acked) latest.set(a.id, a.deleted ? null : a.doc);

    const store = await openStore({ url: server.wsURL, database, persist });
    try {
      assert.deepEqual((await store.getIndexes('tasks')).indexes.map((i) => i.name), ['by-owner', 'by-state-rank']);
      const all = await scan(store, 'tasks');
      const stored = new Map(all.map((d) => [d._id, d]));
      // Each of the three writers may have had one write in flight at the
      // kill, stored or not: at most three documents differ from what was
      // acknowledged.
      const differ = [...latest].filter(([id, doc]) => (doc === null ? stored.has(id) : stored.get(id)?._rev !== doc._rev));
      assert.ok(differ.length <= 3, `acknowledged writes lost: ${JSON.stringify(differ.slice(0, 5))}`);
      latest.clear();
      for (const d of all) latest.set(d._id, d);
      const cases = [
        [{ state: 'open' }, 'by-state-rank', (d) => d.state === 'open'],
        [{ state: 'doing', rank: { $gte: 20, $lt: 70 } }, 'by-state-rank', (d) => d.state === 'doing' && d.rank >= 20 && d.rank < 70],
        [{ state: { $in: ['done', 'open'] }, rank: { $gt: 50 } }, 'by-state-rank', (d) => (d.state === 'done' || d.state === 'open') && d.rank > 50],
        [{ owner: 'u3' }, 'by-owner', (d) => d.owner === 'u3'],
      ];
      for (const [i, [selector, index, filter]] of cases.entries()) {
        const q = { selector, sort: ['rank'], use_index: index };
        const plan = await store.explain('tasks', q);
        assert.equal(plan.index, index);
        if (i === 0) {
          // The first round's store holds only a log: its first query
          // builds the index. Later rounds open the snapshot the closed
          // store wrote with the index's entries, and the writes logged
          // after it by the killed writer: the entries are kept, not
          // built again.
          assert.equal(plan.built, round === 0 ? true : undefined, `round ${round}: explain ${JSON.stringify(plan)}`);
        }
        const { docs } = await store.find('tasks', q);
        const want = all.filter(filter).sort(byRank);
        assert.deepEqual(docs.map((d) => d._id), want.map((d) => d._id), `${JSON.stringify(selector)} through ${index}`);
        assert.deepEqual(docs, want);
        assert.equal(await store.count('tasks', { selector }), want.length);
      }
    } finally {
      await store.close();
    }
  }
});
