// End-to-end tests of the npm package in Node against the real sync server.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { HiloError, openStore } from '../node.js';
import { buildServer, freePort, startServer } from './server.mjs';

const hiloID = /^orders\/\d+-A$/;

// rejectsWith asserts that promise rejects with a HiloError of the given
// code and number.
async function rejectsWith(promise, code, num) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof HiloError, `got ${err}, want a HiloError`);
    assert.equal(err.name, 'HiloError');
    assert.equal(err.code, code, `code of ${err.message}`);
    assert.equal(err.num, num, `num of ${err.message}`);
    return true;
  });
}

let bin;
let cleanupBin = async () => {};

before(async () => {
  ({ bin, cleanup: cleanupBin } = await buildServer());
});

after(async () => {
  await cleanupBin();
});

describe('against a server without tokens', () => {
  let server;
  let store;
  const extra = [];

  before(async () => {
    server = await startServer(bin);
    store = await openStore({ url: server.wsURL, database: 'shop' });
  });

  after(async () => {
    try {
      await Promise.allSettled([store?.close(), ...extra.map((s) => s.close())]);
    } finally {
      await server?.stop();
    }
  });

  test('put gives a HiLo id, a _key and a _rev', async () => {
    const doc = await store.put('orders', { item: 'apple', qty: 3, nested: { a: [1, 2] } });
    assert.match(doc._id, hiloID);
    assert.equal(doc._key, doc._id.slice('orders/'.length));
    assert.equal(typeof doc._rev, 'string');
    assert.ok(doc._rev.length > 11, `_rev ${doc._rev} too short`);
    assert.equal(doc['@metadata']['@collection'], 'orders');
    assert.equal(doc.item, 'apple');
    assert.equal(doc.qty, 3);
    assert.deepEqual(doc.nested, { a: [1, 2] });
  });

  test('revisions carry the node tag the server gave this client', async () => {
    const info = await store.info();
    assert.equal(info.serverTag, 'A');
    assert.equal(info.connected, true);
    assert.match(info.node, /^[A-Z0-9]{1,8}$/);
    const doc = await store.put('orders', { x: 1 });
    assert.ok(doc._rev.endsWith(info.node), `_rev ${doc._rev} does not end in node ${info.node}`);
  });

  test('get returns the stored document', async () => {
    const stored = await store.put('orders', { item: 'pear', tags: ['a', 'b'], price: 1.5 });
    const got = await store.get(stored._id);
    assert.deepEqual(got, stored);
  });

  test('a JSON string is stored as the document it encodes', async () => {
    const stored = await store.put('orders', { text: '{"not":"parsed"}' });
    assert.equal((await store.get(stored._id)).text, '{"not":"parsed"}');
  });

  test('500 concurrent puts get distinct ids', async () => {
    const docs = await Promise.all(Array.from({ length: 500 }, (_, i) => store.put('orders', { i })));
    const ids = docs.map((d) => d._id);
    for (const id of ids) assert.match(id, hiloID);
    assert.equal(new Set(ids).size, 500);
    // Each document went to its own id.
    const got = await Promise.all(ids.map((id) => store.get(id)));
    assert.deepEqual(
      got.map((d) => d.i),
      docs.map((d) => d.i),
    );
  });

  test('puts made together that must wait go to Go as one write, each settled with its own document or error', async () => {
    const v1 = await store.put('orders', { _key: 'together', n: 1 });
    const v2 = await store.put('orders', { ...v1, n: 2 });
    // More than a range holds at first: most of these wait for a lease,
    // and those made after the first that waits go together.
    const calls = [];
    for (let i = 0; i < 3000; i++) {
      if (i === 1000) calls.push(store.put('orders', { _key: 'not a key!' }));
      else if (i === 1500) calls.push(store.put('orders', { ...v1, n: 3 })); // a stale _rev
      else if (i === 2000) calls.push(store.put('orders', { _key: 'together', n: 4 }, { rev: v2._rev }));
      else if (i === 2500) calls.push(store.put('other', { i })); // another collection
      else if (i === 2700) calls.push(store.put('orders', { toJSON: () => undefined })); // no JSON text
      else if (i === 2800) calls.push(store.put('orders', { toJSON: () => 5 })); // not an object
      else calls.push(store.put('orders', { i }));
    }
    const settled = await Promise.allSettled(calls);
    const codes = settled.map((r) => (r.status === 'fulfilled' ? 'ok' : r.reason.code));
    assert.equal(codes[1000], 'illegal_key');
    assert.equal(codes[1500], 'conflict');
    assert.equal(codes[2000], 'ok');
    assert.deepEqual(
      codes.filter((c) => c !== 'ok'),
      ['illegal_key', 'conflict', 'bad_json', 'bad_json'],
    );
    const docs = settled.filter((r) => r.status === 'fulfilled').map((r) => r.value);
    assert.equal(new Set(docs.map((d) => d._id)).size, docs.length, 'an id was given twice');
    assert.equal(settled[2500].value._id.startsWith('other/'), true);
    assert.equal((await store.get('orders/together')).n, 4);
    for (const [i, r] of settled.entries()) {
      if (r.status !== 'fulfilled' || r.value.i === undefined) continue;
      assert.equal(r.value.i, i);
      assert.equal((await store.get(r.value._id)).i, i);
    }
  });

  test('every write gets a new _rev', async () => {
    const first = await store.put('orders', { _key: 'rev-check', v: 1 });
    const second = await store.put('orders', { _key: 'rev-check', v: 2 });
    assert.equal(first._id, 'orders/rev-check');
    assert.notEqual(first._rev, second._rev);
    assert.equal((await store.get('orders/rev-check')).v, 2);
  });

  test('an illegal key rejects with illegal_key 1221', async () => {
    await rejectsWith(store.put('orders', { _key: 'a b' }), 'illegal_key', 1221);
    await rejectsWith(store.put('orders', { _key: 'x/y' }), 'illegal_key', 1221);
  });

  test('an illegal collection name rejects with illegal_name 1208', async () => {
    await rejectsWith(store.put('bad name', {}), 'illegal_name', 1208);
  });

  test('a document that is not a JSON object rejects with bad_json 600', async () => {
    await rejectsWith(store.put('orders', [1, 2]), 'bad_json', 600);
    await rejectsWith(store.put('orders', undefined), 'bad_json', 600);
    const cyclic = {};
    cyclic.self = cyclic;
    await rejectsWith(store.put('orders', cyclic), 'bad_json', 600);
  });

  test('bad arguments reject with bad_request 400', async () => {
    await rejectsWith(store.put(42, {}), 'bad_request', 400);
    await rejectsWith(store.get(undefined), 'bad_request', 400);
  });

  test('ids ending in | are identities from the server', async () => {
    const first = await store.put('companies', { _id: 'companies|', name: 'one' });
    const second = await store.put('companies', { _id: 'companies|', name: 'two' });
    assert.equal(first._id, 'companies/1');
    assert.equal(second._id, 'companies/2');
  });

  test('an id ending in | never lands on a document another client wrote', async () => {
    // Written through RavenDB's door, where the identity has not reached.
    for (const id of ['clients/1', 'clients/2']) {
      const res = await fetch(`${server.base}/databases/shop/docs?id=${id}`, { method: 'PUT', body: '{"by":"other"}' });
      assert.equal(res.status, 201);
    }
    await store.sync();
    assert.equal((await store.get('clients/1')).by, 'other');
    const mine = await store.put('clients', { _id: 'clients|', by: 'me' });
    assert.equal(mine._id, 'clients/3');
    await store.sync();
    assert.equal((await store.get('clients/1')).by, 'other');
    const res = await fetch(`${server.base}/databases/shop/docs?id=clients/1`);
    assert.equal((await res.json()).Results[0].by, 'other', 'clients/1 on the server');
  });

  test('get of a missing id rejects with not_found 1202', async () => {
    await rejectsWith(store.get('orders/does-not-exist'), 'not_found', 1202);
  });

  test('delete removes a document', async () => {
    const doc = await store.put('orders', { gone: true });
    assert.equal(await store.delete(doc._id), undefined);
    await rejectsWith(store.get(doc._id), 'not_found', 1202);
    await rejectsWith(store.delete(doc._id), 'not_found', 1202);
  });

  test('a _rev is a precondition: a stale or made-up one cannot overwrite', async () => {
    const v1 = await store.put('orders', { _key: 'rev-a', n: 1 });
    const v2 = await store.put('orders', { ...v1, n: 2 });
    await rejectsWith(store.put('orders', { ...v1, n: 3 }), 'conflict', 1200);
    await rejectsWith(store.put('orders', { _key: 'rev-a', _rev: '_made-up---', n: 3 }), 'conflict', 1200);
    await rejectsWith(store.put('orders', { _key: 'rev-a', n: 3 }, { rev: v1._rev }), 'conflict', 1200);
    assert.equal((await store.get('orders/rev-a')).n, 2);
    const v3 = await store.put('orders', { _key: 'rev-a', n: 3 }, { ifMatch: v2._rev });
    assert.equal(v3.n, 3);
    const v4 = await store.put('orders', { ...v1, n: 4 }, { ignoreRevs: true });
    assert.equal(v4.n, 4);
    await rejectsWith(store.put('orders', { n: 5 }, { overwriteMode: 'conflict' }), 'bad_request', 400);
    await rejectsWith(store.put('orders', { n: 5 }, { rev: 7 }), 'bad_request', 400);
    // putMany too: the stale one fails alone.
    const [stale, fresh] = await store.putMany('orders', [{ ...v1, n: 9 }, { ...v4, n: 5 }]);
    assert.ok(stale instanceof Error && stale.code === 'conflict' && stale.num === 1200, `stale in putMany: ${stale}`);
    assert.equal(fresh.n, 5);
    assert.equal((await store.get('orders/rev-a')).n, 5);
  });

  test('putMany stores many documents in one call, with per-document results', async () => {
    const docs = [{ i: 0 }, { _key: 'bad key!' }, { _key: 'pm-2', i: 2 }, { i: 3 }];
    const res = await store.putMany('orders', docs);
    assert.equal(res.length, 4);
    assert.match(res[0]._id, hiloID);
    assert.ok(res[1] instanceof Error);
    assert.equal(res[1].code, 'illegal_key');
    assert.equal(res[1].num, 1221);
    assert.equal(res[2]._id, 'orders/pm-2');
    assert.equal((await store.get('orders/pm-2')).i, 2);
    assert.equal(new Set([res[0]._id, res[2]._id, res[3]._id]).size, 3);
    const many = await store.putMany('bulk', Array.from({ length: 5000 }, (_, i) => ({ i })));
    assert.equal(new Set(many.map((d) => d._id)).size, 5000);
    await rejectsWith(store.putMany('orders', 'nope'), 'bad_request', 400);
    await rejectsWith(store.putMany('bad name!', [{}]), 'illegal_name', 1208);
  });

  test('putMany as one JSON text (what a tab sends its host): the array is checked whole, each document as it is read', async () => {
    for (const text of ['', '{}', '[', '[{}', '[{},]', '[,{}]', '[{} {}]', '[{}]x', '[{"a":[1}]', '["abc]']) {
      await rejectsWith(store._putManyText('orders', text), 'bad_request', 400);
    }
    const res = JSON.parse(await store._putManyText('orders', ' [ {"_key":"txt-1","v":1} , {"_key":"txt-2","v":tru}, 5, {"_key":"txt-3","s":"],\\"["} ] '));
    assert.equal(res.length, 4);
    assert.equal(res[0]._id, 'orders/txt-1');
    assert.equal(res[1].__hiloError.code, 'bad_json');
    assert.ok(res[2].__hiloError, 'a number is not a document');
    assert.equal(res[3].s, '],"[');
    await rejectsWith(store.get('orders/txt-2'), 'not_found', 1202);
    assert.equal((await store.get('orders/txt-3')).s, '],"[');
    assert.deepEqual(JSON.parse(await store._putManyText('orders', '[]')), []);
  });

  test('ArangoDB-style collections: save, document, replace, update, remove, the *All calls and count', async () => {
    const users = await store.createCollection('users', { keyOptions: { type: 'autoincrement', increment: 5, offset: 10, allowUserKeys: false } });
    await rejectsWith(store.createCollection('users'), 'duplicate_name', 1207);
    const a = await users.save({ name: 'ann' }, { returnNew: true });
    assert.equal(a._key, '10');
    assert.equal(a.new.name, 'ann');
    const b = await users.save({ name: 'bob' });
    assert.equal(b._key, '15');
    await rejectsWith(users.save({ _key: 'x', name: 'x' }), 'unexpected_key', 1222); // allowUserKeys: false
    assert.equal((await users.document('10')).name, 'ann');
    assert.equal((await users.document('users/15')).name, 'bob');
    const r = await users.replace('10', { name: 'anna' }, { returnOld: true });
    assert.equal(r._oldRev, a._rev);
    assert.equal(r.old.name, 'ann');
    const u = await users.update(b, { age: 30 }, { returnNew: true });
    assert.deepEqual([u.new.name, u.new.age], ['bob', 30]);
    // A stale _rev is a precondition with ignoreRevs: false, and ifMatch always.
    await rejectsWith(users.update('10', { _rev: a._rev, age: 1 }, { ignoreRevs: false }), 'conflict', 1200);
    await rejectsWith(users.update('10', { age: 1 }, { ifMatch: a._rev }), 'conflict', 1200);
    await rejectsWith(users.save({ name: 'c' }, { overwrite: true }), 'bad_request', 400); // not an option: refused
    const many = await users.saveAll([{ name: 'c' }, { name: 'd' }]);
    assert.equal(many.length, 2);
    const docs = await users.documents(['10', 'nope', many[0]._key]);
    assert.equal(docs[0].name, 'anna');
    assert.equal(docs[1].error, true);
    assert.equal(docs[1].errorNum, 1202);
    assert.equal(docs[2].name, 'c');
    assert.deepEqual(await users.count(), { count: 4 });
    const removed = await users.removeAll([many[0]._key, 'nope']);
    assert.equal(removed[0]._key, many[0]._key);
    assert.equal(removed[1].errorNum, 1202);
    await users.remove('10');
    await rejectsWith(users.document('10'), 'not_found', 1202);
    assert.deepEqual(await users.count(), { count: 2 });
    // Any collection works without being created, with the default keys.
    const notes = store.collection('notes');
    const n = await notes.save({ _key: 'n1', text: 'hi' }, { silent: true });
    assert.equal(n, undefined, 'a silent write resolves to nothing, as in arangojs');
    const again = await notes.save({ _key: 'n1', text: 'again' }, { overwriteMode: 'update', returnNew: true });
    assert.equal(again.new.text, 'again');
    await rejectsWith(notes.save({ _key: 'n1' }), 'unique_constraint', 1210);
  });

  test('RavenDB-style sessions: store, load, delete, saveChanges, conventions, identities', async () => {
    class Order {
      constructor(item, qty) {
        this.item = item;
        this.qty = qty;
      }

      total(price) {
        return this.qty * price;
      }
    }
    class HRDept {}
    store.conventions.registerEntityType(Order);
    assert.equal(store.conventions.findCollectionName(Order), 'Orders');
    assert.equal(store.conventions.transformClassCollectionNameToDocumentIdPrefix('Orders'), 'orders');
    assert.equal(store.conventions.transformClassCollectionNameToDocumentIdPrefix('HRDepts'), 'HRDepts');
    assert.equal(store.conventions.findCollectionName(HRDept), 'HRDepts');
    assert.equal(store.conventions.identityPartsSeparator, '/');

    const session = store.openSession();
    const order = new Order('apple', 3);
    await session.store(order);
    assert.match(order.id, hiloID, 'a HiLo id is given at store time');
    const company = { name: 'acme' };
    await session.store(company, 'companies|'); // an identity, resolved when saved
    assert.equal(session.advanced.getDocumentId(company), 'companies|');
    const literal = { note: 'no collection' };
    await session.store(literal); // @empty and a UUID
    await session.saveChanges();
    assert.match(company.id, /^companies\/\d+$/);
    assert.match(literal.id, /^[0-9a-f-]{36}$/);

    const stored = await store.get(order.id);
    assert.equal(stored['@metadata']['@collection'], 'Orders');
    assert.equal(stored['@metadata']['Raven-Node-Type'], 'Order');
    assert.equal(stored.id, undefined, 'the identity property is the document id, not a field');

    const s2 = store.openSession({ useOptimisticConcurrency: true });
    const loaded = await s2.load(order.id);
    assert.ok(loaded instanceof Order, 'loads back as its class');
    assert.equal(loaded.total(2), 6);
    assert.equal(await s2.load('orders/none'), null);
    loaded.qty = 4;
    // Someone else changes it meanwhile: the optimistic session fails, all of it.
    await store.put('Orders', { ...stored, qty: 9 });
    const extra = new Order('pear', 1);
    await s2.store(extra);
    await rejectsWith(s2.saveChanges(), 'conflict', 1200);
    await rejectsWith(store.get(extra.id), 'not_found', 1202);

    // Deletes, and nothing written when nothing changed.
    const s3 = store.openSession();
    const again = await s3.load(order.id);
    s3.delete(again);
    s3.delete(company.id);
    await s3.saveChanges();
    await rejectsWith(store.get(order.id), 'not_found', 1202);
    await rejectsWith(store.get(company.id), 'not_found', 1202);

    const first = await store.nextIdentityFor('invoices');
    assert.equal(await store.nextIdentityFor('invoices'), first + 1);
    assert.equal(await store.seedIdentityFor('invoices', 1000), 1000);
    assert.equal(await store.nextIdentityFor('invoices'), 1001);
    assert.equal(await store.seedIdentityFor('invoices', 5), 1001, 'only upwards without force');
  });

  test('list pages through a collection in key order', async () => {
    await store.putMany('pages', Array.from({ length: 25 }, (_, i) => ({ _key: `k${String(i).padStart(2, '0')}`, i })));
    const seen = [];
    let after = null;
    let pages = 0;
    do {
      const page = await store.list('pages', { limit: 10, after });
      seen.push(...page.docs.map((d) => d._key));
      after = page.next;
      pages++;
    } while (after !== null);
    assert.equal(pages, 3);
    assert.deepEqual(seen, Array.from({ length: 25 }, (_, i) => `k${String(i).padStart(2, '0')}`));
    assert.equal((await store.list('pages')).docs.length, 25);
    await rejectsWith(store.list('pages', { limit: 0 }), 'bad_request', 400);
    await rejectsWith(store.list('pages', { after: 'orders/x' }), 'bad_parameter', 10);
  });

  test('two stores in one process get distinct ids and node tags', async () => {
    // Not synced: its documents stay its own, so one cannot see the other's.
    const second = await openStore({ url: server.wsURL, database: 'shop', sync: false });
    extra.push(second);
    const [a, b] = await Promise.all([
      Promise.all(Array.from({ length: 100 }, (_, i) => store.put('orders', { from: 'a', i }))),
      Promise.all(Array.from({ length: 100 }, (_, i) => second.put('orders', { from: 'b', i }))),
    ]);
    const ids = [...a, ...b].map((d) => d._id);
    for (const id of ids) assert.match(id, hiloID);
    assert.equal(new Set(ids).size, 200);
    // The stores are separate: one does not see the other's documents.
    await rejectsWith(second.get(a[0]._id), 'not_found', 1202);
    const [ia, ib] = await Promise.all([store.info(), second.info()]);
    assert.notEqual(ia.node, ib.node);
  });

  test('a closed store rejects calls with closed', async () => {
    const s = await openStore({ url: server.wsURL, database: 'shop' });
    const doc = await s.put('orders', {});
    await s.close();
    await s.close(); // closing twice is fine
    await rejectsWith(s.get(doc._id), 'closed', 1902);
    await rejectsWith(s.put('orders', {}), 'closed', 1902);
  });

  test('the Go instance is shared by every store in the realm', async () => {
    const runtime = globalThis[Symbol.for('hilodb.runtime')];
    assert.ok(runtime instanceof Promise);
    const api = await runtime;
    assert.equal(api, globalThis.__hilodb);
    const s = await openStore({ url: server.wsURL, database: 'shop' });
    extra.push(s);
    assert.equal(globalThis[Symbol.for('hilodb.runtime')], runtime);
  });
});

