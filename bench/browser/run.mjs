// make bench-browser: hilodb's browser store against PouchDB 9 (idb and
// indexeddb adapters, from npm) in Debian's Chromium on an on-disk profile,
// side by side in one run, against the real hilodb-server on 127.0.0.1.
// Ratios are taken per round (hilodb against the better PouchDB adapter of
// the same round), then the median is printed. Sizes: SEQ (sequential
// durable puts, default 1000), BULK (bulk write and list, default 10000), BIG
// (the big store, default 100000), ROUNDS (default 3).

import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { chromium } from 'playwright-core';

import { buildServer, repoRoot, startServer } from '../../js/test/server.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const run = promisify(execFile);
const SEQ = Number(process.env.SEQ || 1000);
const BULK = Number(process.env.BULK || 10000);
const BIG = Number(process.env.BIG || 100000);
const ROUNDS = Number(process.env.ROUNDS || 3);
const systems = ['hilodb', 'pouch-idb', 'pouch-indexeddb'];

const built = await buildServer();
const web = await mkdtemp(join(tmpdir(), 'hilodb-bench-web-'));
const profile = await mkdtemp(join(tmpdir(), 'hilodb-bench-profile-'));
await run('bash', [join(repoRoot, 'js', 'build-web.sh'), web], { maxBuffer: 16 << 20 });
for (const f of ['bench.html', 'bench.js']) await copyFile(join(here, f), join(web, f));
for (const f of ['pouchdb.min.js', 'pouchdb.indexeddb.min.js']) await copyFile(join(here, 'node_modules', 'pouchdb', 'dist', f), join(web, f));
const server = await startServer(built.bin, ['-static', web]);
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});

let seq = 0;
async function inPage(fn, ...args) {
  const page = await context.newPage();
  try {
    await page.goto(`${server.base}/bench.html`);
    await page.waitForFunction(() => window.bench && window.PouchDB);
    return await page.evaluate(fn, args);
  } finally {
    await page.close();
  }
}

const rows = [];
try {
  for (let round = 1; round <= ROUNDS; round++) {
    for (const system of systems) {
      const name = () => `b${Date.now()}x${++seq}`;
      const r = { round, system };
      r.sequentialDocsPerSec = (SEQ / (await inPage(([s, n, c]) => window.bench.sequential(s, n, c), system, name(), SEQ))) * 1000;
      r.bulkDocsPerSec = (BULK / (await inPage(([s, n, c]) => window.bench.bulk(s, n, c), system, name(), BULK))) * 1000;
      r.listDocsPerSec = (BULK / (await inPage(([s, n, c]) => window.bench.list(s, n, c), system, name(), BULK))) * 1000;
      Object.assign(r, await inPage(([s, n, c, k]) => window.bench.big(s, n, c, k), system, name(), BIG, 20));
      if (system === 'hilodb') Object.assign(r, await inPage(([n, c]) => window.bench.pull(n, c), name(), BULK));
      rows.push(r);
      console.log(JSON.stringify(r));
    }
  }
} finally {
  await context.close();
  await server.stop();
  await built.cleanup();
  await rm(web, { recursive: true, force: true });
  await rm(profile, { recursive: true, force: true });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const higher = ['sequentialDocsPerSec', 'bulkDocsPerSec', 'listDocsPerSec'];
const lower = ['fullPutMs', 'reopenMs'];
console.log(`\nhilodb against the better PouchDB 9 adapter of each round (median of ${ROUNDS} rounds; >1 means hilodb is better):`);
for (const m of [...higher, ...lower]) {
  const ratios = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const h = rows.find((r) => r.round === round && r.system === 'hilodb')[m];
    const ps = rows.filter((r) => r.round === round && r.system !== 'hilodb').map((r) => r[m]);
    ratios.push(higher.includes(m) ? h / Math.max(...ps) : Math.min(...ps) / h);
  }
  const per = (s) => median(rows.filter((r) => r.system === s).map((r) => r[m])).toFixed(1);
  console.log(`${m.padEnd(22)} ratio ${median(ratios).toFixed(2)}   hilodb ${per('hilodb')}   idb ${per('pouch-idb')}   indexeddb ${per('pouch-indexeddb')}`);
}
const h = rows.filter((r) => r.system === 'hilodb');
console.log(`hilodb: a put into ${BIG} documents costs ${median(h.map((r) => r.fullPutMs / r.emptyPutMs)).toFixed(2)}× one into an empty store; reopening ${BIG} takes ${median(h.map((r) => r.reopenMs)).toFixed(0)} ms; the longest main-thread task while ${BULK} documents are pulled: ${median(h.map((r) => r.longestTaskMs)).toFixed(0)} ms`);
