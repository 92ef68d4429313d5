// Reopening a persisted store through the npm package in Node, and reading
// every document once right after (each get of a document never read).
// Usage: node reopen-read.mjs write <path> [package]   (100,000 documents)
//        node reopen-read.mjs read <path> [package]    (prints one JSON line)
// where package is the path of another build's js/index.js, to compare two
// builds in one session over the same file.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [mode, path, other] = process.argv.slice(2);
if ((mode !== 'write' && mode !== 'read') || !path) {
  console.error('usage: node reopen-read.mjs write|read <path> [package]');
  process.exit(2);
}
const pkg = other ? pathToFileURL(resolve(other)).href : '../../js/node.js';
const { openStore } = await import(pkg);
const docs = 100000;
// Nothing listens on port 9: the store opens offline.
const options = { url: 'ws://127.0.0.1:9/v1/sync', database: 'reopen', requestTimeout: 1000, persist: resolve(path) };

if (mode === 'write') {
  const store = await openStore({ ...options, durability: 'relaxed' });
  for (let i = 0; i < docs; i += 5000) {
    await store.putMany('orders', Array.from({ length: 5000 }, (_, j) => ({ _key: `k${i + j}`, total: i + j, item: 'widget' })));
  }
  await store.close();
} else {
  const t0 = performance.now();
  const store = await openStore(options);
  const t1 = performance.now();
  for (let i = 0; i < docs; i++) await store.get(`orders/k${i}`);
  const t2 = performance.now();
  await store.close();
  console.log(JSON.stringify({ docs, openMs: +(t1 - t0).toFixed(1), readAllMs: +(t2 - t1).toFixed(1) }));
}
