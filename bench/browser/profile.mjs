// make profile-browser: where the time of a browser scenario goes, inside
// the store's worker and the page, with Go's function names.
//
// It builds the browser build once more without stripping its symbols (the
// wasm's name section gives the Go names), serves it from the real
// hilodb-server on 127.0.0.1, opens a persisted store in a Chromium page
// (the store then runs in the tab's host worker), attaches to that worker
// through the DevTools protocol and takes a CPU profile of the worker and
// the page while the scenario runs:
//
//   sequential  N puts, each awaited (default 3000)
//   bulk        one putMany of N documents (default 10000)
//   reopen      the store, holding N documents (default 100000) with two
//               indexes, closed and opened again, and its first query
//   reopen-page the same in a new page, as a reload does: the page and its
//               host worker profiled from their first line (the module
//               loaded, WebAssembly compiled, Go started, the store read)
//   start       the same for a new, empty store: what openStore costs a
//               page by itself
//   find        N queries through an index (default 1000) of a store of
//               SIZE documents (default 100000) with two indexes: QUERY=
//               eqSort (one owner's newest 20, the default), range (100 in
//               a range of createdAt, on a third index) or compound (one
//               owner's newest 20 of one status), as bench/query asks them
//   live        N puts (default 300) into the same store, each awaited
//               until a live query (one owner's newest 20) shows it
//
// It writes host.cpuprofile and page.cpuprofile to OUT (default a new
// temporary directory; Chrome DevTools opens them) and prints, for the
// worker, the functions that took most time (self and with callees) and a
// timeline in 10 ms steps of what ran: how idle the worker was, and in
// which phase. WARM=1 runs the scenario once into another store first
// (find: the same queries, on the same store),
// unprofiled, so that the profile shows optimized code. reopen-page and
// start also print the store's steps (js/platform.js mark) in the page
// and its workers, in ms from the page's start; INTERVAL (µs between
// samples, default 50) set high, 100000, makes those times nearly the
// unprofiled ones. Usage:
// SCENARIO=bulk N=10000 WARM=1 OUT=dir node profile.mjs

import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { chromium } from 'playwright-core';

import { buildServer, repoRoot, startServer } from '../../js/test/server.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const run = promisify(execFile);
const SCENARIO = process.env.SCENARIO || 'bulk';
const N = Number(process.env.N || { bulk: 10000, sequential: 3000, reopen: 100000, 'reopen-page': 100000, start: 0, find: 1000, live: 300 }[SCENARIO]);
const SIZE = Number(process.env.SIZE || 100000);
const QUERY = process.env.QUERY || 'eqSort';
if (!['eqSort', 'range', 'compound'].includes(QUERY)) throw new Error(`QUERY: eqSort, range or compound, not ${QUERY}`);
const WARM = Boolean(process.env.WARM);
const INTERVAL = Number(process.env.INTERVAL || 50); // µs between samples; a large one profiles at little cost, for the marks' times
if (!['sequential', 'bulk', 'reopen', 'reopen-page', 'start', 'find', 'live'].includes(SCENARIO)) throw new Error(`SCENARIO: sequential, bulk, reopen, reopen-page, start, find or live, not ${SCENARIO}`);
const OUT = process.env.OUT || (await mkdtemp(join(tmpdir(), 'hilodb-profile-')));
await mkdir(OUT, { recursive: true });

// wasmNames reads the function names of a wasm module's name section:
// function index → name.
export function wasmNames(b) {
  const names = new Map();
  let p = 8;
  const uleb = () => {
    let r = 0;
    let s = 0;
    let x;
    do {
      x = b[p++];
      r += (x & 0x7f) * 2 ** s;
      s += 7;
    } while (x & 0x80);
    return r;
  };
  while (p < b.length) {
    const id = b[p++];
    const size = uleb();
    const end = p + size;
    if (id === 0) {
      const nameLen = uleb();
      const section = b.subarray(p, p + nameLen).toString();
      p += nameLen;
      if (section === 'name') {
        while (p < end) {
          const sub = b[p++];
          const subEnd = uleb() + p;
          if (sub === 1) {
            for (let i = 0, n = uleb(); i < n; i++) {
              const idx = uleb();
              const len = uleb();
              names.set(idx, b.subarray(p, p + len).toString());
              p += len;
            }
          }
          p = subEnd;
        }
      }
    }
    p = end;
  }
  return names;
}

