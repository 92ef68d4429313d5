// What the Chromium tests share: the real sync server on 127.0.0.1 serving
// the demo web root (built from the working tree), and Debian's Chromium
// driven by playwright-core.

import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
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
 * real server with the web root built and served (`-static`), and, unless
 * launch is false, a headless Chromium. It returns the object whose
 * `server` ({base, wsURL, stop, …}), `browser` and `webRoot` the hooks set.
 */
export function serveWithChromium({ launch = true } = {}) {
  const env = { server: undefined, browser: undefined, webRoot: undefined };
  let cleanupBin = async () => {};
  before(async () => {
    const built = await buildServer();
    cleanupBin = built.cleanup;
    env.webRoot = await mkdtemp(join(tmpdir(), 'hilodb-web-'));
    await promisify(execFile)('bash', [join(repoRoot, 'js', 'build-web.sh'), env.webRoot], { maxBuffer: 16 << 20 });
    env.server = await startServer(built.bin, ['-static', env.webRoot]);
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
