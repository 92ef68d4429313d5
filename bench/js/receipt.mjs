// What a receipt costs a put in Node: sequential awaited puts into a
// persisted store (strict durability, offline, ids from _key), plain and
// with a receipt (the internal _putReceipted a shared store's host calls),
// in one store, after 2,000 to warm up. Prints one JSON line of
// microseconds per put. Usage: node receipt.mjs [puts]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { openStore } from '../../js/node.js';

const n = Number(process.argv[2] || 10000);
const dir = await mkdtemp(join(tmpdir(), 'hilodb-receipt-'));
try {
  // Nothing listens on port 9: the store opens offline.
  const store = await openStore({ url: 'ws://127.0.0.1:9/v1/sync', database: 'bench', requestTimeout: 1000, persist: join(dir, 'bench.hilodb') });
  const doc = (k, i) => ({ _key: `${k}${i}`, total: i, item: 'widget' });
  for (let i = 0; i < 2000; i++) await store.put('orders', doc('w', i));
  const time = async (fn) => {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await fn(i);
    return +(((performance.now() - t0) * 1000) / n).toFixed(1);
  };
  const plainUs = await time((i) => store.put('orders', doc('p', i)));
  const receiptUs = await time((i) => store._putReceipted(`tab/link/${i % 64}`, i, 'orders', doc('r', i)));
  await store.close();
  console.log(JSON.stringify({ puts: n, plainUs, receiptUs }));
} finally {
  await rm(dir, { recursive: true, force: true });
}
