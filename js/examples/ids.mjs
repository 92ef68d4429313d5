// Every id strategy of RavenDB, from one store: HiLo ids made locally from a
// leased range, semantic ids, a UUID, this node's sequence, and a
// cluster-wide identity from the server. Run: HILODB_URL=ws://… node ids.mjs
import { openStore } from 'hilodb';

const store = await openStore({ url: process.env.HILODB_URL, database: `ids${Date.now()}` });
const hilo = await store.put('orders', { item: 'apple' });
console.log(hilo._id.replace(/\d+/, 'N')); // orders/1-A: no round trip per document
const semantic = await store.put('orders', { _id: 'orders/2024-001', item: 'pear' });
console.log(semantic._id);
const uuid = await store.put('orders', { _id: '', item: 'plum' });
console.log(/^[0-9a-f-]{36}$/.test(uuid._id));
const seq = await store.put('companies', { _id: 'companies/', name: 'acme' });
console.log(/^companies\/\d{19}-/.test(seq._id));
const identity = await store.put('invoices', { _id: 'invoices|', total: 10 });
console.log(identity._id);
await store.close();
// Output:
// orders/N-A
// orders/2024-001
// true
// true
// invoices/1
