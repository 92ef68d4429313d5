// The npm package's RavenDB- and ArangoDB-style API against the real sync
// server, call by call: options (unknown ones refused everywhere), every key
// generator, every id strategy of a session, conventions, reads with
// preconditions, overwrite modes and the update options.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { receiptedCall } from '../host.js';
import { openStore } from '../node.js';
import { buildServer, startServer } from './server.mjs';

async function rejectsWith(promise, code, num) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof Error, `got ${err}, want an Error`);
    assert.equal(err.code, code, `code of ${err.message}`);
    assert.equal(err.num, num, `num of ${err.message}`);
    return true;
  });
}

function throwsWith(fn, code) {
  assert.throws(fn, (err) => err.code === code);
}

let cleanupBin = async () => {};
let server;
let store;
let n = 0;
const opened = [];

async function fresh(options = {}) {
  const s = await openStore({ url: server.wsURL, database: `api${++n}`, ...options });
  opened.push(s);
  return s;
}

before(async () => {
  const built = await buildServer();
  cleanupBin = built.cleanup;
  server = await startServer(built.bin);
  store = await fresh({ changeFeed: true });
});

after(async () => {
  try {
    await Promise.allSettled(opened.map((s) => s.close()));
    await server?.stop();
  } finally {
    await cleanupBin();
  }
});

