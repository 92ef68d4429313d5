// settle waits until the machine is quiet: what earlier scenarios wrote
// is on the disk (sync(1): the kernel writes dirty pages back for up to
// 30 s, and a flush meanwhile, as hilodb's range journal makes, waits
// behind them), and the CPU is busy under a fifth of its time for a
// quarter of a second, or max ms at most. Each scenario then starts
// without the work an earlier one left running in the background
// (IndexedDB compacting PouchDB's writes in the browser process goes on
// after a page closed), which would otherwise fall on whichever system is
// measured next. make bench-browser and make bench-query use it.

import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

async function cpuTimes() {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0];
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  return { idle: f[3] + (f[4] || 0), total: f.reduce((a, b) => a + b, 0) };
}

/** settle waits for a quiet machine, max ms at most, and returns the ms it waited. */
export async function settle(max) {
  const start = Date.now();
  await run('sync', []);
  let before = await cpuTimes();
  while (Date.now() - start < max) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const now = await cpuTimes();
    const busy = 1 - (now.idle - before.idle) / Math.max(1, now.total - before.total);
    before = now;
    if (busy < 0.2) break;
  }
  return Date.now() - start;
}
