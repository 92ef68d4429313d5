// CPU profiles of the phases of bench/js/wasm.mjs, for finding where the
// npm package (the Go core as WebAssembly) spends its time: N sequential
// puts, the push of them (sync) and their pull into a second store. Writes
// put.cpuprofile, push.cpuprofile and pull.cpuprofile into OUT_DIR (open
// them in Chrome DevTools; Go function names show when the wasm is built
// without -s -w). Usage: node syncprof.mjs SERVER_BIN [docs] OUT_DIR
import { openStore } from '../../js/node.js';
import { startServer } from '../../js/test/server.mjs';
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
const [bin, docsArg, outDir] = process.argv.slice(2);
if (!bin || !outDir) throw new Error('usage: node syncprof.mjs SERVER_BIN [docs] OUT_DIR');
const n = Number(docsArg || 10000);
const session = new Session(); session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 100 });
async function prof(name, fn) {
  await session.post('Profiler.start');
  const t0 = performance.now();
  const r = await fn();
  const ms = performance.now() - t0;
  const { profile } = await session.post('Profiler.stop');
  writeFileSync(`${outDir}/${name}.cpuprofile`, JSON.stringify(profile));
  console.log(name, Math.round(ms), 'ms');
  return r;
}
const server = await startServer(bin);
try {
  const url = server.wsURL;
  const a = await openStore({ url, database: 'bench' });
  await prof('put', async () => { for (let i = 0; i < n; i++) await a.put('orders', { total: i, item: 'widget' }); });
  const pushed = await prof('push', () => a.sync());
  if (pushed.pushed !== n) throw new Error(`pushed ${pushed.pushed} of ${n}`);
  const b = await openStore({ url, database: 'bench' });
  const pulled = await prof('pull', () => b.sync());
  if (pulled.pulled !== n) throw new Error(`pulled ${pulled.pulled} of ${n}`);
  await a.close(); await b.close();
} finally { await server.stop(); }
