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
  type DocumentError,
  type DocumentResult,
  type FeedEntry,
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

  // Sessions, collections and the change feed.
  class OrderEntity {
    constructor(public item: string) {}
  }
  store.conventions.registerEntityType(OrderEntity);
  const session = store.openSession({ useOptimisticConcurrency: true });
  const entity = new OrderEntity('pen');
  await session.store(entity);
  await session.store(new OrderEntity('ink'), 'orders/ink', '');
  await session.store(new OrderEntity('cap'), 'orders/cap', { changeVector: rev });
  await session.saveChanges();
  const loaded: OrderEntity | null = await session.load<OrderEntity>('orders/ink', OrderEntity);
  const loadedMany: Record<string, OrderEntity | null> = await session.load<OrderEntity>(['orders/ink'], { documentType: OrderEntity });
  const entityId: string | null = session.advanced.getDocumentId(entity);
  const users = await store.createCollection<Order>('users', { keyOptions: { type: 'autoincrement', increment: 5, offset: 10, allowUserKeys: false } });
  const saved: DocumentResult<Order> = await users.save({ item: 'a', qty: 1 }, { returnNew: true, overwriteMode: 'update', keepNull: false });
  const oldRev: string | undefined = saved._oldRev;
  const each: (DocumentResult<Order> | DocumentError)[] = await users.saveAll([{ item: 'b', qty: 2 }]);
  const maybe: Stored<Order> | null = await users.document('10', { graceful: true, ifMatch: saved._rev });
  const counted: { count: number } = await users.count();
  const feed: { results: FeedEntry<Order>[]; last: number; head: number } = await store.changes<Order>({ since: 0, limit: 10 });
  const stop: () => void = store.watch<Order>(({ results }) => console.log(results.map((r) => r.doc?.qty)), { since: feed.last });
  stop();
  console.log(loaded, loadedMany, entityId, oldRev, each, maybe, counted);
  // @ts-expect-error not an overwrite mode
  await users.save({ item: 'c', qty: 3 }, { overwriteMode: 'merge' });
  // @ts-expect-error not a key generator
  await store.createCollection('x', { keyOptions: { type: 'snowflake' } });
  // @ts-expect-error openSession takes useOptimisticConcurrency only
  store.openSession({ noTracking: true });
}
