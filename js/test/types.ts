// Compiled (not run) by `npm run typecheck`: the declarations in index.d.ts
// describe the API as the tests use it.

import { openStore, Store, type HiloError, type Stored, type StoreInfo } from '../index.js';

interface Order {
  item: string;
  qty: number;
}

export async function useStore(): Promise<void> {
  const store: Store = await openStore({ url: 'ws://127.0.0.1:8080/v1/sync', database: 'shop', token: 'secret' });
  const doc: Stored<Order> = await store.put('orders', { item: 'apple', qty: 3 });
  const id: string = doc._id;
  const key: string = doc._key;
  const rev: string = doc._rev;
  const qty: number = doc.qty;
  const again = await store.get<Order>(id);
  const collection: string = again['@metadata']['@collection'];
  const info: StoreInfo = await store.info();
  const node: string = info.node;
  const connected: boolean = info.connected;
  const deleted: void = await store.delete(id);
  await store.close();
  try {
    await store.get(id);
  } catch (e) {
    const err = e as HiloError;
    const num: number = err.num;
    const code: string = err.code;
    const message: string = err.message;
    console.log(num, code, message);
  }
  console.log(key, rev, qty, collection, node, connected, deleted);

  // @ts-expect-error database is required
  await openStore({ url: 'ws://127.0.0.1:8080/v1/sync' });
  // @ts-expect-error stores come from openStore
  new Store();
  // @ts-expect-error a document is an object
  await store.put('orders', 'text');
}
