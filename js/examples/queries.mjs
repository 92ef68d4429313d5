// Queries in PouchDB's shapes: an index, find with a sort, pages by
// bookmark, projection, explain, count, and a query refused.
// Run: HILODB_URL=ws://… node queries.mjs
import { openStore } from 'hilodb';

const store = await openStore({ url: process.env.HILODB_URL, database: `queries${Date.now()}` });
await store.putMany('todos', [
  { _key: 'a', title: 'buy milk', done: false, due: '2026-05-02', tags: ['home'] },
  { _key: 'b', title: 'file taxes', done: false, due: '2026-04-30', tags: ['home', 'money'] },
  { _key: 'c', title: 'call Ann', done: true, due: '2026-04-01', tags: [] },
  { _key: 'd', title: 'fix bike', done: false, due: '2026-06-15', tags: ['home'] },
  { _key: 'e', title: 'send invoice', done: false, tags: ['money'] },
]);
console.log(await store.createIndex('todos', { fields: ['done', 'due'] }));

// Open todos, latest due date first, two at a time.
const query = { selector: { done: false, due: { $exists: true } }, sort: [{ due: 'desc' }], limit: 2, fields: ['title', 'due'] };
let page = await store.find('todos', query);
console.log(page.docs.map((d) => `${d.title} (${d.due})`).join(', '));
page = await store.find('todos', { ...query, bookmark: page.bookmark });
console.log(page.docs.map((d) => `${d.title} (${d.due})`).join(', '), page.bookmark === undefined);

const plan = await store.explain('todos', query);
console.log(plan.index, plan.equality, plan.sortedByIndex, plan.descending);

console.log(await store.count('todos', { selector: { tags: { $all: ['money'] } } }));
console.log((await store.find('todos', { selector: { title: { $regex: /^F/i } }, fields: ['title'] })).docs.map((d) => d.title).join(', '));

try {
  await store.find('todos', { selector: { due: { $before: '2026-05-01' } } });
} catch (err) {
  console.log(err.code, err.num, err.message);
}
await store.close();
// Output:
// { result: 'created', name: 'idx-done-due' }
// fix bike (2026-06-15), buy milk (2026-05-02)
// file taxes (2026-04-30) true
// idx-done-due 1 true true
// 2
// file taxes, fix bike
// bad_query 1912 bad query: unknown operator "$before"
