// node ab.mjs REV: sequential durable puts through a shared persisted store
// in Debian's Chromium, the JavaScript package of git revision REV against
// the working tree's, interleaved in one browser against one real
// hilodb-server on 127.0.0.1, so that a busy machine weighs on both alike.
// Both use the working tree's WebAssembly: it compares the package's
// JavaScript (where a store runs, how a call reaches it). Each block runs
// both sides in fresh pages (the order alternates); the median of the
// per-block ratios is printed. Sizes: SEQ (puts per block, default 300),
// WARM (puts before them, default 50), BLOCKS (default 10).

import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { chromium } from 'playwright-core';

import { buildServer, repoRoot, startServer } from '../../js/test/server.mjs';

const run = promisify(execFile);
const rev = process.argv[2];
if (!rev) {
  console.error('usage: node ab.mjs REV');
  process.exit(2);
}
const SEQ = Number(process.env.SEQ || 300);
const BLOCKS = Number(process.env.BLOCKS || 10);
const WARM = Number(process.env.WARM || 50);

const built = await buildServer();
const web = await mkdtemp(join(tmpdir(), 'hilodb-ab-web-'));
const profile = await mkdtemp(join(tmpdir(), 'hilodb-ab-profile-'));
await run('bash', [join(repoRoot, 'js', 'build-web.sh'), web], { maxBuffer: 16 << 20 });
// REV's package beside it, in /rev/, with the same WebAssembly.
const old = join(web, 'rev');
const stage = await mkdtemp(join(tmpdir(), 'hilodb-ab-rev-'));
await cp(web, stage, { recursive: true });
await cp(stage, old, { recursive: true });
await rm(stage, { recursive: true, force: true });
const { stdout } = await run('git', ['-C', repoRoot, 'ls-tree', '--name-only', rev, 'js/']);
for (const path of stdout.split('\n').filter((p) => /^js\/[^/]+\.js$/.test(p))) {
  const { stdout: text } = await run('git', ['-C', repoRoot, 'show', `${rev}:${path}`], { maxBuffer: 16 << 20 });
  await writeFile(join(old, path.slice('js/'.length)), text);
}
for (const dir of [web, old]) await writeFile(join(dir, 'ab.html'), '<!doctype html><meta charset="utf-8"><title>ab</title>');
console.log(`${rev}: ${(await readdir(old)).filter((f) => f.endsWith('.js')).length} files; working tree: ${(await readdir(web)).filter((f) => f.endsWith('.js')).length}`);

const server = await startServer(built.bin, ['-static', web]);
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});

// sequential runs SEQ puts, after a first one (the lease) and WARM to warm
// up, in a fresh page of the side under prefix: µs per put.
async function sequential(prefix, name) {
  const page = await context.newPage();
  try {
    await page.goto(`${server.base}${prefix}/ab.html`);
    return await page.evaluate(
      async ([n, prefix, name, warm]) => {
        const { openStore } = await import(`${prefix}/index.js`);
        const db = await openStore({ url: `ws://${location.host}/v1/sync`, database: name, persist: name });
        const doc = (i) => ({ total: i, item: 'widget', qty: i % 7, note: 'a small order' });
        await db.put('orders', doc(-1));
        for (let i = 0; i < warm; i++) await db.put('orders', doc(i));
        const t0 = performance.now();
        for (let i = 0; i < n; i++) await db.put('orders', doc(i));
        const t = performance.now() - t0;
        await db.close();
        return (t / n) * 1000;
      },
      [SEQ, prefix, name, WARM],
    );
  } finally {
    await page.close();
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const us = { rev: [], tree: [] };
const ratios = [];
try {
  for (let b = 0; b < BLOCKS; b++) {
    const got = {};
    for (const side of b % 2 ? ['tree', 'rev'] : ['rev', 'tree']) {
      got[side] = await sequential(side === 'rev' ? '/rev' : '', `ab${Date.now()}x${b}${side}`);
      us[side].push(got[side]);
    }
    ratios.push(got.rev / got.tree);
    console.log(`block ${b + 1}: ${rev} ${got.rev.toFixed(0)} µs/put, working tree ${got.tree.toFixed(0)} µs/put, ratio ${(got.rev / got.tree).toFixed(2)}`);
  }
} finally {
  await context.close();
  await server.stop();
  await built.cleanup();
  await rm(web, { recursive: true, force: true });
  await rm(profile, { recursive: true, force: true });
}
console.log(
  `\nmedian of ${BLOCKS} blocks of ${SEQ} sequential durable puts (after ${WARM}): ${rev} ${median(us.rev).toFixed(0)} µs/put, working tree ${median(us.tree).toFixed(0)} µs/put; ${rev}/working tree ${median(ratios).toFixed(2)} (>1: the working tree is faster)`,
);
