// Two Node processes race to open one persisted store, round after round,
// with no lock, a lock left by a process that is gone, or an empty lock of
// an earlier version of this package: exactly one opens it each round, and
// no id is handed out twice.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';

import { buildServer, startServer } from './server.mjs';

const here = dirname(fileURLToPath(import.meta.url));
let bin;
let cleanupBin = async () => {};
let server;
let dir;

before(async () => {
  ({ bin, cleanup: cleanupBin } = await buildServer());
  server = await startServer(bin);
  dir = await mkdtemp(join(tmpdir(), 'hilodb-lock-'));
});

after(async () => {
  try {
    await server?.stop();
  } finally {
    await cleanupBin();
    if (dir) await rm(dir, { recursive: true, force: true });
  }
});

// opener starts a process that opens the store at persist; line resolves
// with its first line of output, and release() ends it and waits for it.
function opener(persist) {
  const child = spawn(process.execPath, [join(here, 'fixtures', 'lock-opener.mjs'), server.wsURL, 'lockrace', persist], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise((ok) => child.once('exit', ok));
  const line = new Promise((ok, fail) => {
    let buf = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      buf += chunk;
      const nl = buf.indexOf('\n');
      if (nl >= 0) ok(buf.slice(0, nl));
    });
    child.once('exit', (code) => fail(new Error(`opener exited with ${code} before it said anything`)));
  });
  const release = async () => {
    child.stdin.end();
    await exited;
  };
  return { line, release };
}

// deadPid returns the id of a process that has ended.
function deadPid() {
  return spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
}

test('two processes racing to open one persisted store: one opens it, ids stay unique', { timeout: 300_000 }, async () => {
  const persist = join(dir, 'race.hilodb');
  const seen = new Set();
  const rounds = 12;
  for (let round = 0; round < rounds; round++) {
    const lock = `${persist}.lock`;
    if (round % 3 === 1) await writeFile(lock, `${deadPid()} 0123456789abcdef`);
    if (round % 3 === 2) {
      await writeFile(lock, '');
      const old = new Date(Date.now() - 60_000);
      await utimes(lock, old, old);
    }
    const both = [opener(persist), opener(persist)];
    let lines;
    try {
      lines = await Promise.all(both.map((o) => o.line));
    } finally {
      await Promise.all(both.map((o) => o.release()));
    }
    const opened = lines.filter((l) => l.startsWith('opened '));
    assert.equal(opened.length, 1, `round ${round}: ${JSON.stringify(lines)}`);
    assert.deepEqual(lines.filter((l) => !l.startsWith('opened ')), ['refused locked'], `round ${round}`);
    for (const id of JSON.parse(opened[0].slice(7))) {
      assert.ok(!seen.has(id), `round ${round}: id ${id} handed out twice`);
      seen.add(id);
    }
  }
  assert.equal(seen.size, rounds * 3);
});