// summarize prints the heaviest functions of a CPU profile and its
// timeline; phases are name fragments, the outermost match names a sample.
function summarize(title, prof, names, phases) {
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of prof.nodes) for (const c of n.children || []) parent.set(c, n.id);
  const label = (n) => {
    const f = n.callFrame.functionName || '(anonymous)';
    const m = /^wasm-function\[(\d+)\]$/.exec(f);
    if (m) return names.get(Number(m[1])) || f;
    return n.callFrame.url ? `${f} ${n.callFrame.url.split('/').pop()}:${n.callFrame.lineNumber + 1}` : f;
  };
  const self = new Map();
  const total = new Map();
  const steps = [];
  let t = 0;
  let all = 0;
  for (let i = 0; i < prof.samples.length; i++) {
    const dt = prof.timeDeltas[i] || 0;
    t += dt;
    all += dt;
    const leaf = prof.samples[i];
    const k = label(byId.get(leaf));
    self.set(k, (self.get(k) || 0) + dt);
    const seen = new Set();
    let phase = k === '(idle)' ? '(idle)' : 'other';
    for (let c = leaf; c !== undefined; c = parent.get(c)) {
      const kk = label(byId.get(c));
      if (!seen.has(kk)) {
        seen.add(kk);
        total.set(kk, (total.get(kk) || 0) + dt);
      }
      const hit = phases.find((p) => kk.includes(p));
      if (hit) phase = hit;
    }
    const step = (steps[Math.floor(t / 10000)] ??= new Map());
    step.set(phase, (step.get(phase) || 0) + dt);
  }
  const pct = (v) => `${((100 * v) / all).toFixed(1).padStart(5)}%`;
  const top = (m, n) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n);
  console.log(`\n== ${title}: ${(all / 1000).toFixed(0)} ms profiled`);
  console.log('-- self');
  for (const [k, v] of top(self, 25)) console.log(pct(v), k);
  console.log('-- with callees');
  for (const [k, v] of top(total, 40)) console.log(pct(v), k);
  console.log('-- timeline, 10 ms steps: ms of each phase');
  steps.forEach((m, i) => {
    if (m) console.log(`${String(i * 10).padStart(6)} ms  ${top(m, 5).map(([k, v]) => `${k} ${(v / 1000).toFixed(1)}`).join(', ')}`);
  });
}

