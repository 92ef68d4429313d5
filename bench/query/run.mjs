// make bench-query: hilodb's queries, indexes and live queries against
// PouchDB 9 with pouchdb-find (its idb and indexeddb adapters) and RxDB
// with its free Dexie.js storage, in Debian's Chromium on an on-disk
// profile, side by side in one run, against the real hilodb-server on
// 127.0.0.1. Every system holds the same N todos (default 100,000; see
// bench-query.js) in a store with three indexes, and again in one with two:
//
//   reopen    a new page opens the store with two indexes and answers its
//             first query: ms from the page's start to the answer
//   queries   equality on an indexed field + sort + limit 20 (eqSort), a
//             range + limit 100 (range), two equalities on a compound
//             index + sort + limit 20 (compound), a field no index has
//             (scan): the median of REPS runs (SCAN_REPS for the scan)
//   live      the time from a put to the live query's callback with the
//             new document at the top, LIVE times (PouchDB has no live
//             query: its changes feed and find run again on each change)
//   puts      PUTS puts one by one into a collection with no index and
//             into one with three, taking turns, each holding SEED todos
//
// The stores are written once, before the rounds; each of the ROUNDS
// (default 3) measures every system, starting with the next one, and
// waits for a quiet machine before each scenario (settle.mjs). Ratios
// are taken per round (hilodb against the better PouchDB adapter of the
// round, and against RxDB), then the median is printed, beside the
// goals. Every system must give each query the same answer (checked).
// SYSTEMS picks some of hilodb,pouch-idb,pouch-indexeddb,rxdb (default
// all but pouch-idb: PouchDB's indexeddb adapter answers pouchdb-find
// from IndexedDB's own indexes, and was the faster of the two in every
// scenario, while the idb adapter builds each index as a map/reduce view,
// which takes minutes for 100,000 documents); SCENARIOS some of
// reopen,queries,live,puts. Sizes: N, SEED (default 5,000), PUTS (default
// 100), REPS (default 30), WARM (runs of each query, and live puts,
// before those measured, default 3), SCAN_REPS (default 3), LIVE
// (default 20). BASE, the web root of another hilodb build
// (js/build-web.sh), adds it as system hilodb-base, served under /base/
// and measured beside this one: an A/B of two builds in one run.

