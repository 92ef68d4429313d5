// Test helpers: build the real sync server from this repository and run it on
// 127.0.0.1 with a free port and a temporary data directory.

import { spawn, execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** repoRoot is the Go module's root directory. */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * buildServer builds cmd/hilodb-server into a new temporary directory and
 * returns the binary's path and a cleanup function. When HILODB_SERVER_BIN
 * names an existing file (the Makefile builds one before the tests), that
 * binary is used instead.
 */
export async function buildServer() {
  const prebuilt = process.env.HILODB_SERVER_BIN;
  if (prebuilt) {
    try {
      await access(prebuilt, constants.X_OK);
      return { bin: prebuilt, cleanup: async () => {} };
    } catch {
      // not built: build our own
    }
  }
  const dir = await mkdtemp(join(tmpdir(), 'hilodb-bin-'));
  const bin = join(dir, 'hilodb-server');
  await run(process.env.GO || 'go', ['build', '-o', bin, './cmd/hilodb-server'], {
    cwd: repoRoot,
    maxBuffer: 16 << 20,
  });
  return { bin, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** freePort asks the kernel for a port that is free on 127.0.0.1 now. */
export function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.on('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

/**
 * startServer runs bin on 127.0.0.1 with a fresh data directory and the
 * extra args, waits for /healthz, and returns its addresses and stop().
 * stop() always ends the process and removes the data directory. The port is
 * a free one, or options.port.
 */
export async function startServer(bin, args = [], options = {}) {
  let lastErr;
  // Another process may take the free port before the server binds it.
  for (let attempt = 0; attempt < (options.port ? 1 : 3); attempt++) {
    const dataDir = await mkdtemp(join(tmpdir(), 'hilodb-data-'));
    const port = options.port || (await freePort());
    const child = spawn(bin, ['-addr', `127.0.0.1:${port}`, '-data', dataDir, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    child.stdout.on('data', (b) => (log += b));
    child.stderr.on('data', (b) => (log += b));
    const exited = new Promise((ok) => child.once('exit', (code, signal) => ok({ code, signal })));

    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      await rm(dataDir, { recursive: true, force: true });
    };

    const base = `http://127.0.0.1:${port}`;
    try {
      await waitHealthy(base, exited, () => log);
      return {
        base,
        wsURL: `ws://127.0.0.1:${port}/v1/sync`,
        port,
        pid: child.pid,
        stop,
        log: () => log,
      };
    } catch (err) {
      lastErr = err;
      await stop();
    }
  }
  throw lastErr;
}

async function waitHealthy(base, exited, log) {
  let gone = null;
  exited.then((e) => (gone = e));
  const deadline = Date.now() + 15000;
  while (Date.now() < deadline) {
    if (gone) throw new Error(`hilodb-server exited (${JSON.stringify(gone)}):\n${log()}`);
    try {
      const res = await fetch(`${base}/healthz`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((ok) => setTimeout(ok, 50));
  }
  throw new Error(`hilodb-server did not become healthy at ${base}:\n${log()}`);
}
