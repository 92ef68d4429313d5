// make bench-browser: hilodb's browser store against PouchDB 9 (idb and
// indexeddb adapters, from npm) in Debian's Chromium on an on-disk profile,
// side by side in one run, against the real hilodb-server on 127.0.0.1.
// Ratios are taken per round (hilodb against the better PouchDB adapter of
// the same round), then the median is printed. Sizes: SEQ (sequential
// durable puts, and the puts made at once, default 1000), BULK (bulk write
// and list, default 10000), BIG (the big store, default 100000), ROUNDS
// (default 3). SCENARIOS picks some of
// sequential,sequential-warm,concurrent,bulk,bulk-warm,list,big,pull,start
// (default all; the -warm ones measure again after a warm-up of the same
// size in the same page; start opens a store in a page of a new browser
// profile, the system's code loaded as part of it, then again after the
// page's reload: a cold first load and a warm one, start.js); SYSTEMS some of hilodb,pouch-idb,pouch-indexeddb
// (default all). CHROMIUM_ARGS adds command-line switches to Chromium's.
// Each round starts with the next system, and each scenario waits for a
// quiet machine first (settle below; SETTLE_MAX=0 turns that off).
// BASE, the web root of another hilodb build (js/build-web.sh), adds it as
// system hilodb-base, served under /base/ and measured beside this one in
// the same rounds. AWAY_MS puts the sync server that far away each way for
// start (a TCP proxy on 127.0.0.1 delays every chunk; the page itself
// still loads from 127.0.0.1, as from its service worker's cache).

import { execFile } from 'node:child_process';
import { copyFile, cp, mkdtemp, rm } from 'node:fs/promises';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { chromium } from 'playwright-core';

import { buildServer, repoRoot, startServer } from '../../js/test/server.mjs';
import { settle } from './settle.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const run = promisify(execFile);
const SEQ = Number(process.env.SEQ || 1000);
const BULK = Number(process.env.BULK || 10000);
const BIG = Number(process.env.BIG || 100000);
const ROUNDS = Number(process.env.ROUNDS || 3);
const SCENARIOS = (process.env.SCENARIOS || 'sequential,sequential-warm,concurrent,bulk,bulk-warm,list,big,pull,start').split(',');
const BASE = process.env.BASE || '';
const AWAY_MS = Number(process.env.AWAY_MS || 0);
const systems = (process.env.SYSTEMS || 'hilodb,pouch-idb,pouch-indexeddb').split(',');
if (BASE) systems.splice(1, 0, 'hilodb-base');
const pouches = systems.filter((s) => s.startsWith('pouch'));

const built = await buildServer();
const web = await mkdtemp(join(tmpdir(), 'hilodb-bench-web-'));
const profile = await mkdtemp(join(tmpdir(), 'hilodb-bench-profile-'));
await run('bash', [join(repoRoot, 'js', 'build-web.sh'), web], { maxBuffer: 16 << 20 });
for (const f of ['bench.html', 'bench.js', 'start.html', 'start.js']) await copyFile(join(here, f), join(web, f));
if (BASE) await cp(BASE, join(web, 'base'), { recursive: true });
for (const f of ['pouchdb.min.js', 'pouchdb.indexeddb.min.js']) await copyFile(join(here, 'node_modules', 'pouchdb', 'dist', f), join(web, f));
// Pages on the server's own origin reach it through AWAY_MS's proxy too.
const server = await startServer(built.bin, ['-static', web, '-origins', '127.0.0.1:*']);
const chromiumOptions = {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', ...(process.env.CHROMIUM_ARGS || '').split(' ').filter(Boolean)],
};
const context = await chromium.launchPersistentContext(profile, chromiumOptions);

// Each scenario waits for a quiet machine first (settle.mjs), SETTLE_MAX
// ms (default 15,000) at most.
const SETTLE_MAX = Number(process.env.SETTLE_MAX ?? 15000);
const settled = [];

