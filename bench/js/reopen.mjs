// Reopening a persisted store of N small documents in Node, with this
// package and, side by side, another build of it (BASE, a js/ directory
// with its dist/ built, such as a checkout of an earlier commit after
// js/build.sh): each writes a store of its own once, then every round
// reopens each store in a new Node process (a fresh WebAssembly instance,
// as a page load gets) and reads one document. Prints one JSON line per
// reopen, then the medians. Usage:
//   node reopen.mjs SERVER_BIN [docs] [rounds] [BASE]
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const run = promisify(execFile);

// The child: open the store at path with the package in pkg, then either
// write docs into it (write) or time its reopen (reopen).
if (process.argv[2] === '--child') {
  const [, , , pkg, url, mode, path, docs] = process.argv;
  // The Node entry (node.js), or index.js in a checkout from before it.
  const entry = existsSync(join(pkg, 'node.js')) ? 'node.js' : 'index.js';
  const { openStore } = await import(pathToFileURL(join(pkg, entry)).href);
  const open = () => openStore({ url, database: `reopen-${Buffer.from(pkg).toString('hex').slice(-16)}`, persist: path });
  if (mode === 'write') {
    const s = await open();
    for (let from = 0; from < Number(docs); from += 10000) {
      const n = Math.min(10000, Number(docs) - from);
      const res = await s.putMany('orders', Array.from({ length: n }, (_, k) => ({ total: from + k, item: 'widget', qty: (from + k) % 7, note: 'a small order' })));
      if (res.some((r) => r instanceof Error)) throw new Error('putMany failed');
    }
    await s.close();
  } else {
    // Load the WebAssembly first: a page pays that apart from the store.
    const warm = await openStore({ url, database: 'warm' });
    await warm.close();
    const t0 = performance.now();
    const s = await open();
    await s.list('orders', { limit: 1 });
    const ms = performance.now() - t0;
    await s.close();
    console.log(JSON.stringify({ reopenMs: ms }));
  }
  process.exit(0);
}

const [bin, docsArg, roundsArg, baseArg] = process.argv.slice(2);
if (!bin) throw new Error('usage: node reopen.mjs SERVER_BIN [docs] [rounds] [BASE]');
const docs = Number(docsArg || 100000);
const rounds = Number(roundsArg || 5);
const builds = [['this', resolve(here, '..', '..', 'js')]];
if (baseArg) builds.push(['base', resolve(baseArg)]);
const { startServer } = await import('../../js/test/server.mjs');
const server = await startServer(bin);
const dir = await mkdtemp(join(tmpdir(), 'hilodb-reopen-'));
const child = async (pkg, mode, path) => {
  const { stdout } = await run(process.execPath, [fileURLToPath(import.meta.url), '--child', pkg, server.wsURL, mode, path, String(docs)], { maxBuffer: 1 << 20 });
  return stdout.trim() ? JSON.parse(stdout.trim().split('\n').pop()) : null;
};
try {
  for (const [name, pkg] of builds) await child(pkg, 'write', join(dir, `${name}.hilodb`));
  const times = Object.fromEntries(builds.map(([name]) => [name, []]));
  for (let r = 1; r <= rounds; r++) {
    for (const [name, pkg] of builds) {
      const { reopenMs } = await child(pkg, 'reopen', join(dir, `${name}.hilodb`));
      times[name].push(reopenMs);
      console.log(JSON.stringify({ round: r, build: name, docs, reopenMs: Math.round(reopenMs) }));
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const [name] of builds) console.log(`${name}: reopening ${docs} documents, median ${Math.round(median(times[name]))} ms, best ${Math.round(Math.min(...times[name]))} ms of ${rounds}`);
} finally {
  await server.stop();
  await rm(dir, { recursive: true, force: true });
}
