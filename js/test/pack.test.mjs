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
  assert.deepEqual(files, ['dist/hilodb.wasm', 'dist/wasm_exec.js', 'index.d.ts', 'index.js', 'node.js', 'store.js', 'events.js', 'options.js', 'platform.js', 'files.js', 'package.json', 'README.md', 'shared.js', 'host.js', 'tabs.js', 'token.js', 'collection.js', 'session.js', 'watch.js', 'persist.js', 'errors.js', 'closing.js', 'network.js', 'shell.js', 'sw.js', 'shell.d.ts', 'group.js', 'cache.js', 'opfs.js', 'writer.js', 'runtime.js', 'query.js', 'documentquery.js'].sort());

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
await store.close();
// A persisted store's files come with the package's Node entry.
const open = () => openStore({ url: 'ws://127.0.0.1:9/v1/sync', database: 'app', persist: 'kept', sync: false });
const kept = await open();
await kept.put('orders', { _key: 'k', qty: 9 });
await kept.close();
const reopened = await open();
const back = await reopened.get('orders/k');
await reopened.close();
console.log(JSON.stringify({ id: doc._id, qty: again.qty, kept: back.qty }));
`,
  );
  const out = await run(process.execPath, ['main.mjs'], { cwd: app });
  assert.deepEqual(JSON.parse(out.stdout.trim()), { id: 'orders/a', qty: 1, kept: 9 });

  // The same project in TypeScript, strict: the declarations the tarball
  // ships type-check a program that uses the API, the program runs, and a
  // program that misuses it does not compile.
  await writeFile(join(app, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
  await run('mkdir', ['-p', join(app, 'src')]);
  await writeFile(join(app, 'src', 'main.ts'), typedMain);
  await run(process.execPath, [tsc, '-p', app], { cwd: app });
  const typed = await run(process.execPath, [join('out', 'main.js')], { cwd: app });
  assert.deepEqual(JSON.parse(typed.stdout.trim()), { id: 'orders/b', qty: 2, session: 'LineItems', code: 'conflict', key: 'k1' });

  await writeFile(join(app, 'src', 'main.ts'), misusedMain);
  await assert.rejects(run(process.execPath, [tsc, '-p', app], { cwd: app }), (err) => {
    assert.match(err.stdout, /main\.ts\(\d+,\d+\): error TS\d+/);
    return true;
  });
});

const tsc = join(pkgDir, 'node_modules', 'typescript', 'bin', 'tsc');

const tsconfig = {
  compilerOptions: { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', outDir: 'out', rootDir: 'src', types: [], lib: ['es2022', 'dom'] },
  include: ['src'],
};

const typedMain = `import { openStore, type HiloError, type Stored } from 'hilodb';

interface Order {
  item: string;
  qty: number;
}

class LineItem {
  constructor(public item: string) {}
}

const store = await openStore({ url: 'ws://127.0.0.1:9/v1/sync', database: 'app', requestTimeout: 500 });
const doc: Stored<Order> = await store.put<Order>('orders', { _key: 'b', item: 'pen', qty: 2 } as Order & { _key: string });
const again = await store.get<Order>(doc._id);
let code: string = '';
try {
  await store.put<Order>('orders', { ...again, qty: 3 }, { rev: '_stale_' });
} catch (err) {
  code = (err as HiloError).code;
}
const session = store.openSession();
const o = new LineItem('ink');
await session.store(o, 'lineItems/x');
await session.saveChanges();
const users = await store.createCollection<{ name: string }>('users', { keyOptions: { type: 'traditional' } });
const saved = await users.save({ _key: 'k1', name: 'ada' } as { name: string; _key: string });
console.log(JSON.stringify({ id: again._id, qty: again.qty, session: store.conventions.findCollectionName(LineItem), code, key: saved._key }));
await store.close();
`;

const misusedMain = `import { openStore } from 'hilodb';

const store = await openStore({ url: 'ws://127.0.0.1:9/v1/sync', database: 'app' });
const n: number = (await store.get('orders/1-A'))._rev;
await store.put('orders', 42);
`;
