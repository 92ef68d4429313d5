// What the Chromium tests share: the real sync server on 127.0.0.1 serving
// the demo web root (built from the working tree), and Debian's Chromium
// driven by playwright-core.

import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { promisify } from 'node:util';

import { chromium } from 'playwright-core';

import { buildServer, repoRoot, startServer } from '../js/test/server.mjs';

/** chromiumPath is Debian's Chromium, or $CHROMIUM. */
export const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';

/**
 * chromiumArgs keep Chromium off the network: without them it tries
 * Google's hosts at every start, which this machine refuses.
 */
export const chromiumArgs = ['--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

/**
 * serveWithChromium registers the test file's before and after hooks: the
 * real server with the web root built and served (`-static`) and the flags
 * serverArgs added, and, unless launch is false, a headless Chromium. It
 * returns the object whose `server` ({base, wsURL, stop, …}), `browser`
 * and `webRoot` the hooks set.
 */
export function serveWithChromium({ launch = true, serverArgs = [] } = {}) {
  const env = { server: undefined, browser: undefined, webRoot: undefined };
  let cleanupBin = async () => {};
  before(async () => {
    const built = await buildServer();
    cleanupBin = built.cleanup;
    env.webRoot = await mkdtemp(join(tmpdir(), 'hilodb-web-'));
    await promisify(execFile)('bash', [join(repoRoot, 'js', 'build-web.sh'), env.webRoot], { maxBuffer: 16 << 20 });
    env.server = await startServer(built.bin, ['-static', env.webRoot, ...serverArgs]);
    if (launch) env.browser = await chromium.launch({ executablePath: chromiumPath, args: chromiumArgs });
  });
  after(async () => {
    try {
      await env.browser?.close();
    } finally {
      await env.server?.stop();
      await cleanupBin();
      if (env.webRoot) await rm(env.webRoot, { recursive: true, force: true });
    }
  });
  return env;
}

// logBackend resolves to where the persisted store name keeps its log, read
// in page: 'opfs' (the origin private file system) or 'indexeddb'.
export function logBackend(page, name) {
  return page.evaluate(
    (name) =>
      new Promise((resolve, reject) => {
        const req = indexedDB.open(`hilodb:${name}`, 1);
        req.onerror = () => reject(req.error);
        req.onsuccess = () => {
          const db = req.result;
          const get = db.transaction('kv').objectStore('kv').get('backend');
          get.onsuccess = () => {
            db.close();
            resolve(get.result === 'opfs' ? 'opfs' : 'indexeddb');
          };
          get.onerror = () => reject(get.error);
        };
      }),
    name,
  );
}

/**
 * startChromium runs Chromium on the on-disk profile directory as its own
 * process group and connects to it over the DevTools protocol. It returns
 * the browser and kill(), which SIGKILLs every process of the group and
 * resolves once all are gone (the crash tests).
 */
export async function startChromium(profile) {
  const proc = spawn(
    chromiumPath,
    [
      '--headless=new',
      '--no-sandbox',
      ...chromiumArgs,
      '--remote-debugging-port=0',
      `--user-data-dir=${profile}`,
      'about:blank',
    ],
    { detached: true, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const endpoint = await new Promise((resolve, reject) => {
    let err = '';
    const timer = setTimeout(() => reject(new Error(`Chromium did not start: ${err}`)), 30000);
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (chunk) => {
      err += chunk;
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    proc.on('exit', (code) => reject(new Error(`Chromium exited (${code}): ${err}`)));
  });
  proc.stderr.resume();
  const browser = await chromium.connectOverCDP(endpoint);
  const kill = async () => {
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    process.kill(-proc.pid, 'SIGKILL');
    await exited;
    await groupGone(proc.pid);
  };
  return { browser, kill };
}

// groupGone resolves once no live process of the process group is left.
// The browser's exit comes first; its storage and renderer processes,
// killed by the same signal, may take a moment longer to let go of the
// profile's files, and a browser started on the profile before then would
// find them still held.
async function groupGone(pgid) {
  const deadline = Date.now() + 15000;
  for (;;) {
    const live = [];
    for (const pid of await readdir('/proc').catch(() => [])) {
      if (!/^\d+$/.test(pid)) continue;
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
      // pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid && fields[0] !== 'Z') live.push(pid);
    }
    if (live.length === 0) return;
    if (Date.now() > deadline) throw new Error(`Chromium processes ${live.join(', ')} still alive 15 s after SIGKILL`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