describe('against a server with tokens', () => {
  let server;

  before(async () => {
    server = await startServer(bin, ['-tokens', 'shop=secret']);
  });

  after(async () => {
    await server?.stop();
  });

  test('a wrong token rejects with unauthorized', async () => {
    await rejectsWith(openStore({ url: server.wsURL, database: 'shop', token: 'wrong' }), 'unauthorized', 401);
    await rejectsWith(openStore({ url: server.wsURL, database: 'shop' }), 'unauthorized', 401);
    await rejectsWith(openStore({ url: server.wsURL, database: 'other', token: 'secret' }), 'unauthorized', 401);
  });

  test('the right token gets HiLo ids', async () => {
    const store = await openStore({ url: server.wsURL, database: 'shop', token: 'secret' });
    try {
      const doc = await store.put('orders', { ok: true });
      assert.match(doc._id, hiloID);
    } finally {
      await store.close();
    }
  });
});

describe('without a server', () => {
  test('a store opens offline and takes documents with their own keys', async () => {
    const port = await freePort(); // nothing listens here
    const store = await openStore({ url: `ws://127.0.0.1:${port}/v1/sync`, database: 'shop' });
    try {
      const info = await store.info();
      assert.equal(info.connected, false);
      const doc = await store.put('orders', { _key: 'offline-1', v: 1 });
      assert.equal(doc._id, 'orders/offline-1');
      assert.deepEqual(await store.get('orders/offline-1'), doc);
      // No range was ever leased: a time-ordered UUID in the collection
      // (docs/ids.md); an identity needs the server.
      const first = await store.put('orders', { v: 2 });
      assert.match(first._id, /^orders\/[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      await rejectsWith(store.put('orders', { _id: 'orders|' }), 'needs_server', 1900);
    } finally {
      await store.close();
    }
  });

  test('a store opened offline leases ids once the server is up', async () => {
    const port = await freePort();
    const store = await openStore({ url: `ws://127.0.0.1:${port}/v1/sync`, database: 'shop' });
    let server;
    try {
      await rejectsWith(store.put('orders', { _id: 'orders|' }), 'needs_server', 1900);
      server = await startServer(bin, [], { port });
      const doc = await store.put('orders', { v: 1 });
      assert.match(doc._id, hiloID);
      const info = await store.info();
      assert.equal(info.connected, true);
      assert.ok(doc._rev.endsWith(info.node), `_rev ${doc._rev} does not end in the server-given node ${info.node}`);
    } finally {
      await store.close();
      await server?.stop();
    }
  });

  test('a server refusing a store opened offline rejects puts with unauthorized', async () => {
    const port = await freePort();
    const store = await openStore({ url: `ws://127.0.0.1:${port}/v1/sync`, database: 'shop', token: 'wrong' });
    let server;
    try {
      server = await startServer(bin, ['-tokens', 'shop=secret'], { port });
      await rejectsWith(store.put('orders', {}), 'unauthorized', 401);
      await rejectsWith(store.put('companies', { _id: 'companies|' }), 'unauthorized', 401);
      // Documents with their own keys need no server.
      assert.equal((await store.put('orders', { _key: 'local' }))._id, 'orders/local');
    } finally {
      await store.close();
      await server?.stop();
    }
  });

  test('openStore without options rejects with bad_request', async () => {
    await rejectsWith(openStore(), 'bad_request', 400);
    await rejectsWith(openStore({ database: 'shop' }), 'bad_request', 400);
    await rejectsWith(openStore({ url: 'ws://127.0.0.1:1/v1/sync', database: 7 }), 'bad_request', 400);
  });
});
