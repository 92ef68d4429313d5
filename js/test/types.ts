// Compiled (not run) by `npm run typecheck`: the declarations in index.d.ts
// describe the API as the tests use it.

import {
  openStore,
  Store,
  type ChangeEvent,
  type ConflictEvent,
  type HiloError,
  type MergeFunction,
  type Stored,
  type StoreInfo,
  type SyncResult,
  type Version,
} from '../index.js';

interface Order {
  item: string;
  qty: number;
}

export async function useStore(): Promise<void> {
  const store: Store = await openStore({ url: 'ws://127.0.0.1:8080/v1/sync', database: 'shop', token: 'secret' });
  const doc: Stored<Order> = await store.put('orders', { item: 'apple', qty: 3 });
  const many: (Stored<Order> | HiloError)[] = await store.putMany<Order>('orders', [{ item: 'pear', qty: 1 }]);
  const page: { docs: Stored<Order>[]; next: string | null } = await store.list<Order>('orders', { limit: 10, after: null });
  void many;
  void page;
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

  const merge: MergeFunction = (local, remote) => (local.deleted ? remote : { ...remote.doc, merged: true });
  const live = await openStore({ url: 'ws://127.0.0.1:8080/v1/sync', database: 'shop', sync: true, onConflict: merge, persist: 'shop' });
  await openStore({ url: 'ws://127.0.0.1:8080/v1/sync', database: 'shop', onConflict: 'local' });
  const round: SyncResult = await live.sync();
  const pending: number = await live.pending();
  const lost: Version<Order>[] = await live.conflicts<Order>(id);
  const lostQty: number | undefined = lost[0]?.doc?.qty;
  await live.clearConflicts(id);
  await live.flush();
  const off: () => void = live.on('conflict', (e: ConflictEvent) => console.log(e.id, e.kept, e.local.rev, e.remote.deleted));
  live.on('change', (e: ChangeEvent) => console.log(e.changes.map((c) => c.id)));
  live.on('error', (e) => console.log(e.code, e.num));
  off();
  console.log(round.pushed, round.pulled, pending, lostQty);

  // @ts-expect-error no such event
  live.on('changes', () => {});
  // @ts-expect-error sync is a boolean
  await openStore({ url: 'ws://127.0.0.1:8080/v1/sync', database: 'shop', sync: 'yes' });
  // @ts-expect-error not a policy
  await openStore({ url: 'ws://127.0.0.1:8080/v1/sync', database: 'shop', onConflict: 'mine' });
  // @ts-expect-error database is required
  await openStore({ url: 'ws://127.0.0.1:8080/v1/sync' });
  // @ts-expect-error stores come from openStore
  new Store();
  // @ts-expect-error a document is an object
  await store.put('orders', 'text');
}