// reopenPage closes page's store and the page, then opens the store in a
// new page with its first query (start: a new store, no query),
// profiling the new page and its host worker from their first line (each
// worker waits for the profiler before it runs).
async function reopenPage(page) {
  const start = SCENARIO === 'start';
  await page.evaluate(async () => {
    await window.store.sync(); // nothing left to push at the reopen
    await window.store.close();
  });
  await page.close();
  await new Promise((ok) => setTimeout(ok, 1000));
  const next = await context.newPage();
  const cdp = await context.newCDPSession(next);
  const sessions = new Map(); // sessionId → title
  const waiting = new Map();
  let nextID = 0;
  const inWorker = (sessionId, method, params = {}) =>
    new Promise((ok, fail) => {
      const id = ++nextID;
      waiting.set(id, (m) => (m.error ? fail(new Error(`${method}: ${m.error.message}`)) : ok(m.result)));
      cdp.send('Target.sendMessageToTarget', { sessionId, message: JSON.stringify({ id, method, params }) }).catch(fail);
    });
  cdp.on('Target.receivedMessageFromTarget', (e) => {
    const m = JSON.parse(e.message);
    if (m.id && waiting.has(m.id)) {
      waiting.get(m.id)(m);
      waiting.delete(m.id);
    }
  });
  cdp.on('Target.attachedToTarget', async (e) => {
    sessions.set(e.sessionId, e.targetInfo.title || e.targetInfo.url);
    await inWorker(e.sessionId, 'Profiler.enable');
    await inWorker(e.sessionId, 'Profiler.setSamplingInterval', { interval: INTERVAL });
    await inWorker(e.sessionId, 'Profiler.start');
    await inWorker(e.sessionId, 'Runtime.runIfWaitingForDebugger');
  });
  await cdp.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: false });
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: INTERVAL });
  await cdp.send('Profiler.start');
  await next.goto(`${server.base}/bench.html`);
  const ms = await next.evaluate(async (name) => {
    const { openStore } = await import('/index.js');
    const store = await openStore({ url: `ws://${location.host}/v1/sync`, database: name, persist: name });
    const opened = performance.now();
    if (name === 'profile') await store.find('todos', { selector: { owner: 'user-00' }, sort: [{ createdAt: 'desc' }], limit: 20 });
    const answered = performance.now();
    window.store = store;
    return { opened, answered };
  }, start ? `start${Date.now()}` : 'profile');
  // The store's steps (js/platform.js mark), in the page and its workers,
  // from the page's start.
  const marks = `JSON.stringify(performance.getEntriesByType('mark').filter((m) => m.name.startsWith('hilodb:')).map((m) => [m.name, performance.timeOrigin + m.startTime]))`;
  const origin = await next.evaluate(() => performance.timeOrigin);
  const steps = JSON.parse(await next.evaluate(marks)).map(([n, t]) => ['page', n, t]);
  for (const [sessionId, title] of sessions) {
    const r = await inWorker(sessionId, 'Runtime.evaluate', { expression: marks, returnByValue: true }).catch(() => null);
    if (typeof r?.result?.value === 'string') for (const [n, t] of JSON.parse(r.result.value)) steps.push([title, n, t]);
  }
  steps.sort((a, b) => a[2] - b[2]);
  for (const [where, n, t] of steps) console.log(`${(t - origin).toFixed(1).padStart(8)} ms  ${n} (${where})`);
  const pageProfile = (await cdp.send('Profiler.stop')).profile;
  await writeFile(join(OUT, 'page.cpuprofile'), JSON.stringify(pageProfile));
  console.log(`${SCENARIO}: the store opened ${ms.opened.toFixed(0)} ms and the first query answered ${ms.answered.toFixed(0)} ms after the page's start (with the profiler on); profiles in ${OUT}`);
  for (const [sessionId, title] of sessions) {
    const prof = (await inWorker(sessionId, 'Profiler.stop')).profile;
    const file = `${title.replace(/[^a-z0-9-]+/gi, '_')}.cpuprofile`;
    await writeFile(join(OUT, file), JSON.stringify(prof));
    summarize(`worker ${title}`, prof, names, ['instantiate', 'runtime.schedinit', 'runtime.doInit', 'main.main', 'OpenJournal', 'LoadChanges', 'Dial', 'FindJSON', 'buildIndex', 'gcBgMarkWorker']);
  }
  summarize('the page', pageProfile, names, []);
  await next.evaluate(() => window.store.close());
}

