// The hilodb side of make bench-sync as JavaScript users get it: the npm
// package (the Go core as WebAssembly) in Node, replicating N small documents
// through a real hilodb-server on 127.0.0.1. Prints one JSON line in the
// shape of bench/pouchdb/pouch.mjs. Usage: node wasm.mjs SERVER_BIN [docs]
import { openStore } from '../../js/node.js';
import { startServer } from '../../js/test/server.mjs';

const [bin, docsArg] = process.argv.slice(2);
const n = Number(docsArg || 10000);
if (!bin) throw new Error('usage: node wasm.mjs SERVER_BIN [docs]');

const server = await startServer(bin);
try {
  const url = server.wsURL;
  const a = await openStore({ url, database: 'bench' });
  for (let i = 0; i < n; i++) await a.put('orders', { total: i, item: 'widget' });
  let t0 = performance.now();
  let c0 = process.cpuUsage();
  const pushed = await a.sync();
  const pushMs = performance.now() - t0;
  const pushCpu = process.cpuUsage(c0);
  if (pushed.pushed !== n) throw new Error(`pushed ${pushed.pushed} of ${n}`);

  const b = await openStore({ url, database: 'bench' });
  t0 = performance.now();
  c0 = process.cpuUsage();
  const pulled = await b.sync();
  const pullMs = performance.now() - t0;
  const pullCpu = process.cpuUsage(c0);
  if (pulled.pulled !== n) throw new Error(`pulled ${pulled.pulled} of ${n}`);
  await a.close();
  await b.close();
  console.log(JSON.stringify({
    system: 'hilodb-wasm', docs: n,
    pushMs: Math.round(pushMs), pullMs: Math.round(pullMs),
    pushDocsPerSec: Math.round(n / (pushMs / 1000)),
    pullDocsPerSec: Math.round(n / (pullMs / 1000)),
    // CPU time of this process (not the server's) during each phase.
    pushCpuMs: Math.round((pushCpu.user + pushCpu.system) / 1000),
    pullCpuMs: Math.round((pullCpu.user + pullCpu.system) / 1000),
  }));
} finally {
  await server.stop();
}
