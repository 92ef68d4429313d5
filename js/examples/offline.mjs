// Offline first: a persisted store keeps its HiLo range, so ids go on
// without the server, every write is on disk when it resolves, and what was
// written offline reaches the server when it is back.
// Run: HILODB_URL=ws://… node offline.mjs
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { openStore } from 'hilodb';

const database = `offline${Date.now()}`;
const persist = join(await mkdtemp(join(tmpdir(), 'hilodb-example-')), 'store');
let store = await openStore({ url: process.env.HILODB_URL, database, persist });
await store.put('orders', { n: 1 }); // leases a range while online
await store.close();

// Nothing listens on port 9: the store opens offline, from its file.
store = await openStore({ url: 'ws://127.0.0.1:9/v1/sync', database, persist, requestTimeout: 1000 });
const offline = await store.put('orders', { n: 2 }); // from the kept range
console.log((await store.info()).connected, offline._id.endsWith('-A'));
console.log(await store.pending());
console.log(await store.close()); // kept in the file: none lost

// Back online, the store pushes what it kept; close waits for it.
store = await openStore({ url: process.env.HILODB_URL, database, persist });
console.log(await store.close());

// Another device reads it.
const other = await openStore({ url: process.env.HILODB_URL, database });
await other.sync();
console.log((await other.get(offline._id)).n);
await other.close();
// Output:
// false true
// 1
// { pending: 1, lost: 0 }
// { pending: 0, lost: 0 }
// 2