const built = await buildServer();
const web = await mkdtemp(join(tmpdir(), 'hilodb-profile-web-'));
const chromeProfile = await mkdtemp(join(tmpdir(), 'hilodb-profile-chromium-'));
await run('bash', [join(repoRoot, 'js', 'build-web.sh'), web], { maxBuffer: 16 << 20 });
// The same program with its symbols: the name section names Go's functions
// (under the name the bundles know; its compressed copies go).
const wasmFile = join(web, 'dist', (await readdir(join(web, 'dist'))).find((f) => /^hilodb-[0-9a-f]+\.wasm$/.test(f)));
for (const f of [`${wasmFile}.br`, `${wasmFile}.gz`]) await rm(f, { force: true });
await run('go', ['build', '-trimpath', '-o', wasmFile, './wasm'], {
  cwd: repoRoot,
  env: { ...process.env, GOOS: 'js', GOARCH: 'wasm' },
  maxBuffer: 16 << 20,
});
const names = wasmNames(await readFile(wasmFile));
await copyFile(join(here, 'bench.html'), join(web, 'bench.html'));
await writeFile(join(web, 'bench.js'), ''); // the page needs only index.js
const server = await startServer(built.bin, ['-static', web]);
const context = await chromium.launchPersistentContext(chromeProfile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
try {
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  // The page's workers, attached without flattening: their protocol
  // messages travel inside Target.sendMessageToTarget.
  const workers = new Map();
  const waiting = new Map();
  let nextID = 0;
  cdp.on('Target.attachedToTarget', (e) => workers.set(e.sessionId, e.targetInfo));
  cdp.on('Target.receivedMessageFromTarget', (e) => {
    const m = JSON.parse(e.message);
    if (m.id && waiting.has(m.id)) {
      waiting.get(m.id)(m);
      waiting.delete(m.id);
    }
  });
  const inWorker = (sessionId, method, params = {}) =>
    new Promise((ok, fail) => {
      const id = ++nextID;
      waiting.set(id, (m) => (m.error ? fail(new Error(`${method}: ${m.error.message}`)) : ok(m.result)));
      cdp.send('Target.sendMessageToTarget', { sessionId, message: JSON.stringify({ id, method, params }) }).catch(fail);
    });
  await cdp.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: false });
  await page.goto(`${server.base}/bench.html`);
  await page.evaluate(async () => {
    const { openStore } = await import('/index.js');
    window.store = await openStore({ url: `ws://${location.host}/v1/sync`, database: 'profile', persist: 'profile' });
    await window.store.put('orders', { warm: true }); // the first lease, the worker started
  });
  let host;
  for (let i = 0; i < 50 && !host; i++) {
    host = [...workers].find(([, t]) => t.type === 'worker' && (t.title || '').includes('hilodb-host'))?.[0];
    if (!host) await new Promise((ok) => setTimeout(ok, 100));
  }
  if (!host) throw new Error(`no hilodb-host worker among ${JSON.stringify([...workers.values()])}`);
  if (SCENARIO.startsWith('reopen') || SCENARIO === 'find' || SCENARIO === 'live') {
    // Not profiled: the store's documents and its two indexes.
    await page.evaluate(async ([size, query]) => {
      const owner = (i) => `user-${String(i % 100).padStart(2, '0')}`;
      const doc = (i) => ({ n: i, owner: owner((i * 7) % 101), status: ['open', 'doing', 'done'][i % 3], createdAt: 1.7e12 + ((i * 1000003) % size) * 60000, title: `todo ${i}` });
      await window.store.createIndex('todos', { name: 'owner-createdAt', fields: ['owner', 'createdAt'] });
      await window.store.createIndex('todos', { name: 'owner-status-createdAt', fields: ['owner', 'status', 'createdAt'] });
      if (query === 'range') await window.store.createIndex('todos', { name: 'createdAt', fields: ['createdAt'] });
      for (let from = 0; from < size; from += 10000) await window.store.putMany('todos', Array.from({ length: Math.min(10000, size - from) }, (_, k) => doc(from + k)));
    }, [SCENARIO.startsWith('reopen') ? N : SIZE, QUERY]);
  }
  if (SCENARIO === 'reopen-page' || SCENARIO === 'start') {
    await reopenPage(page);
  } else {
    const scenario = async ([name, n, warm, which]) => {
      const doc = (i) => ({ total: i, item: 'widget', qty: i % 7, note: 'a small order' });
      const store = warm ? window.warmStore : window.store;
      const owner = (i) => `user-${String(i % 100).padStart(2, '0')}`;
      const query = {
        eqSort: (i) => ({ selector: { owner: owner(i * 37) }, sort: [{ createdAt: 'desc' }], limit: 20 }),
        range: (i) => ({ selector: { createdAt: { $gte: 1.7e12 + ((i * 7919) % 90000) * 60000, $lt: 1.7e12 + (((i * 7919) % 90000) + 2000) * 60000 } }, sort: [{ createdAt: 'asc' }], limit: 100 }),
        compound: (i) => ({ selector: { owner: owner(i * 37 + 11), status: ['open', 'doing', 'done'][i % 3] }, sort: [{ createdAt: 'desc' }], limit: 20 }),
      }[which === 'range' || which === 'compound' ? which : 'eqSort'];
      const t0 = performance.now();
      if (name === 'reopen') {
        // The host worker stays; the store's files are read again.
        await window.store.close();
        const { openStore } = await import('/index.js');
        window.store = await openStore({ url: `ws://${location.host}/v1/sync`, database: 'profile', persist: 'profile' });
        await window.store.find('todos', query(0));
        return (performance.now() - t0) * 1000;
      }
      if (name === 'find') {
        for (let i = 0; i < n; i++) await store.find('todos', query(i));
      } else if (name === 'live') {
        // Each put's time to the live query's callback with it on top.
        const q = query(0);
        let want = -1;
        let seen = () => {};
        const w = store.watchQuery('todos', q, (r) => r.docs[0]?.n === want && seen(performance.now()));
        await w.ready;
        const times = [];
        const base = (window.liveBase = (window.liveBase ?? 0) + 1e6);
        for (let i = 0; i < n; i++) {
          want = base + i;
          const got = new Promise((resolve) => (seen = resolve));
          const t = performance.now();
          const put = store.put('todos', { n: want, owner: q.selector.owner, status: 'open', createdAt: 2e12 + base + i, title: 'new' });
          times.push((await got) - t);
          await put;
        }
        w.close();
        times.sort((a, b) => a - b);
        window.liveMedianMs = times[times.length >> 1];
        return ((performance.now() - t0) * 1000) / n;
      } else if (name === 'bulk') {
        const res = await store.putMany('orders', Array.from({ length: n }, (_, i) => doc(i)));
        if (res.some((r) => r instanceof Error)) throw new Error('putMany failed');
      } else {
        for (let i = 0; i < n; i++) await store.put('orders', doc(i));
      }
      return ((performance.now() - t0) * 1000) / n;
    };
    if (WARM && (SCENARIO === 'find' || SCENARIO === 'live')) {
      await page.evaluate(scenario, [SCENARIO, N, false, QUERY]); // the same queries, not profiled
    } else if (WARM && !SCENARIO.startsWith('reopen')) {
      // The scenario once into another store first, not profiled: the
      // worker's code is optimized by then, as in the bench's -warm figures.
      await page.evaluate(async () => {
        const { openStore } = await import('/index.js');
        window.warmStore = await openStore({ url: `ws://${location.host}/v1/sync`, database: 'warmup', persist: 'warmup' });
      });
      await page.evaluate(scenario, [SCENARIO, N, true, QUERY]);
      await page.evaluate(() => window.warmStore.close());
    }
    for (const send of [(m, p) => inWorker(host, m, p), (m, p) => cdp.send(m, p)]) {
      await send('Profiler.enable');
      await send('Profiler.setSamplingInterval', { interval: INTERVAL });
      await send('Profiler.start');
    }
    const usPerDoc = await page.evaluate(scenario, [SCENARIO, N, false, QUERY]);
    const hostProfile = (await inWorker(host, 'Profiler.stop')).profile;
    const pageProfile = (await cdp.send('Profiler.stop')).profile;
    await writeFile(join(OUT, 'host.cpuprofile'), JSON.stringify(hostProfile));
    await writeFile(join(OUT, 'page.cpuprofile'), JSON.stringify(pageProfile));
    await page.evaluate(() => window.store.close());
    const what = { reopen: `${N} documents reopened and a first query answered in ${(usPerDoc / 1000).toFixed(0)} ms`, find: `${N} queries, ${usPerDoc.toFixed(1)} µs a query`, live: SCENARIO === 'live' && `${N} puts, ${usPerDoc.toFixed(1)} µs a put and its live update, median put to callback ${(await page.evaluate(() => window.liveMedianMs)).toFixed(2)} ms` }[SCENARIO] || `${N} documents, ${usPerDoc.toFixed(1)} µs a document`;
    console.log(`${SCENARIO}: ${what} (with the profiler on); profiles in ${OUT}`);
    const phases = ['WatchQuery', 'liveQuery', 'putMany', 'SaveRanges', 'InsertMany', 'appendNow', 'Journal_.Commit', 'docsArg', 'quickPut', 'gcBgMarkWorker', 'reply', 'resolveIndexes', 'FindJSON', 'openStore', 'Replay'];
    summarize('the store worker (hilodb-host)', hostProfile, names, phases);
    summarize('the page', pageProfile, names, []);
  }
} finally {
  await context.close();
  await server.stop();
  await rm(web, { recursive: true, force: true });
  await rm(chromeProfile, { recursive: true, force: true });
}