let seq = 0;
async function inPage(fn, ...args) {
  if (SETTLE_MAX > 0) settled.push(await settle(SETTLE_MAX));
  const page = await context.newPage();
  try {
    await page.goto(`${server.base}/bench.html`);
    await page.waitForFunction(() => window.bench && window.PouchDB);
    return await page.evaluate(fn, args);
  } finally {
    await page.close();
  }
}

// delayProxy forwards connections on 127.0.0.1 to port, each chunk
// delayed by ms in each direction.
async function delayProxy(port, ms) {
  const srv = createServer((c) => {
    const u = connect(port, '127.0.0.1');
    const pipe = (from, to) => from.on('data', (d) => setTimeout(() => to.write(d), ms));
    pipe(c, u);
    pipe(u, c);
    const end = () => (c.destroy(), u.destroy());
    for (const x of [c, u]) x.on('close', end).on('error', end);
  });
  await new Promise((ok) => srv.listen(0, '127.0.0.1', ok));
  return { url: `ws://127.0.0.1:${srv.address().port}/v1/sync`, close: () => new Promise((ok) => srv.close(ok)) };
}
const away = AWAY_MS > 0 ? await delayProxy(Number(new URL(server.base).port), AWAY_MS) : null;

// startup opens store name of system in a page of a new browser profile
// (empty cache, no store: a cold first load), then after reloading the
// page (a warm one): ms from the call, each after a quiet machine.
async function startup(system, name) {
  const dir = await mkdtemp(join(tmpdir(), 'hilodb-bench-cold-'));
  const cold = await chromium.launchPersistentContext(dir, chromiumOptions);
  try {
    const page = await cold.newPage();
    const open = async (load) => {
      if (SETTLE_MAX > 0) settled.push(await settle(SETTLE_MAX));
      await load();
      await page.waitForFunction(() => window.start);
      return page.evaluate(([s, n]) => window.start(s, n), [system, name]);
    };
    const first = await open(() => page.goto(`${server.base}/start.html${away ? `?ws=${encodeURIComponent(away.url)}` : ''}`));
    const again = await open(() => page.reload());
    return { startColdMs: first.ms, startWarmMs: again.ms };
  } finally {
    await cold.close();
    await rm(dir, { recursive: true, force: true });
  }
}

const rows = [];
try {
  for (let round = 1; round <= ROUNDS; round++) {
    // Each round starts with the next system, so that none is always
    // measured first in a fresh browser, or always after another's writes.
    const order = systems.map((_, i) => systems[(i + round - 1) % systems.length]);
    for (const system of order) {
      const name = () => `b${Date.now()}x${++seq}`;
      const r = { round, system };
      const want = (s) => SCENARIOS.includes(s);
      if (want('sequential')) r.sequentialDocsPerSec = (SEQ / (await inPage(([s, n, c]) => window.bench.sequential(s, n, c), system, name(), SEQ))) * 1000;
      if (want('sequential-warm')) r.sequentialWarmDocsPerSec = (SEQ / (await inPage(([s, n, c]) => window.bench.sequentialWarm(s, n, c), system, name(), SEQ))) * 1000;
      if (want('concurrent')) r.concurrentDocsPerSec = (SEQ / (await inPage(([s, n, c]) => window.bench.concurrent(s, n, c), system, name(), SEQ))) * 1000;
      if (want('bulk')) r.bulkDocsPerSec = (BULK / (await inPage(([s, n, c]) => window.bench.bulk(s, n, c), system, name(), BULK))) * 1000;
      if (want('bulk-warm')) r.bulkWarmDocsPerSec = (BULK / (await inPage(([s, n, c]) => window.bench.bulkWarm(s, n, c), system, name(), BULK))) * 1000;
      if (want('list')) r.listDocsPerSec = (BULK / (await inPage(([s, n, c]) => window.bench.list(s, n, c), system, name(), BULK))) * 1000;
      if (want('big')) Object.assign(r, await inPage(([s, n, c, k]) => window.bench.big(s, n, c, k), system, name(), BIG, 20));
      if (want('start')) Object.assign(r, await startup(system, name()));
      if (want('pull') && system === 'hilodb') Object.assign(r, await inPage(([n, c]) => window.bench.pull(n, c), name(), BULK));
      rows.push(r);
      console.log(JSON.stringify(r));
    }
  }
} finally {
  await context.close();
  await server.stop();
  await away?.close();
  await built.cleanup();
  await rm(web, { recursive: true, force: true });
  await rm(profile, { recursive: true, force: true });
}

