// Compiled (not run) by `npm run typecheck`: the declarations in index.d.ts
// describe the API as the tests use it.

import {
  openStore,
  Store,
  type ChangeEvent,
  type ConflictEvent,
  HiloError,
  type CloseResult,
  type MergeFunction,
  type Stored,
  type StoreInfo,
  type SyncResult,
  type Version,
  type DocumentError,
  type DocumentResult,
  type FeedEntry,
  type FindQuery,
  type FindResult,
  type IndexInfo,
  type LiveQuery,
  type LiveResult,
  type QueryPlan,
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
  const offPending = store.on('pending', (e) => {
    const n: number = e.pending;
    void n;
  });
  offPending();
  const closed: CloseResult = await store.close({ timeout: 1000 });
  const left: number = closed.pending + closed.lost;
  console.log(left);
  try {
    await store.get(id);
  } catch (e) {
    if (!(e instanceof HiloError)) throw e;
    const err: HiloError = e;
    const num: number = err.num;
    const code: string = err.code;
    const message: string = err.message;
    console.log(num, code, message);
  }
  console.log(key, rev, qty, collection, node, connected, deleted);

  const merge: MergeFunction = (local, remote) => (local.deleted ? remote : { ...remote.doc, merged: true });
  const live = await openStore({ url: 'ws://127.0.0.1:8080/v1/sync', database: 'shop', sync: true, onConflict: merge, persist: 'shop' });
  await openStore({ url: 'ws://127.0.0.1:8080/v1/sync', database: 'shop', onConflict: 'local' });
  await openStore({ url: 'ws://127.0.0.1:8080/v1/sync', database: 'shop', sync: false, persist: false });
  await openStore({ url: 'ws://127.0.0.1:8080/v1/sync', database: 'user-ann', token: async () => 'a.signed.jwt' });
  // @ts-expect-error a token function returns a Promise of a string
  await openStore({ url: 'ws://127.0.0.1:8080/v1/sync', database: 'user-ann', token: () => 42 });
  const round: SyncResult = await live.sync();
  const pending: number = await live.pending();
  const lost: Version<Order>[] = await live.conflicts<Order>(id);
  const open: string[] = await live.conflicts();
  void open;
  const lostQty: number | undefined = lost[0]?.doc?.qty;
  const wonOver: boolean | undefined = lost[0]?.won;
  void wonOver;
  await live.clearConflicts(id);
  await live.flush();
  const off: () => void = live.on('conflict', (e: ConflictEvent) => console.log(e.id, e.kept, e.won === true, e.local.rev, e.remote.deleted));
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

export async function useQueries(store: Store): Promise<void> {
  const made: { result: 'created' | 'exists'; name: string } = await store.createIndex('orders', { fields: ['item', { qty: 'asc' }], name: 'by-item' });
  const { indexes }: { indexes: IndexInfo[] } = await store.getIndexes('orders');
  const fields: { [f: string]: 'asc' }[] = indexes[0].def.fields;
  const page: FindResult<Order> = await store.find<Order>('orders', { selector: { item: 'apple', qty: { $gt: 1 } }, sort: [{ qty: 'desc' }], limit: 20 });
  const qty: number = page.docs[0].qty;
  const next = await store.find<Order>('orders', { selector: {}, bookmark: page.bookmark, fields: ['item'] });
  const plan: QueryPlan = await store.explain('orders', { selector: { item: 'apple' }, use_index: 'by-item' });
  const used: string = plan.index;
  const n: number = await store.count('orders', { selector: { qty: { $lt: 3 } } });
  const live: LiveQuery = store.watchQuery<Order>('orders', { selector: { qty: { $gte: 1 } } }, (r: LiveResult<Order>) => {
    for (const c of r.changes) {
      const kind: 'added' | 'removed' | 'changed' | 'moved' = c.type;
      const item: string | undefined = c.doc?.item;
      void kind;
      void item;
    }
    const first: number | undefined = r.docs[0]?.qty;
    void first;
  });
  await live.ready;
  live.close();
  const dropped: { ok: true } = await store.deleteIndex('orders', made.name);
  void fields;
  void qty;
  void next;
  void used;
  void n;
  void dropped;
  // @ts-expect-error a query needs a selector
  await store.find('orders', { limit: 3 });
}

class Product {
  name = '';
  price = 0;
}

export async function useSessionQueries(store: Store): Promise<void> {
  const session = store.openSession();
  const cheap: Product[] = await session.query(Product).whereLessThan('price', 10).orderBy('name').take(5).all();
  const one: Product | null = await session.query(Product).whereEquals('name', 'tea').firstOrNull();
  const named = await session.query<Product>({ collection: 'Products' }).whereStartsWith('name', 'te').not().whereExists('gone').single();
  const price: number = named.price;
  const n: number = await session.query(Product).openSubclause().whereIn('name', ['a', 'b']).orElse().whereBetween('price', 1, 2).closeSubclause().count();
  const any: boolean = await session.query(Product).whereNotEquals('price', 0).andAlso().whereGreaterThanOrEqual('price', 1).any();
  const names: { name: string }[] = await session.query(Product).orderByDescending('price').skip(1).selectFields<{ name: string }>('name').all();
  const q: FindQuery = session.query(Product).whereGreaterThan('price', 3).whereLessThanOrEqual('price', 9).toQuery();
  void cheap;
  void one;
  void price;
  void n;
  void any;
  void names;
  void q;
}

export async function usePlan(store: Store): Promise<void> {
  const plan: QueryPlan = await store.explain('orders', { selector: { item: 'apple' } });
  const order: string[] | null = plan.sort;
  void order;
}
