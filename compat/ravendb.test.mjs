// RavenDB's official Node client (the ravendb package, pinned in
// package.json), unchanged, against the real hilodb sync server: sessions,
// every id strategy, identities, optimistic concurrency and HiLo returns;
// then the same documents read back over the websocket by the npm package.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import {
  DeleteDocumentCommand,
  DocumentStore,
  GetDocumentsCommand,
  NextIdentityForOperation,
  PutCommandDataBase,
  PutDocumentCommand,
  SeedIdentityForOperation,
  SingleNodeBatchCommand,
} from 'ravendb';
import { Database } from 'arangojs';

import { openStore } from '../js/node.js';
import { buildServer, startServer } from '../js/test/server.mjs';

class Order {
  constructor(item, qty) {
    this.item = item;
    this.qty = qty;
  }
}

class Company {
  constructor(name) {
    this.name = name;
  }
}

let cleanupBin = async () => {};
let bin;
let server;
const stores = [];

function ravenStore(database = 'shop') {
  const store = new DocumentStore([server.base], database);
  store.conventions.disableTopologyUpdates = false;
  store.initialize();
  stores.push(store);
  return store;
}

// onWebsocket reads ids through hilodb's own client after a sync.
async function onWebsocket(database, ids) {
  const store = await openStore({ url: server.wsURL, database });
  try {
    await store.sync();
    return await Promise.all(ids.map((id) => store.get(id).catch((err) => ({ error: err.code }))));
  } finally {
    await store.close();
  }
}

before(async () => {
  const built = await buildServer();
  cleanupBin = built.cleanup;
  bin = built.bin;
  server = await startServer(bin);
});

after(async () => {
  for (const s of stores) s.dispose();
  await server?.stop();
  await cleanupBin();
});

