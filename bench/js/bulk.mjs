// putMany of small documents with HiLo ids into a persisted store in Node,
// against a real hilodb-server on 127.0.0.1: milliseconds per bulk write,
// one JSON line per round (cpuMs: this process's CPU time during the
// call). Usage: node bulk.mjs SERVER_BIN [docs] [rounds]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { openStore } from '../../js/node.js';
import { startServer } from '../../js/test/server.mjs';

const [bin, docsArg, roundsArg] = process.argv.slice(2);
if (!bin) throw new Error('usage: node bulk.mjs SERVER_BIN [docs] [rounds]');
const n = Number(docsArg || 10000);
const rounds = Number(roundsArg || 4);
const server = await startServer(bin);
const dir = await mkdtemp(join(tmpdir(), 'hilodb-bulk-'));
try {
  const store = await openStore({ url: server.wsURL, database: 'bulk', persist: join(dir, 'store.hilodb') });
  await store.put('orders', { warm: true }); // the first lease
  for (let r = 1; r <= rounds; r++) {
    const docs = Array.from({ length: n }, (_, k) => ({ total: k, item: 'widget', qty: k % 7, note: 'a small order' }));
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const res = await store.putMany('orders', docs);
    const ms = performance.now() - t0;
    // CPU time of this process (all its threads) during the call: on a busy
    // machine it holds steadier than the wall clock.
    const c = process.cpuUsage(c0);
    if (res.some((x) => x instanceof Error)) throw new Error('putMany failed');
    console.log(JSON.stringify({ round: r, docs: n, ms: Math.round(ms), docsPerSec: Math.round(n / (ms / 1000)), cpuMs: Math.round((c.user + c.system) / 1000) }));
  }
  await store.close();
} finally {
  await server.stop();
  await rm(dir, { recursive: true, force: true });
}