describe('the npm package API', () => {
  test('unknown options are refused by every call, never ignored', async () => {
    const col = store.collection('things');
    await col.save({ _key: 'a' });
    const bad = { nope: true };
    await rejectsWith(openStore({ url: server.wsURL, database: 'x', persistt: 'typo' }), 'bad_request', 400);
    await rejectsWith(store.put('things', {}, bad), 'bad_request', 400);
    await rejectsWith(store.list('things', bad), 'bad_request', 400);
    await rejectsWith(store.list('things', 'ten'), 'bad_request', 400);
    await rejectsWith(store.changes(bad), 'bad_request', 400);
    throwsWith(() => store.watch(() => {}, bad), 'bad_request');
    throwsWith(() => store.openSession(bad), 'bad_request');
    throwsWith(() => store.openSession({ useOptimisticConcurrency: 'yes' }), 'bad_request');
    await rejectsWith(store.createCollection('c', bad), 'bad_request', 400);
    await rejectsWith(store.createCollection('c', { keyOptions: bad }), 'bad_request', 400);
    await rejectsWith(col.save({}, bad), 'bad_request', 400);
    await rejectsWith(col.saveAll([{}], bad), 'bad_request', 400);
    await rejectsWith(col.replace('a', {}, bad), 'bad_request', 400);
    await rejectsWith(col.replaceAll([{ _key: 'a' }], bad), 'bad_request', 400);
    await rejectsWith(col.update('a', {}, bad), 'bad_request', 400);
    await rejectsWith(col.updateAll([{ _key: 'a' }], bad), 'bad_request', 400);
    await rejectsWith(col.remove('a', bad), 'bad_request', 400);
    await rejectsWith(col.removeAll(['a'], bad), 'bad_request', 400);
    await rejectsWith(col.document('a', bad), 'bad_request', 400);
    await rejectsWith(col.document('a', { ifNoneMatch: 'x' }), 'bad_request', 400);
    await rejectsWith(col.documents(['a'], bad), 'bad_request', 400);
    await rejectsWith(col.count(bad), 'bad_request', 400);
    const session = store.openSession();
    await rejectsWith(session.store({}, 'x/1', bad), 'bad_request', 400);
    await rejectsWith(session.store({}, 'x/1', 7), 'bad_request', 400);
    // Nothing was written by the refused calls.
    assert.deepEqual(await col.count(), { count: 1 });
    assert.deepEqual((await store.list('c')).docs, []);
  });

  test('every key generator, and allowUserKeys: false', async () => {
    const s = await fresh();
    const trad = await s.createCollection('trad', { keyOptions: { type: 'traditional', allowUserKeys: false } });
    const padded = await s.createCollection('padded', { keyOptions: { type: 'padded', allowUserKeys: false } });
    const uuid = await s.createCollection('uuid', { keyOptions: { type: 'uuid', allowUserKeys: false } });
    const auto = await s.createCollection('auto', { keyOptions: { type: 'autoincrement', increment: 3, offset: 7, allowUserKeys: false } });
    const t = [(await trad.save({}))._key, (await trad.save({}))._key];
    assert.match(t[0], /^\d+$/);
    assert.ok(Number(t[1]) > Number(t[0]), `traditional keys ${t} not increasing`);
    const p = [(await padded.save({}))._key, (await padded.save({}))._key];
    for (const k of p) assert.match(k, /^[0-9a-f]{16}$/);
    assert.ok(p[1] > p[0], `padded keys ${p} do not sort as made`);
    assert.match((await uuid.save({}))._key, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const a = [(await auto.save({}))._key, (await auto.save({}))._key].map(Number);
    assert.ok(a[0] >= 7 && (a[0] - 7) % 3 === 0, `autoincrement key ${a[0]}`);
    assert.equal(a[1] - a[0], 3);
    for (const c of [trad, padded, uuid, auto]) await rejectsWith(c.save({ _key: 'mine' }), 'unexpected_key', 1222);
    await rejectsWith(s.createCollection('x', { keyOptions: { type: 'autoincrement', increment: 0 } }), 'invalid_key_generator', 1232);
    await rejectsWith(s.createCollection('y', { keyOptions: { type: 'snowflake' } }), 'invalid_key_generator', 1232);
  });

  test('a session: every id strategy, conventions, loads of many ids, change vectors', async () => {
    const s = await fresh();
    class Order {
      constructor(item) {
        this.item = item;
      }
    }
    s.conventions.registerEntityType(Order);
    assert.equal(s.conventions.findJsTypeName(Order), 'Order');
    assert.equal(s.conventions.findJsType('Order'), Order);
    assert.equal(s.conventions.identityProperty, 'id');
    const { node, serverTag } = await s.info();

    const session = s.openSession();
    const hilo = new Order('hilo');
    const semantic = new Order('semantic');
    const seq = new Order('seq');
    const ident = new Order('ident');
    const guid = new Order('guid');
    await session.store(hilo);
    await session.store(semantic, 'orders/2024-001');
    await session.store(seq, 'orders/');
    await session.store(ident, 'orders|');
    await session.store(guid, '');
    const literal = { note: 'plain' };
    await session.store(literal);
    await session.saveChanges();
    assert.match(hilo.id, new RegExp(`^orders/\\d+-${serverTag}$`)); // HiLo: the tag of the server that leased the range
    assert.equal(semantic.id, 'orders/2024-001');
    assert.match(seq.id, new RegExp(`^orders/\\d{19}-${node}$`)); // this node's own sequence
    assert.equal(ident.id, 'orders/1');
    assert.match(guid.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.match(literal.id, /^[0-9a-f-]{36}$/);
    assert.equal((await s.get(literal.id))['@metadata']['@collection'], '@empty');

    // Object literals go where findCollectionNameForObjectLiteral says.
    s.conventions.findCollectionNameForObjectLiteral = (e) => e.kind;
    const session2 = s.openSession();
    const widget = { kind: 'Widgets', n: 1 };
    await session2.store(widget);
    await session2.saveChanges();
    assert.match(widget.id, /^widgets\/\d+-/);
    assert.equal((await s.get(widget.id))['@metadata']['@collection'], 'Widgets');

    const loader = s.openSession();
    const many = await loader.load([hilo.id, 'orders/none', semantic.id]);
    assert.deepEqual(Object.keys(many), [hilo.id, 'orders/none', semantic.id]);
    assert.ok(many[hilo.id] instanceof Order);
    assert.equal(many['orders/none'], null);
    class Unregistered {}
    const typed = s.openSession();
    assert.ok((await typed.load(semantic.id, Unregistered)) instanceof Unregistered, 'load(id, documentType)');
    assert.ok((await s.openSession().load([semantic.id], { documentType: Unregistered }))[semantic.id] instanceof Unregistered);
    await rejectsWith(s.openSession().load(semantic.id, { includes: ['x'] }), 'bad_request', 400);

    // A change vector given to store is a precondition.
    const cv = loader.advanced.getChangeVectorFor(many[hilo.id]);
    await s.put('Orders', { ...(await s.get(hilo.id)), item: 'changed elsewhere' });
    const stale = s.openSession();
    await stale.store(new Order('stale'), hilo.id, cv);
    await rejectsWith(stale.saveChanges(), 'conflict', 1200);
    const mustBeNew = s.openSession();
    await mustBeNew.store(new Order('again'), semantic.id, { changeVector: '' });
    await rejectsWith(mustBeNew.saveChanges(), 'conflict', 1200);
    assert.equal((await s.get(hilo.id)).item, 'changed elsewhere');
    const current = s.openSession();
    await current.store(new Order('fresh'), hilo.id, (await s.get(hilo.id))._rev);
    await current.saveChanges();
    assert.equal((await s.get(hilo.id)).item, 'fresh');

    // Identities: seeds go up, and a forced lowering needs the server's leave.
    assert.equal(await s.seedIdentityFor('orders', 50), 50);
    await rejectsWith(s.seedIdentityFor('orders', 5, true), 'forbidden', 1907);
    assert.equal(await s.seedIdentityFor('orders', 60, true), 60);
    assert.equal(await s.nextIdentityFor('orders'), 61);
  });

  test('conventions set by the app: collection names, id prefixes, the id property', async () => {
    const s = await fresh();
    class Order {}
    class Invoice {}
    class Note {}
    const conv = s.conventions;
    conv.findCollectionName = (type) => (type === Order ? 'SalesOrders' : `${type.name}s`);
    conv.transformClassCollectionNameToDocumentIdPrefix = (c) => (c === 'Notes' ? 'Memo' : 'sales');
    conv.findIdentityPropertyNameFromCollectionName = (c) => (c === 'Invoices' ? 'number' : 'id');
    const session = s.openSession();
    const orders = Array.from({ length: 3 }, () => new Order());
    const invoices = Array.from({ length: 3 }, () => new Invoice());
    for (const e of [...orders, ...invoices]) await session.store(e);
    const note = new Note();
    await session.store(note);
    await session.saveChanges();
    const ids = [...orders.map((o) => o.id), ...invoices.map((i) => i.number)];
    for (const id of ids) assert.match(id, /^sales\/\d+-A$/);
    assert.equal(new Set(ids).size, 6, 'two collections given one prefix made the same id');
    assert.equal(invoices[0].id, undefined, 'the id property of Invoices is number');
    assert.match(note.id, /^Memo\/\d{19}-/, 'a prefix that is not a plain name gets the node sequence');
    const stored = await s.get(invoices[0].number);
    assert.equal(stored['@metadata']['@collection'], 'Invoices');
    assert.equal(stored.number, undefined, 'the id property is not stored as a field');
    assert.equal((await s.get(orders[0].id))['@metadata']['@collection'], 'SalesOrders');
    conv.registerEntityType(Invoice);
    const back = await s.openSession().load(invoices[0].number);
    assert.ok(back instanceof Invoice);
    assert.equal(back.number, invoices[0].number);
  });

  test('collections: reads with graceful and ifMatch, overwrite modes, keepNull and mergeObjects, _oldRev, per-item errors', async () => {
    const s = await fresh();
    const col = s.collection('docs');
    const a = await col.save({ _key: 'a', n: 1, keep: { x: 1, y: 2 }, gone: 1 });
    assert.equal(await col.document('zz', true), null);
    assert.equal(await col.document('zz', { graceful: true }), null);
    await rejectsWith(col.document('zz'), 'not_found', 1202);
    assert.equal((await col.document('a', { ifMatch: a._rev, allowDirtyRead: true })).n, 1);
    await rejectsWith(col.document('a', { ifMatch: '_stale' }), 'conflict', 1200);
    assert.equal((await col.documents(['a'], { allowDirtyRead: true }))[0].n, 1);

    const up = await col.update('a', { keep: { y: null, z: 3 }, gone: null }, { keepNull: false, returnNew: true, returnOld: true });
    assert.equal(up._oldRev, a._rev);
    assert.equal(up.old.gone, 1);
    assert.deepEqual(up.new.keep, { x: 1, z: 3 });
    assert.equal('gone' in up.new, false);
    const kept = await col.update('a', { keep: { w: null } }, { returnNew: true });
    assert.deepEqual(kept.new.keep, { x: 1, z: 3, w: null }, 'keepNull defaults to true');
    const flat = await col.update('a', { keep: { only: 1 } }, { mergeObjects: false, returnNew: true });
    assert.deepEqual(flat.new.keep, { only: 1 });

    assert.equal((await col.save({ _key: 'a', n: 9 }, { overwriteMode: 'ignore' }))._rev, flat._rev);
    const replaced = await col.save({ _key: 'a', n: 2 }, { overwriteMode: 'replace', returnNew: true });
    assert.equal(replaced._oldRev, flat._rev);
    assert.equal('keep' in replaced.new, false);
    const merged = await col.save({ _key: 'a', m: 1 }, { overwriteMode: 'update', returnNew: true });
    assert.deepEqual([merged.new.n, merged.new.m], [2, 1]);
    await rejectsWith(col.save({ _key: 'a' }, { overwriteMode: 'conflict' }), 'unique_constraint', 1210);

    const res = await col.saveAll([{ _key: 'b' }, { _key: 'a' }, { _key: 'bad key' }]);
    assert.equal(res[0]._key, 'b');
    assert.deepEqual(
      res.slice(1).map((r) => [r.error, r.errorNum, r.errorCode]),
      [
        [true, 1210, 'unique_constraint'],
        [true, 1221, 'illegal_key'],
      ],
    );
    const upd = await col.updateAll([{ _key: 'b', v: 1 }, { _key: 'none', v: 1 }, { _key: 'a', _rev: a._rev, v: 1 }], { ignoreRevs: false });
    assert.equal(upd[0]._key, 'b');
    assert.deepEqual([upd[1].errorNum, upd[2].errorNum], [1202, 1200]);
  });

  test('delete with a _rev: a stale or made-up one removes nothing', async () => {
    const s = await fresh();
    const v1 = await s.put('notes', { _key: 'd', n: 1 });
    const v2 = await s.put('notes', { ...v1, n: 2 });
    await rejectsWith(s.delete(v1._id, { rev: v1._rev }), 'conflict', 1200);
    await rejectsWith(s.delete(v1._id, { ifMatch: '_made-up---' }), 'conflict', 1200);
    await rejectsWith(s.delete(v1._id, { rev: 7 }), 'bad_request', 400);
    await rejectsWith(s.delete(v1._id, { force: true }), 'bad_request', 400);
    assert.equal((await s.get(v1._id)).n, 2);
    await s.delete(v1._id, { rev: v2._rev });
    await rejectsWith(s.get(v1._id), 'not_found', 1202);
    await rejectsWith(s.delete(v1._id, { rev: v2._rev }), 'not_found', 1202);
  });
  // What a shared store's host does (host.js) with a tab's collection write
  // and with the same write sent again by the tab when that host went away
  // before answering: the second is answered from the write's receipt, the
  // same answer whatever was written since, and not made again (a save,
  // remove or create made twice would fail).
  test('a collection write sent again with its receipt is answered as it was, and made once', async () => {
    const s = await fresh();
    let seq = 0;
    const sent = (op, payload, options) => {
      const n = ++seq;
      const args = ['receipted', payload === undefined ? undefined : JSON.stringify(payload), options === undefined ? undefined : JSON.stringify(options)];
      return { m: '_collectionOp', args: [op, ...args], receipt: { key: `hilodb-tab:t/link/${n % 64}`, seq: n } };
    };
    // write makes msg, runs between (writes made after it), and sends msg again.
    const write = async (msg, between = async () => {}) => {
      const first = await receiptedCall(s, msg);
      await between();
      const again = await receiptedCall(s, { ...msg, resend: true });
      assert.deepEqual(again, first, `${msg.args[0]} ${msg.args[2]} ${msg.args[3]} answered again`);
      return first;
    };
    const col = s.collection('receipted');
    const both = { returnNew: true, returnOld: true };

    assert.deepEqual(await write(sent('create', {})), { name: 'receipted' });
    const a = await write(sent('save', { _key: 'a', n: 1 }, { returnNew: true }), () => col.update('a', { n: 9 }));
    assert.equal(a.new.n, 1);
    assert.deepEqual(await write(sent('save', { _key: 's' }, { silent: true })), {});
    const many = await write(sent('saveAll', [{ _key: 'b' }, { _key: 'a' }], { returnNew: true }));
    assert.equal(many[0]._key, 'b');
    assert.equal(many[1].errorNum, 1210);
    const r = await write(sent('replace', { _key: 'a', n: 2 }, both), () => col.update('a', { n: 3 }));
    assert.deepEqual([r.old.n, r.new.n, r._oldRev !== undefined], [9, 2, true]);
    const u = await write(sent('update', { _key: 'b', m: 1 }, both), () => col.remove('b'));
    assert.equal(u.new.m, 1);
    await col.save({ _key: 'b', m: 2 });
    await write(sent('replaceAll', [{ _key: 'b', m: 3 }, { _key: 'none' }], { returnOld: true }));
    await write(sent('updateAll', [{ _key: 'a', m: 4 }, { _key: 'b', m: 4 }], { silent: true }));
    const gone = await write(sent('remove', 'a', { returnOld: true }));
    assert.equal(gone.old.m, 4);
    const removed = await write(sent('removeAll', ['b', 'none']));
    assert.deepEqual([removed[0]._key, removed[1].errorNum], ['b', 1202]);
    assert.deepEqual(await col.count(), { count: 1 }); // s

    // A write that failed stored no receipt: sent again, it is made again.
    const stale = sent('replace', { _key: 's' }, { ifMatch: '_stale' });
    await rejectsWith(receiptedCall(s, stale), 'conflict', 1200);
    await rejectsWith(receiptedCall(s, { ...stale, resend: true }), 'conflict', 1200);
  });

  // The same for the other writes a tab sends with a receipt: a put, a
  // putMany (as documents and as one JSON text, as a tab sends it), a delete
  // and a session's saveChanges batch. Sent again, each is answered from its
  // receipt and not made a second time: a put or putMany with HiLo ids made
  // again would store more documents, a delete made again would fail with
  // not_found and a batch's must-be-new document with conflict.
  test('a put, putMany, delete or saveChanges sent again with its receipt is answered from it, and made once', async () => {
    const s = await fresh();
    let seq = 0;
    const sent = (m, ...args) => {
      const n = ++seq;
      return { m, args, receipt: { key: `hilodb-tab:t/link/${n % 64}`, seq: n } };
    };
    const twice = async (msg) => [await receiptedCall(s, msg), await receiptedCall(s, { ...msg, resend: true })];
    const count = async () => (await s.list('orders', { limit: 100 })).docs.length;

    const [put, putAgain] = await twice(sent('put', 'orders', { n: 1 }));
    assert.match(put._id, /^orders\/\d+-/);
    assert.deepEqual(putAgain, put);
    assert.equal(await count(), 1);

    const [many, manyAgain] = await twice(sent('putMany', 'orders', [{ n: 2 }, { _key: 'k' }]));
    assert.equal(many.length, 2);
    assert.deepEqual(manyAgain, many);
    assert.equal(await count(), 3);

    const [text, textAgain] = await twice(sent('_putManyText', 'orders', JSON.stringify([{ n: 3 }])));
    assert.equal(typeof text, 'string');
    assert.deepEqual(textAgain, JSON.parse(text));
    assert.equal(await count(), 4);

    const [gone, goneAgain] = await twice(sent('delete', put._id));
    assert.equal(gone, undefined);
    assert.equal(goneAgain, undefined);
    assert.equal(await count(), 3);

    const batch = JSON.stringify([{ id: 'orders/s1', collection: 'orders', body: { n: 4 }, typeName: '', mustBeNew: true }]);
    const [saved, savedAgain] = await twice(sent('_saveBatch', batch));
    assert.equal(saved[0]._id, 'orders/s1');
    assert.deepEqual(savedAgain, saved);
    assert.equal(await count(), 4);
    // A batch that deletes one document and replaces another on its _rev.
    const k = many[1];
    const next = JSON.stringify([
      { delete: true, id: 'orders/s1' },
      { id: k._id, collection: 'orders', body: { n: 5 }, typeName: '', ifRev: k._rev },
    ]);
    const [changed, changedAgain] = await twice(sent('_saveBatch', next));
    assert.equal(changed[1]._id, k._id);
    assert.deepEqual(changedAgain, changed);
    assert.equal(await count(), 3);
    assert.equal((await s.get(k._id)).n, 5);
  });
});
