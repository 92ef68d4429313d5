// A RavenDB-style session: entities of a class go to its pluralized
// collection with HiLo ids given at store time, and saveChanges() writes
// them all in one transaction. Run: HILODB_URL=ws://… node sessions.mjs
import { openStore } from 'hilodb';

class Order {
  constructor(item, qty) {
    this.item = item;
    this.qty = qty;
  }
}

const store = await openStore({ url: process.env.HILODB_URL, database: `sessions${Date.now()}` });
store.conventions.registerEntityType(Order);
const session = store.openSession();
const order = new Order('apple', 3);
await session.store(order);
console.log(order.id.replace(/\d+/, 'N')); // given at store time
await session.saveChanges();
const loaded = await store.openSession().load(order.id);
console.log(loaded instanceof Order, loaded.qty);
console.log((await store.get(order.id))['@metadata']['@collection']);
await store.close();
// Output:
// orders/N-A
// true 3
// Orders
