// A live query: its first result, then what each write changed.
// Run: HILODB_URL=ws://… node livequery.mjs
import { openStore } from 'hilodb';

const store = await openStore({ url: process.env.HILODB_URL, database: `live${Date.now()}` });
await store.put('todos', { _key: 'a', title: 'buy milk', done: false, rank: 2 });
await store.put('todos', { _key: 'b', title: 'call Ann', done: false, rank: 1 });

let seen = 0;
let wake = () => {};
const next = () => new Promise((resolve) => (wake = resolve));
let waiting = next();
const live = store.watchQuery('todos', { selector: { done: false }, sort: ['rank'] }, ({ docs, changes }) => {
  const what = changes.map((c) => `${c.type} ${c.id}${c.index >= 0 ? ` at ${c.index}` : ''}`).join('; ');
  console.log(`${++seen}: [${docs.map((d) => d.title).join(', ')}] ${what}`);
  wake();
});
await waiting;

for (const write of [
  () => store.put('todos', { _key: 'c', title: 'fix bike', done: false, rank: 0 }),
  async () => store.put('todos', { ...(await store.get('todos/a')), done: true }),
  async () => store.put('todos', { ...(await store.get('todos/b')), rank: 5 }),
]) {
  waiting = next();
  await write();
  await waiting;
}
live.close();
await store.close();
// Output:
// 1: [call Ann, buy milk] added todos/b at 0; added todos/a at 1
// 2: [fix bike, call Ann, buy milk] added todos/c at 0
// 3: [fix bike, call Ann] removed todos/a
// 4: [fix bike, call Ann] changed todos/b at 1
