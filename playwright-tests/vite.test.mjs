// The npm package in a fresh Vite app, as a user would set it up: the
// tarball `npm pack` makes is installed into a new project, the app imports
// 'hilodb' and opens a persisted store (so the SharedWorker and the wasm
// must both be served), and Chromium runs it against the real sync server,
// once from Vite's dev server and once from a production build.

import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { chromium } from 'playwright-core';
import { createServer, preview } from 'vite';

import { openStore } from '../js/node.js';
import { buildServer, freePort, repoRoot, startServer } from '../js/test/server.mjs';

const run = promisify(execFile);
// Vite's command line, as the app's own would run it.
const viteBin = join(dirname(fileURLToPath(import.meta.resolve('vite/package.json'))), 'bin', 'vite.js');
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';

const indexHTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>vite app</title></head>
<body><pre id="out">starting</pre><script type="module" src="/src/main.js"></script></body></html>
`;

// The app writes one document with a HiLo id into a persisted store, syncs
// it and reads it back; window.result is what the test checks.
const mainJS = `import { openStore } from 'hilodb';

const params = new URLSearchParams(location.search);
window.result = (async () => {
  const store = await openStore({ url: params.get('server'), database: 'vite', persist: 'vite-app-' + params.get('run') });
  const doc = await store.put('orders', { item: params.get('run') });
  await store.sync();
  const back = await store.get(doc._id);
  const info = await store.info();
  await store.close();
  return { id: doc._id, item: back.item, shared: info.shared === true };
})().catch((err) => ({ error: String(err), code: err.code }));
window.result.then((r) => (document.getElementById('out').textContent = JSON.stringify(r)));
`;

const viteConfig = `export default { optimizeDeps: { exclude: ['hilodb'] } };
`;

describe('hilodb in a fresh Vite app', () => {
  let work;
  let app;
  let cleanupBin = async () => {};
  let server;
  let browser;

  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'hilodb-vite-'));
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', work], {
      cwd: join(repoRoot, 'js'),
      maxBuffer: 16 << 20,
    });
    const [packed] = JSON.parse(stdout.slice(stdout.indexOf('[\n')));
    app = join(work, 'app');
    await mkdir(join(app, 'src'), { recursive: true });
    await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'vite-app', private: true, type: 'module' }));
    await writeFile(join(app, 'index.html'), indexHTML);
    await writeFile(join(app, 'src', 'main.js'), mainJS);
    await writeFile(join(app, 'vite.config.js'), viteConfig);
    await run('npm', ['install', '--no-audit', '--no-fund', join(work, packed.filename)], { cwd: app, maxBuffer: 16 << 20 });

    const built = await buildServer();
    cleanupBin = built.cleanup;
    server = await startServer(built.bin, ['-origins', '127.0.0.1:*']);
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: ['--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
  });

  after(async () => {
    try {
      await browser?.close();
    } finally {
      await server?.stop();
      await cleanupBin();
      if (work) await rm(work, { recursive: true, force: true });
    }
  });

  // runApp opens the app at base in a new page and returns window.result.
  async function runApp(base, name) {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (err) => errors.push(String(err)));
    try {
      await page.goto(`${base}/?server=${encodeURIComponent(server.wsURL)}&run=${name}`);
      const result = await page.evaluate(() => window.result);
      assert.deepEqual(errors, []);
      return result;
    } finally {
      await page.close();
    }
  }

  // onServer reads id from the sync server through a second client.
  async function onServer(id, wsURL = server.wsURL) {
    const store = await openStore({ url: wsURL, database: 'vite' });
    try {
      await store.sync();
      return await store.get(id);
    } finally {
      await store.close();
    }
  }

  test('dev server: the wasm and the shared worker load, and a write reaches the server', async () => {
    const port = await freePort();
    const dev = await createServer({
      root: app,
      logLevel: 'error',
      server: { host: '127.0.0.1', port, strictPort: true },
    });
    await dev.listen();
    try {
      const result = await runApp(`http://127.0.0.1:${port}`, 'dev');
      assert.equal(result.error, undefined, `app failed: ${JSON.stringify(result)}`);
      assert.match(result.id, /^orders\/\d+-A$/);
      assert.equal(result.item, 'dev');
      assert.equal(result.shared, true, 'a persisted store in a page should run in the shared worker');
      assert.equal((await onServer(result.id))?.item, 'dev');
    } finally {
      await dev.close();
    }
  });

  test('make run: a Vite dev server on loopback works with it as it comes, and ARGS reach the server', async () => {
    const port = await freePort();
    const data = await mkdtemp(join(tmpdir(), 'hilodb-make-run-'));
    // make run as a developer types it; its process group is stopped after.
    const make = spawn('make', ['run', `ADDR=127.0.0.1:${port}`, `DATA=${data}`, 'ARGS=-log-format json'], {
      cwd: repoRoot,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    make.stdout.on('data', (b) => (log += b));
    make.stderr.on('data', (b) => (log += b));
    const devPort = await freePort();
    const dev = await createServer({ root: app, logLevel: 'error', server: { host: '127.0.0.1', port: devPort, strictPort: true } });
    try {
      const deadline = Date.now() + 240000;
      for (;;) {
        assert.equal(make.exitCode, null, `make run exited:\n${log}`);
        const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false);
        if (ok) break;
        assert.ok(Date.now() < deadline, `make run did not serve in time:\n${log}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.match(log, /\{"time":/, 'ARGS=-log-format json should reach the server');
      await dev.listen();
      const wsURL = `ws://127.0.0.1:${port}/v1/sync`;
      // The page's origin is the dev server's, not the sync server's.
      const page = await browser.newPage();
      let result;
      try {
        await page.goto(`http://127.0.0.1:${devPort}/?server=${encodeURIComponent(wsURL)}&run=makerun`);
        result = await page.evaluate(() => window.result);
      } finally {
        await page.close();
      }
      assert.equal(result.error, undefined, `app failed: ${JSON.stringify(result)}`);
      assert.equal(result.item, 'makerun');
      assert.equal((await onServer(result.id, wsURL)).item, 'makerun');
    } finally {
      await dev.close();
      try {
        process.kill(-make.pid, 'SIGTERM');
      } catch {
        // gone already
      }
      await new Promise((ok) => (make.exitCode !== null || make.signalCode !== null ? ok() : make.once('exit', ok)));
      await rm(data, { recursive: true, force: true });
    }
  });

  test('production build: the bundle carries the wasm and the worker, imports nothing of Node, and a write reaches the server', async () => {
    // vite build as a user runs it: what it prints is what they see. The
    // browser export imports no Node module, so none is externalized "for
    // browser compatibility" and the bundle names none.
    const { stdout, stderr } = await run(process.execPath, [viteBin, 'build'], { cwd: app, maxBuffer: 16 << 20 });
    const printed = stdout + stderr;
    assert.doesNotMatch(printed, /externalized/i, `vite build externalized modules:\n${printed}`);
    assert.doesNotMatch(printed, /node:[a-z]|"ws"|bufferutil/, `vite build names Node modules:\n${printed}`);
    const assets = join(app, 'dist', 'assets');
    for (const name of await readdir(assets)) {
      if (!name.endsWith('.js')) continue;
      const text = await readFile(join(assets, name), 'utf8');
      assert.doesNotMatch(text, /["'`]node:[a-z]|["'`]ws["'`]|bufferutil/, `${name} refers to a Node module`);
    }
    const port = await freePort();
    const prev = await preview({ root: app, logLevel: 'error', preview: { host: '127.0.0.1', port, strictPort: true } });
    try {
      const result = await runApp(`http://127.0.0.1:${port}`, 'build');
      assert.equal(result.error, undefined, `app failed: ${JSON.stringify(result)}`);
      assert.match(result.id, /^orders\/\d+-A$/);
      assert.equal(result.item, 'build');
      assert.equal(result.shared, true);
      assert.equal((await onServer(result.id))?.item, 'build');
    } finally {
      await new Promise((ok) => prev.httpServer.close(ok));
    }
  });
});