describe('the ravendb client against hilodb', () => {
  test('a session stores, loads, modifies and saves with HiLo ids; the documents replicate', async () => {
    const store = ravenStore('shop1');
    const session = store.openSession();
    const a = new Order('pen', 1);
    const b = new Order('ink', 2);
    await session.store(a);
    await session.store(b);
    assert.match(a.id, /^orders\/\d+-A$/);
    assert.match(b.id, /^orders\/\d+-A$/);
    assert.notEqual(a.id, b.id);
    await session.saveChanges();

    const s2 = store.openSession();
    const loaded = await s2.load(a.id);
    assert.ok(loaded instanceof Order, 'loaded as an Order through Raven-Node-Type');
    assert.equal(loaded.item, 'pen');
    loaded.qty = 5;
    await s2.saveChanges();
    const cv = s2.advanced.getChangeVectorFor(loaded);
    assert.equal(typeof cv, 'string');
    assert.equal(await store.openSession().load('orders/none'), null);

    const [viaWs, viaWsB] = await onWebsocket('shop1', [a.id, b.id]);
    assert.equal(viaWs.qty, 5);
    assert.equal(viaWs._rev, cv);
    assert.equal(viaWs['@metadata']['@collection'], 'Orders');
    assert.equal(viaWs['@metadata']['Raven-Node-Type'], 'Order');
    assert.equal(viaWsB.item, 'ink');
  });

  test('server-side ids, identities, GUIDs and semantic ids; nextIdentityFor and seedIdentityFor', async () => {
    const store = ravenStore('shop2');
    const session = store.openSession();
    const semantic = new Company('acme');
    const serverSide = new Company('beta');
    const identity = new Company('gamma');
    await session.store(semantic, 'companies/acme');
    await session.store(serverSide, 'companies/');
    await session.store(identity, 'companies|');
    await session.saveChanges();
    // An empty id asks the server for a GUID (a session would make a HiLo
    // id itself, so this goes as a raw batch command).
    const put = new PutCommandDataBase('', null, null, { name: 'delta', '@metadata': { '@collection': 'Companies' } });
    const batch = new SingleNodeBatchCommand(store.conventions, [put]);
    await store.getRequestExecutor().execute(batch);
    const guid = { id: batch.result.results[0]['@id'] };
    assert.equal(semantic.id, 'companies/acme');
    assert.match(serverSide.id, /^companies\/\d{19}-A$/);
    assert.equal(identity.id, 'companies/1');
    assert.match(guid.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

    assert.equal(await store.maintenance.send(new NextIdentityForOperation('companies')), 2);
    assert.equal(await store.maintenance.send(new SeedIdentityForOperation('companies', 100)), 100);
    assert.equal(await store.maintenance.send(new SeedIdentityForOperation('companies', 50)), 100, 'a seed lowers nothing without force');
    const s2 = store.openSession();
    const next = new Company('eps');
    await s2.store(next, 'companies|');
    await s2.saveChanges();
    assert.equal(next.id, 'companies/101');

    const viaWs = await onWebsocket('shop2', [semantic.id, serverSide.id, identity.id, guid.id, next.id]);
    assert.deepEqual(viaWs.map((d) => d.name), ['acme', 'beta', 'gamma', 'delta', 'eps']);
  });

  test('optimistic concurrency: a stale session fails with ConcurrencyException and changes nothing', async () => {
    const store = ravenStore('shop3');
    const s0 = store.openSession();
    const o = new Order('pen', 1);
    await s0.store(o);
    await s0.saveChanges();

    const s1 = store.openSession();
    const s2 = store.openSession();
    s2.advanced.useOptimisticConcurrency = true;
    const x1 = await s1.load(o.id);
    const x2 = await s2.load(o.id);
    x1.qty = 10;
    await s1.saveChanges();
    x2.qty = 20;
    await assert.rejects(s2.saveChanges(), (err) => err.name === 'ConcurrencyException');
    assert.equal((await store.openSession().load(o.id)).qty, 10);

    // A browser's write with hilodb's client is a precondition for RavenDB's too.
    const hilo = await openStore({ url: server.wsURL, database: 'shop3' });
    await hilo.sync();
    const cur = await hilo.get(o.id);
    await hilo.put('Orders', { ...cur, qty: 30 });
    await hilo.sync();
    await hilo.close();
    const s3 = store.openSession();
    s3.advanced.useOptimisticConcurrency = true;
    const x3 = await s3.load(o.id);
    assert.equal(x3.qty, 30);
    x3.qty = 31;
    await s3.saveChanges(); // its change vector is the browser's _rev: accepted
    assert.equal((await store.openSession().load(o.id)).qty, 31);

    // Deletes.
    const s4 = store.openSession();
    await s4.delete(o.id);
    await s4.saveChanges();
    assert.equal(await store.openSession().load(o.id), null);
  });

  test('HiLo: ranges never overlap the websocket clients\' and a disposed store\'s range is never handed out again', async () => {
    const first = ravenStore('shop4');
    const s1 = first.openSession();
    const a = new Order('a', 1);
    await s1.store(a);
    await s1.saveChanges();
    const hilo = await openStore({ url: server.wsURL, database: 'shop4' });
    const fromWs = await hilo.put('orders', { item: 'ws' });
    await hilo.close();
    assert.notEqual(fromWs._id, a.id);

    // Dispose sends the rest of first's range back; hilodb ignores returns
    // over HTTP (nothing in one proves it comes from the leaser), so ids go
    // on past both ranges.
    first.dispose();
    stores.splice(stores.indexOf(first), 1);
    const second = ravenStore('shop4');
    const s2 = second.openSession();
    const b = new Order('b', 2);
    await s2.store(b);
    await s2.saveChanges();
    const n = (id) => Number(/\/(\d+)-A$/.exec(id)[1]);
    assert.ok(n(b.id) > n(fromWs._id) && n(b.id) > n(a.id), `${b.id} after ${a.id} and ${fromWs._id}`);

    // Alone too: a disposed store's range is never handed out again.
    const third = ravenStore('shop5');
    const s3 = third.openSession();
    const c = new Order('c', 3);
    await s3.store(c);
    await s3.saveChanges();
    third.dispose();
    stores.splice(stores.indexOf(third), 1);
    await new Promise((ok) => setTimeout(ok, 200)); // the return is sent as dispose runs
    const fourth = ravenStore('shop5');
    const s4 = fourth.openSession();
    const d = new Order('d', 4);
    await s4.store(d);
    assert.equal(n(d.id), 33, `${d.id} should start the range after ${c.id}'s (1-32)`);
  });

  test('loads of many ids and includes; deleting a missing document is no error', async () => {
    const store = ravenStore('shop6');
    const s1 = store.openSession();
    const c = new Company('acme');
    await s1.store(c, 'companies/acme');
    const o = new Order('pen', 1);
    o.company = 'companies/acme';
    await s1.store(o);
    await s1.saveChanges();

    const s2 = store.openSession();
    const many = await s2.load([o.id, 'companies/acme', 'orders/none']);
    assert.ok(many[o.id] instanceof Order);
    assert.ok(many['companies/acme'] instanceof Company);
    assert.equal(many['orders/none'], null);
    // Ids longer than 1 KB together go as a POST.
    const long = Array.from({ length: 60 }, (_, i) => `orders/${'x'.repeat(30)}-${i}`);
    const viaPost = await store.openSession().load([...long, o.id]);
    assert.equal(Object.keys(viaPost).length, 61);
    assert.equal(viaPost[o.id].item, 'pen');
    assert.equal(viaPost[long[0]], null);

    const s3 = store.openSession();
    const withCompany = await s3.include('company').load(o.id);
    assert.equal((await s3.load(withCompany.company)).name, 'acme');
    assert.equal(s3.advanced.numberOfRequests, 1, 'the included document came with the first request');

    const exists = store.openSession();
    assert.equal(await exists.advanced.exists(o.id), true);
    assert.equal(await exists.advanced.exists('orders/never-stored'), false);

    const s4 = store.openSession();
    s4.delete('orders/never-stored');
    await s4.saveChanges();
  });

  test('single-document commands: PUT, GET and DELETE /docs with change vectors', async () => {
    const store = ravenStore('shop7');
    const exec = (cmd) => store.getRequestExecutor().execute(cmd);
    const put = new PutDocumentCommand('notes/1', null, { text: 'hi', '@metadata': { '@collection': 'Notes', 'Raven-Node-Type': 'Note' } });
    await exec(put);
    assert.equal(put.result.id, 'notes/1');
    const cv = put.result.changeVector;
    await assert.rejects(exec(new PutDocumentCommand('notes/1', 'stale', { text: 'x', '@metadata': { '@collection': 'Notes' } })), (err) => err.name === 'ConcurrencyException');
    const get = new GetDocumentsCommand({ id: 'notes/1', conventions: store.conventions });
    await exec(get);
    const meta = get.result.results[0]['@metadata'];
    assert.deepEqual([meta['@id'], meta['@change-vector'], meta['@collection'], meta['Raven-Node-Type']], ['notes/1', cv, 'Notes', 'Note']);
    const metaOnly = new GetDocumentsCommand({ ids: ['notes/1'], metadataOnly: true, conventions: store.conventions });
    await exec(metaOnly);
    assert.equal(metaOnly.result.results[0].text, undefined);
    await assert.rejects(exec(new DeleteDocumentCommand('notes/1', 'stale')), (err) => err.name === 'ConcurrencyException');
    await exec(new DeleteDocumentCommand('notes/1', cv));
    assert.equal(await store.openSession().load('notes/1'), null);
    // A PUT with "prefix|" takes the identity's next value, "prefix/" the
    // server's sequence, as in a batch.
    const withPipe = new PutDocumentCommand('products|', null, { name: 'p', '@metadata': { '@collection': 'Products' } });
    await exec(withPipe);
    assert.equal(withPipe.result.id, 'products/1');
    const withSlash = new PutDocumentCommand('products/', null, { name: 'q', '@metadata': { '@collection': 'Products' } });
    await exec(withSlash);
    assert.match(withSlash.result.id, /^products\/\d{19}-A$/);
    assert.equal((await store.openSession().load(withSlash.result.id)).name, 'q');
  });

  test('identity seeds: only upwards, unless forced on a server that allows lowering', async () => {
    const store = ravenStore('shop8');
    assert.equal(await store.maintenance.send(new SeedIdentityForOperation('invoices', 100)), 100);
    await assert.rejects(store.maintenance.send(new SeedIdentityForOperation('invoices', 10, true)), /lower/, 'a forced lowering needs -allow-identity-lowering');
    assert.equal(await store.maintenance.send(new SeedIdentityForOperation('invoices', 200, true)), 200);
    assert.equal(await store.maintenance.send(new NextIdentityForOperation('invoices')), 201);

    const lowering = await startServer(bin, ['-allow-identity-lowering']);
    const other = new DocumentStore([lowering.base], 'shop8');
    other.initialize();
    try {
      assert.equal(await other.maintenance.send(new SeedIdentityForOperation('invoices', 100)), 100);
      assert.equal(await other.maintenance.send(new SeedIdentityForOperation('invoices', 10, true)), 10);
      assert.equal(await other.maintenance.send(new NextIdentityForOperation('invoices')), 11);
    } finally {
      other.dispose();
      await lowering.stop();
    }
  });

  test('unserved parts answer at once with a clear error', async () => {
    const store = ravenStore('shop9');
    const s = store.openSession();
    const o = new Order('pen', 1);
    await s.store(o);
    await s.saveChanges();
    const notServed = (err) => /not served/.test(err.message);
    // Collection queries and loadStartingWith are served
    // (ravendb.queries.test.mjs); static indexes and counters are not.
    await assert.rejects(store.openSession().query({ indexName: 'Orders/ByItem' }).all(), notServed);
    await assert.rejects(store.openSession().advanced.revisions.getFor(o.id), notServed);
    await assert.rejects(store.openSession().advanced.attachments.get(o.id, 'a.txt'), notServed);
    await assert.rejects(store.openSession().countersFor(o.id).get('likes'), notServed);
    const patch = store.openSession();
    patch.advanced.increment(o.id, 'qty', 1);
    await assert.rejects(patch.saveChanges(), notServed);
    const cluster = store.openSession({ transactionMode: 'ClusterWide' });
    await cluster.store(new Company('x'), 'companies/x');
    await assert.rejects(cluster.saveChanges(), notServed);
    assert.equal((await store.openSession().load(o.id)).qty, 1, 'a refused batch changed nothing');
    const metrics = await (await fetch(`${server.base}/metrics`)).text();
    assert.match(metrics, /hilodb_http_requests_total\{door="ravendb"\} [1-9]/);
  });

  test('one store, three doors: a session write is a live change with its document; a precondition holds across the HTTP doors', async () => {
    const store = ravenStore('shop10');
    const hilo = await openStore({ url: server.wsURL, database: 'shop10', sync: true, changeFeed: true });
    try {
      const seen = new Map();
      let wake;
      const stop = hilo.watch(({ results }) => {
        for (const r of results) seen.set(r.id, r);
        wake?.();
      });
      const s = store.openSession();
      const o = new Order('live', 7);
      await s.store(o);
      await s.saveChanges();
      const deadline = Date.now() + 10000;
      while (!seen.has(o.id) && Date.now() < deadline) await new Promise((ok) => ((wake = ok), setTimeout(ok, 200)));
      stop();
      const change = seen.get(o.id);
      assert.ok(change, 'the RavenDB write never reached the live change feed');
      assert.equal(change.doc.qty, 7);
      assert.equal(change.rev, s.advanced.getChangeVectorFor(o));

      // The same document through ArangoDB's API: its _rev is the change
      // vector, and a stale one is refused there as here.
      const col = new Database({ url: server.base, databaseName: 'shop10' }).collection('orders');
      const key = o.id.slice('orders/'.length);
      const viaArango = await col.document(key);
      assert.equal(viaArango._rev, change.rev);
      await col.update(key, { qty: 8 });
      const stale = store.openSession();
      stale.advanced.useOptimisticConcurrency = true;
      await stale.store(Object.assign(new Order('live', 9), {}), o.id, change.rev);
      await assert.rejects(stale.saveChanges(), (err) => err.name === 'ConcurrencyException');
      await assert.rejects(col.replace(key, { qty: 10 }, { ifMatch: change.rev }), (err) => err.errorNum === 1200);
      assert.equal((await store.openSession().load(o.id)).qty, 8);
    } finally {
      await hilo.close();
    }
  });

  test('conventions: collection names, id prefixes, the separator and object literals, as the client sets them', async () => {
    const store = new DocumentStore([server.base], 'shop11');
    store.conventions.findCollectionName = (type) => (type === Order ? 'SalesOrders' : `${type.name}s`);
    store.conventions.transformClassCollectionNameToDocumentIdPrefix = (c) => c.toLowerCase();
    store.conventions.identityPartsSeparator = '-';
    store.conventions.findCollectionNameForObjectLiteral = (e) => e.kind;
    store.initialize();
    stores.push(store);
    const s = store.openSession();
    const o = new Order('pen', 1);
    const c = new Company('acme');
    const lit = { kind: 'Things', v: 1 };
    await s.store(o);
    await s.store(c);
    await s.store(lit);
    await s.saveChanges();
    assert.match(o.id, /^salesorders-\d+-A$/);
    assert.match(c.id, /^companys-\d+-A$/);
    assert.match(lit.id, /^things-\d+-A$/);

    const [viaO, viaC, viaLit] = await onWebsocket('shop11', [o.id, c.id, lit.id]);
    assert.deepEqual([viaO._id, viaO['@metadata']['@collection'], viaO['@metadata']['Raven-Node-Type']], [o.id, 'SalesOrders', 'Order']);
    assert.equal(viaC['@metadata']['@collection'], 'Companys');
    assert.deepEqual([viaLit['@metadata']['@collection'], viaLit.v], ['Things', 1]);
    // A second store with the same conventions goes on from its own range.
    const s2 = store.openSession();
    const o2 = new Order('ink', 2);
    await s2.store(o2);
    await s2.saveChanges();
    assert.notEqual(o2.id, o.id);
    assert.ok((await store.openSession().load(o2.id)) instanceof Order);
  });
});