if (settled.length > 0) console.log(`waited for a quiet machine before each scenario: median ${[...settled].sort((a, b) => a - b)[settled.length >> 1]} ms, at most ${Math.max(...settled)} ms (SETTLE_MAX=${SETTLE_MAX})`);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const higher = ['sequentialDocsPerSec', 'sequentialWarmDocsPerSec', 'concurrentDocsPerSec', 'bulkDocsPerSec', 'bulkWarmDocsPerSec', 'listDocsPerSec'];
const lower = ['fullPutMs', 'reopenMs', 'startColdMs', 'startWarmMs'];
const measured = [...higher, ...lower].filter((m) => rows.some((r) => r[m] !== undefined));
const per = (s, m) => median(rows.filter((r) => r.system === s).map((r) => r[m])).toFixed(1);
// Per round: a ratio of system a's figure to system b's (>1: a better).
const ratio = (m, a, bs) => {
  const ratios = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const h = rows.find((r) => r.round === round && r.system === a)[m];
    const ps = rows.filter((r) => r.round === round && bs.includes(r.system)).map((r) => r[m]);
    ratios.push(higher.includes(m) ? h / Math.max(...ps) : Math.min(...ps) / h);
  }
  return median(ratios).toFixed(2);
};
if (systems.includes('hilodb') && pouches.length > 0) {
  console.log(`\nhilodb against the better PouchDB 9 adapter of each round (median of ${ROUNDS} rounds; >1 means hilodb is better):`);
  for (const m of measured) {
    console.log(`${m.padEnd(22)} ratio ${ratio(m, 'hilodb', pouches)}   hilodb ${per('hilodb', m)}   ${pouches.map((p) => `${p.slice(6)} ${per(p, m)}`).join('   ')}`);
  }
}
if (BASE) {
  console.log(`\nhilodb against the build in ${BASE} (median of ${ROUNDS} rounds; >1 means this build is better):`);
  for (const m of measured) console.log(`${m.padEnd(22)} ratio ${ratio(m, 'hilodb', ['hilodb-base'])}   hilodb ${per('hilodb', m)}   base ${per('hilodb-base', m)}`);
}
const h = rows.filter((r) => r.system === 'hilodb');
if (h.length > 0 && h[0].reopenMs !== undefined) {
  console.log(`hilodb: a put into ${BIG} documents costs ${median(h.map((r) => r.fullPutMs / r.emptyPutMs)).toFixed(2)}× one into an empty store; reopening ${BIG} takes ${median(h.map((r) => r.reopenMs)).toFixed(0)} ms`);
}
if (h.length > 0 && h[0].startColdMs !== undefined) {
  const cold = median(h.map((r) => r.startColdMs));
  const warm = median(h.map((r) => r.startWarmMs));
  console.log(`hilodb: openStore on a cold first load ${cold.toFixed(0)} ms (goal at most 150: ${cold <= 150 ? 'met' : 'NOT met'}), on a warm reload ${warm.toFixed(0)} ms (goal at most 60: ${warm <= 60 ? 'met' : 'NOT met'})`);
}
if (h.length > 0 && h[0].longestTaskMs !== undefined) {
  console.log(`hilodb: the longest main-thread task while ${BULK} documents are pulled: ${median(h.map((r) => r.longestTaskMs)).toFixed(0)} ms`);
}
