// Test helper: a cluster of real sync servers over a real three-member etcd
// cluster on 127.0.0.1 (Debian's etcd-server), run by the Go command
// internal/testcluster. The edge tests use it too.

import { execFile, spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { buildServer, repoRoot } from './server.mjs';

const run = promisify(execFile);
const START_TIMEOUT_MS = 120_000;

/**
 * clusterBinary returns internal/testcluster built into a new temporary
 * directory (or $HILODB_TESTCLUSTER_BIN when the Makefile built it) and a
 * cleanup function.
 */
async function clusterBinary() {
  const prebuilt = process.env.HILODB_TESTCLUSTER_BIN;
  if (prebuilt) {
    try {
      await access(prebuilt, constants.X_OK);
      return { bin: prebuilt, cleanup: async () => {} };
    } catch {
      // not built: build our own
    }
  }
  const dir = await mkdtemp(join(tmpdir(), 'hilodb-testcluster-bin-'));
  const bin = join(dir, 'testcluster');
  await run(process.env.GO || 'go', ['build', '-o', bin, './internal/testcluster'], { cwd: repoRoot, maxBuffer: 16 << 20 });
  return { bin, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * startCluster starts etcd and `servers` sync servers (tags A, B, C, …) and
 * resolves to { servers: [{tag, ws, http, pid}], etcd, kill(tag),
 * start(tag), stop() }. kill sends SIGKILL to a server and waits until it
 * is gone; start starts it again on its address and data; stop ends
 * everything (the command also ends everything by itself when this
 * process dies, since its standard input closes).
 */
export async function startCluster({ servers = 3 } = {}) {
  const server = await buildServer();
  const tool = await clusterBinary();
  const child = spawn(tool.bin, ['-server-bin', server.bin, '-servers', String(servers), '-lifetime', '15m'], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (b) => (stderr += b));
  const exited = new Promise((ok) => child.once('exit', (code, signal) => ok({ code, signal })));
  const lines = createInterface({ input: child.stdout });
  const waiting = [];
  const early = [];
  lines.on('line', (line) => {
    const w = waiting.shift();
    if (w) w(line);
    else early.push(line);
  });
  const nextLine = (ms) =>
    new Promise((ok, fail) => {
      if (early.length) return ok(early.shift());
      const timer = setTimeout(() => fail(new Error(`testcluster: no answer within ${ms} ms:\n${stderr}`)), ms);
      waiting.push((line) => {
        clearTimeout(timer);
        ok(line);
      });
      exited.then((e) => fail(new Error(`testcluster exited (${JSON.stringify(e)}):\n${stderr}`)));
    });
  const cleanup = async () => {
    child.stdin.end();
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
    await tool.cleanup();
    await server.cleanup();
  };
  let info;
  try {
    info = JSON.parse(await nextLine(START_TIMEOUT_MS));
  } catch (err) {
    await cleanup();
    throw err;
  }
  // Commands are answered in order, one line each.
  let queue = Promise.resolve();
  const command = (line) => {
    const p = queue.then(async () => {
      child.stdin.write(line + '\n');
      const answer = JSON.parse(await nextLine(60_000));
      if (answer.error) throw new Error(`testcluster ${line}: ${answer.error}`);
      return answer;
    });
    queue = p.catch(() => {});
    return p;
  };
  const byTag = (tag) => info.servers.find((s) => s.tag === tag);
  return {
    servers: info.servers,
    etcd: info.etcd,
    kill: (tag) => command(`kill ${tag}`),
    start: async (tag) => {
      const s = await command(`start ${tag}`);
      byTag(tag).pid = s.pid;
      return byTag(tag);
    },
    stop: cleanup,
    log: () => stderr,
  };
}
