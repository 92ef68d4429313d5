// RavenDB's session query: conditions, a subclause, order and paging; the
// results are instances of the class, tracked by the session.
// Run: HILODB_URL=ws://… node sessionquery.mjs
import { openStore } from 'hilodb';

class Product {
  constructor(name, price, category) {
    Object.assign(this, { name, price, category });
  }
}

const store = await openStore({ url: process.env.HILODB_URL, database: `sq${Date.now()}` });
store.conventions.registerEntityType(Product);
const session = store.openSession();
for (const [name, price, category] of [['tea', 4, 'drinks'], ['coffee', 7, 'drinks'], ['cake', 3, 'food'], ['bread', 2, 'food'], ['cocoa', 5, 'drinks']]) {
  await session.store(new Product(name, price, category));
}
await session.saveChanges();

const s = store.openSession();
const query = s
  .query(Product)
  .whereEquals('category', 'drinks')
  .andAlso()
  .openSubclause()
  .whereLessThan('price', 5)
  .orElse()
  .whereStartsWith('name', 'co')
  .closeSubclause()
  .orderByDescending('price')
  .take(2);
console.log(JSON.stringify(query.toQuery()));
const top = await query.all();
console.log(top.map((p) => `${p.name} ${p.price} ${p instanceof Product}`).join(', '));

top[1].price = 6; // tracked: saveChanges stores the edit
await s.saveChanges();
console.log((await store.openSession().query(Product).whereEquals('name', 'cocoa').single()).price);
console.log(await s.query(Product).whereBetween('price', 3, 6).count(), await s.query(Product).whereIn('name', ['milk']).any());
await store.close();
// Output:
// {"selector":{"$and":[{"category":{"$eq":"drinks"}},{"$or":[{"price":{"$lt":5}},{"name":{"$regex":"^co"}}]}]},"sort":[{"price":"desc"}],"limit":2}
// coffee 7 true, cocoa 5 true
// 6
// 3 false
