// _rev is a precondition against lost updates: a write based on an old
// version is refused with conflict (1200) and changes nothing.
// Run: HILODB_URL=ws://… node preconditions.mjs
import { openStore } from 'hilodb';

const store = await openStore({ url: process.env.HILODB_URL, database: `rev${Date.now()}` });
const v1 = await store.put('orders', { _key: 'a', qty: 1 });
await store.put('orders', { ...v1, qty: 2 }); // based on v1: accepted
try {
  await store.put('orders', { ...v1, qty: 3 }); // also based on v1: refused
} catch (err) {
  console.log(err.code, err.num);
}
console.log((await store.get('orders/a')).qty);
await store.close();
// Output:
// conflict 1200
// 2
