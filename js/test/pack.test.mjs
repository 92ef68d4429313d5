// The package as users get it: npm pack builds what it ships, and the
// tarball installs into a fresh Node project (its dependencies from the npm
// registry) where a store opens and works, from JavaScript and TypeScript.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const pkgDir = join(here, '..');
let work;

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'hilodb-pack-'));
});

after(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

test('npm pack ships a package that installs and runs in a fresh project', async () => {
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: pkgDir, maxBuffer: 16 << 20 });
  const [packed] = JSON.parse(stdout.slice(stdout.indexOf('[\n'))); // after prepack's own output
  const files = packed.files.map((f) => f.path).sort();
  assert.deepEqual(files, ['dist/hilodb.wasm', 'dist/wasm_exec.js', 'index.d.ts', 'index.js', 'package.json', 'README.md', 'shared.js', 'tabs.js', 'collection.js', 'session.js'].sort());

  const app = join(work, 'app');
  await run('mkdir', ['-p', app]);
  await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  await run('npm', ['install', '--no-audit', '--no-fund', join(work, packed.filename)], { cwd: app, maxBuffer: 16 << 20 });
  assert.ok((await readdir(join(app, 'node_modules'))).includes('ws'), 'ws was not installed with the package');
  await writeFile(
    join(app, 'main.mjs'),
    `import { openStore } from 'hilodb';
const store = await openStore({ url: 'ws://127.0.0.1:9/v1/sync', database: 'app', requestTimeout: 500 });
const doc = await store.put('orders', { _key: 'a', qty: 1 });
const again = await store.get('orders/a');
console.log(JSON.stringify({ id: doc._id, qty: again.qty }));
await store.close();
`,
  );
  const out = await run(process.execPath, ['main.mjs'], { cwd: app });
  assert.deepEqual(JSON.parse(out.stdout.trim()), { id: 'orders/a', qty: 1 });
});