import { execFile } from 'node:child_process';
import { copyFile, cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { build } from 'esbuild';
import { chromium } from 'playwright-core';

import { buildServer, repoRoot, startServer } from '../../js/test/server.mjs';
import { settle } from '../browser/settle.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const run = promisify(execFile);
const N = Number(process.env.N || 100000);
const SEED = Number(process.env.SEED || 5000);
const PUTS = Number(process.env.PUTS || 100);
const REPS = Number(process.env.REPS || 30);
const WARM = Number(process.env.WARM || 3);
const SCAN_REPS = Number(process.env.SCAN_REPS || 3);
const LIVE = Number(process.env.LIVE || 20);
const ROUNDS = Number(process.env.ROUNDS || 3);
const SETTLE_MAX = Number(process.env.SETTLE_MAX ?? 15000);
const SCENARIOS = (process.env.SCENARIOS || 'reopen,queries,live,puts').split(',');
const systems = (process.env.SYSTEMS || 'hilodb,pouch-indexeddb,rxdb').split(',');
const BASE = process.env.BASE || '';
if (BASE) systems.splice(1, 0, 'hilodb-base');
const pouches = systems.filter((s) => s.startsWith('pouch'));
const want = (s) => SCENARIOS.includes(s);
const started = Date.now();
const log = (msg) => console.log(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${msg}`);

const built = await buildServer();
const web = await mkdtemp(join(tmpdir(), 'hilodb-bench-query-web-'));
const profile = await mkdtemp(join(tmpdir(), 'hilodb-bench-query-profile-'));
await run('bash', [join(repoRoot, 'js', 'build-web.sh'), web], { maxBuffer: 16 << 20 });
for (const f of ['bench-query.html', 'bench-query.js']) await copyFile(join(here, f), join(web, f));
if (BASE) await cp(BASE, join(web, 'base'), { recursive: true });
for (const f of ['pouchdb.min.js', 'pouchdb.indexeddb.min.js', 'pouchdb.find.min.js']) await copyFile(join(here, 'node_modules', 'pouchdb', 'dist', f), join(web, f));
await build({ entryPoints: [join(here, 'rxdb-entry.js')], bundle: true, format: 'esm', minify: true, outfile: join(web, 'rxdb.js'), logLevel: 'warning' });
const server = await startServer(built.bin, ['-static', web]);
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', ...(process.env.CHROMIUM_ARGS || '').split(' ').filter(Boolean)],
});

const settled = [];
// inPage opens bench-query.html for system in a new page (with extra address
// parameters), after a quiet machine, and runs fn(page) there.
async function inPage(system, extra, fn) {
  if (SETTLE_MAX > 0) settled.push(await settle(SETTLE_MAX));
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e));
  try {
    await page.goto(`${server.base}/bench-query.html?system=${system}${extra}`);
    await page.waitForFunction(() => window.bench);
    await page.evaluate(() => window.bench.ready);
    return await fn(page);
  } catch (err) {
    throw new Error(`${system}: ${err.message}${errors.length ? `; page errors: ${errors.map((e) => e.message).join('; ')}` : ''}`);
  } finally {
    await page.close();
  }
}
// hostSteps reads the store's steps (js/platform.js mark) in the page's
// host worker, where a hilodb store runs: ms from Go's start to the store's
// open (its load), and from the page's start to the module compiled and
// to Go's start. Nothing for the other systems.
async function hostSteps(page) {
  const marks = () => Object.fromEntries(performance.getEntriesByType('mark').filter((m) => m.name.startsWith('hilodb:')).map((m) => [m.name.slice(7), performance.timeOrigin + m.startTime]));
  for (const w of page.workers()) {
    const m = await w.evaluate(marks).catch(() => ({}));
    if (m.opened === undefined || m['go-ready'] === undefined) continue;
    const start = await page.evaluate(() => performance.timeOrigin);
    return { compiledMs: m.compiled - start, goReadyMs: m['go-ready'] - start, loadMs: m.opened - Math.max(m['go-ready'], m.loaded ?? 0) };
  }
  return {};
}
const call = (system, method, ...args) => inPage(system, '', (page) => page.evaluate(([m, a]) => window.bench[m](...a), [method, args]));

const stamp = Date.now().toString(36);
const bigName = (s) => `qbig-${s}-${stamp}`;
const reopenName = (s) => `qreopen-${s}-${stamp}`;
const rows = [];
const answers = []; // {round, system, query, answer}
const plans = {};
try {
  const loads = {};
  for (const s of systems) {
    if (want('queries') || want('live')) loads[`${s} ${N} todos, 3 indexes`] = await call(s, 'load', bigName(s), N, true);
    if (want('reopen')) loads[`${s} ${N} todos, 2 indexes`] = await call(s, 'load', reopenName(s), N, false);
    log(`loaded ${s}`);
  }
  console.log('writing the stores, then their indexes ready (ms):', JSON.stringify(loads));
  for (let round = 1; round <= ROUNDS; round++) {
    const order = systems.map((_, i) => systems[(i + round - 1) % systems.length]);
    for (const system of order) {
      const r = { round, system };
      if (want('reopen')) {
        const re = await inPage(system, `&reopen=${reopenName(system)}&size=${N}`, async (page) => ({ ...(await page.evaluate(() => window.reopened)), steps: await hostSteps(page) }));
        Object.assign(r, { reopenMs: re.reopenMs, reopenFromScriptMs: re.fromScriptMs, reopenOpenMs: re.openMs, pending: re.pending }, re.steps);
        answers.push({ round, system, query: 'reopen', answer: re.answer });
      }
      if (want('queries')) {
        const qs = await call(system, 'queries', bigName(system), N, REPS, SCAN_REPS, WARM);
        for (const [k, v] of Object.entries(qs)) {
          r[`${k}Ms`] = v.median;
          r[`${k}MeanMs`] = v.mean;
          answers.push({ round, system, query: k, answer: k === 'scan' ? [...v.answer].sort((a, b) => a - b) : v.answer });
          if (v.plan && round === 1) (plans[system] ??= {})[k] = v.plan;
        }
      }
      if (want('live')) r.liveMs = (await call(system, 'live', bigName(system), N, N + (round - 1) * (WARM + LIVE), LIVE, WARM)).median;
      if (want('puts')) Object.assign(r, await call(system, 'puts', `qputs-${system}-${stamp}-${round}`, SEED, PUTS));
      rows.push(r);
      log(JSON.stringify(r));
    }
  }
} finally {
  await context.close();
  await server.stop();
  await built.cleanup();
  await rm(web, { recursive: true, force: true });
  await rm(profile, { recursive: true, force: true });
}

if (settled.length > 0) console.log(`waited for a quiet machine before each scenario: median ${median(settled)} ms, at most ${Math.max(...settled)} ms (SETTLE_MAX=${SETTLE_MAX})`);
for (const [s, p] of Object.entries(plans)) console.log(`${s} plans:`, JSON.stringify(p));

// Every system's answer to each query of a round, against the first system's.
const wrong = [];
for (const a of answers) {
  const ref = answers.find((b) => b.round === a.round && b.query === a.query);
  if (JSON.stringify(a.answer) !== JSON.stringify(ref.answer)) wrong.push(`round ${a.round} ${a.query}: ${a.system} answered ${JSON.stringify(a.answer.slice(0, 5))}…, ${ref.system} ${JSON.stringify(ref.answer.slice(0, 5))}…`);
}

function median(xs) {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
}
const metrics = ['reopenMs', 'compiledMs', 'goReadyMs', 'loadMs', 'eqSortMs', 'rangeMs', 'compoundMs', 'scanMs', 'liveMs', 'plainPutMs', 'indexedPutMs'].filter((m) => rows.some((r) => r[m] !== undefined));
const per = (s, m) => median(rows.filter((r) => r.system === s).map((r) => r[m]));
const fmt = (v) => (v === undefined ? '-' : v < 10 ? v.toFixed(2) : v.toFixed(0));
// ratio: per round, the best of bs's times over a's (>1: a is faster).
const ratio = (m, a, bs) => {
  const rs = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const h = rows.find((r) => r.round === round && r.system === a)?.[m];
    const ps = rows.filter((r) => r.round === round && bs.includes(r.system)).map((r) => r[m]);
    if (h !== undefined && ps.length > 0) rs.push(Math.min(...ps) / h);
  }
  return rs.length ? median(rs) : undefined;
};
console.log(`\nmedian ms of ${ROUNDS} rounds (each a median of its runs), N=${N}; ratios per round, then their median (>1: hilodb faster)`);
const vs = systems.includes('hilodb') ? `${pouches.length ? 'vs pouch'.padStart(12) : ''}${systems.includes('rxdb') ? 'vs rxdb'.padStart(12) : ''}` : '';
console.log(`${'metric'.padEnd(14)}${systems.map((s) => s.padStart(16)).join('')}${vs}`);
for (const m of metrics) {
  let line = `${m.padEnd(14)}${systems.map((s) => fmt(per(s, m)).padStart(16)).join('')}`;
  if (systems.includes('hilodb')) {
    if (pouches.length) line += `${fmt(ratio(m, 'hilodb', pouches))}×`.padStart(12);
    if (systems.includes('rxdb')) line += `${fmt(ratio(m, 'hilodb', ['rxdb']))}×`.padStart(12);
  }
  console.log(line);
}
if (rows.some((r) => r.eqSortMeanMs !== undefined)) {
  console.log(`mean ms of the runs (finer than the 0.1 ms ticks of performance.now()):`);
  for (const m of ['eqSortMeanMs', 'rangeMeanMs', 'compoundMeanMs']) console.log(`${m.padEnd(16)}${systems.map((s) => fmt(per(s, m)).padStart(16)).join('')}`);
}

if (systems.includes('hilodb')) {
  const h = rows.filter((r) => r.system === 'hilodb');
  const goals = [];
  const goal = (what, value, ok) => goals.push(`${ok ? 'met    ' : 'NOT met'}  ${what}: ${value}`);
  if (h[0].eqSortMs !== undefined && pouches.length) {
    for (const q of ['eqSort', 'range', 'compound']) {
      const x = ratio(`${q}Ms`, 'hilodb', pouches);
      const ms = per('hilodb', `${q}Ms`);
      goal(`indexed query ${q} ≥ 10× PouchDB's find and < 1 ms`, `${fmt(x)}×, ${fmt(ms)} ms`, x >= 10 && ms < 1);
    }
  }
  if (h[0].liveMs !== undefined) goal('a live query updated within 2 ms of a put', `${fmt(per('hilodb', 'liveMs'))} ms`, per('hilodb', 'liveMs') <= 2);
  if (h[0].indexedPutMs !== undefined) {
    const x = median(h.map((r) => r.indexedPutMs / r.plainPutMs));
    goal('a put with 3 indexes ≤ 1.5× a put with none', `${fmt(x)}×`, x <= 1.5);
  }
  if (h[0].reopenMs !== undefined) goal(`reopening ${N} todos with 2 indexes < 500 ms (to the first answer)`, `${fmt(per('hilodb', 'reopenMs'))} ms from the page's start`, per('hilodb', 'reopenMs') < 500);
  console.log('\nhilodb against the goals:');
  for (const g of goals) console.log(g);
}
if (BASE) {
  console.log(`\nhilodb against the build in ${BASE} (median of ${ROUNDS} rounds; >1 means this build is faster):`);
  for (const m of metrics) console.log(`${m.padEnd(14)} ratio ${fmt(ratio(m, 'hilodb', ['hilodb-base']))}   hilodb ${fmt(per('hilodb', m))}   base ${fmt(per('hilodb-base', m))}`);
}
console.log(`\ntotal ${((Date.now() - started) / 1000).toFixed(0)} s`);
if (wrong.length > 0) {
  console.error(`\nthe systems answered differently:\n${wrong.join('\n')}`);
  process.exit(1);
}
