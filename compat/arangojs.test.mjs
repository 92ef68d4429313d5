// ArangoDB's official JavaScript client (the arangojs package, pinned in
// package.json), unchanged, against the real hilodb sync server: collections
// with keyOptions, key rules, single and multi-document calls with their
// options, preconditions and error numbers; then the same documents read
// back over the websocket, and a browser-side write read through arangojs.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { Database } from 'arangojs';

import { openStore } from '../js/node.js';
import { buildServer, startServer } from '../js/test/server.mjs';

let cleanupBin = async () => {};
let server;

before(async () => {
  const built = await buildServer();
  cleanupBin = built.cleanup;
  server = await startServer(built.bin);
});

after(async () => {
  await server?.stop();
  await cleanupBin();
});

function database(name) {
  return new Database({ url: server.base, databaseName: name });
}

// arangoErr checks an ArangoError's number and status.
function arangoErr(errorNum, code) {
  return (err) => {
    assert.equal(err.errorNum, errorNum, `errorNum of ${err.message}`);
    if (code) assert.equal(err.code, code, `code of ${err.message}`);
    return true;
  };
}

describe('the arangojs client against hilodb', () => {
  test('version, collections with keyOptions, and every key generator', async () => {
    const db = database('arango1');
    const v = await db.version();
    assert.equal(v.server, 'arango');

    const trad = await db.createCollection('users', { keyOptions: { type: 'traditional' } });
    const auto = await db.createCollection('invoices', { keyOptions: { type: 'autoincrement', increment: 10, offset: 100 } });
    const padded = await db.createCollection('events', { keyOptions: { type: 'padded' } });
    const uuid = await db.createCollection('tokens', { keyOptions: { type: 'uuid' } });
    const fixed = await db.createCollection('fixed', { keyOptions: { allowUserKeys: false } });
    await assert.rejects(db.createCollection('users'), arangoErr(1207, 409));
    await assert.rejects(db.createCollection('bad/name'), arangoErr(1208, 400));
    await assert.rejects(db.createCollection('x', { keyOptions: { type: 'autoincrement', increment: 70000 } }), arangoErr(1232, 400));
    assert.equal((await trad.get()).keyOptions.type, 'traditional');
    assert.equal((await auto.properties()).keyOptions.increment, 10);

    const t1 = await trad.save({ name: 'ann' });
    const t2 = await trad.save({ name: 'bob' });
    assert.match(t1._key, /^\d+$/);
    assert.ok(Number(t2._key) > Number(t1._key));
    assert.equal(t1._id, `users/${t1._key}`);
    const a1 = await auto.save({});
    const a2 = await auto.save({});
    assert.ok(Number(a1._key) >= 100 && (Number(a1._key) - 100) % 10 === 0, `autoincrement key ${a1._key}`);
    assert.equal(Number(a2._key) - Number(a1._key), 10);
    assert.match((await padded.save({}))._key, /^[0-9a-f]{16}$/);
    assert.match((await uuid.save({}))._key, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    await assert.rejects(fixed.save({ _key: 'mine' }), arangoErr(1222, 400));
    await assert.rejects(trad.save({ _key: 'bad key' }), arangoErr(1221, 400));
    await assert.rejects(trad.save({ _key: 'x'.repeat(255) }), arangoErr(1221, 400));
    // A collection created without keyOptions has ArangoDB's default,
    // traditional keys; inserting into one that does not exist is 1203.
    const plain = await (await db.createCollection('orders')).save({ item: 'pen' });
    assert.match(plain._key, /^\d+$/);
    await assert.rejects(db.collection('nosuch').save({ item: 'pen' }), arangoErr(1203, 404));

    // The websocket clients of the database use the same definitions.
    const store = await openStore({ url: server.wsURL, database: 'arango1' });
    await store.sync();
    const mine = await store.collection('users').save({ name: 'cy' });
    assert.match(mine._key, /^\d+$/);
    assert.ok(![t1._key, t2._key].includes(mine._key), 'a key handed out twice');
    assert.equal((await store.get(t1._id)).name, 'ann');
    await store.close();
  });

  test('documents: create, read, replace, update, remove with their options and preconditions', async () => {
    const db = database('arango2');
    const col = await db.createCollection('docs');
    const made = await col.save({ _key: 'a', n: 1, nested: { x: 1, y: 2 }, gone: 1 }, { returnNew: true });
    assert.deepEqual({ key: made._key, n: made.new.n }, { key: 'a', n: 1 });
    assert.equal(made.new['@metadata'], undefined, '@metadata is not shown to arangojs');
    await assert.rejects(col.save({ _key: 'a' }), arangoErr(1210, 409));
    assert.equal((await col.save({ _key: 'a', n: 9 }, { overwriteMode: 'ignore' }))._rev, made._rev);
    const read = await col.document('a');
    assert.equal(read._rev, made._rev);
    assert.equal(await col.documentExists('a'), true);
    assert.equal(await col.documentExists('zz'), false);
    await assert.rejects(col.document('zz'), arangoErr(1202, 404));

    const up = await col.update('a', { n: 2, nested: { y: null, z: 3 }, gone: null }, { returnOld: true, returnNew: true, keepNull: false });
    assert.equal(up._oldRev, made._rev);
    assert.equal(up.old.n, 1);
    assert.deepEqual(up.new.nested, { x: 1, z: 3 });
    assert.equal('gone' in up.new, false);
    const noMerge = await col.update('a', { nested: { only: true } }, { mergeObjects: false, returnNew: true });
    assert.deepEqual(noMerge.new.nested, { only: true });

    // Preconditions: a stale _rev changes nothing.
    await assert.rejects(col.replace('a', { n: 3 }, { ifMatch: made._rev }), arangoErr(1200, 412));
    await assert.rejects(col.replace('a', { _rev: made._rev, n: 3 }, { ignoreRevs: false }), arangoErr(1200, 412));
    assert.equal((await col.document('a')).n, 2);
    const cur = await col.document('a');
    const rep = await col.replace('a', { n: 4 }, { ifMatch: cur._rev, returnNew: true });
    assert.deepEqual(Object.keys(rep.new).sort(), ['_id', '_key', '_rev', 'n']);
    const silent = await col.save({ _key: 's' }, { silent: true });
    assert.equal(silent?._rev, undefined, 'silent returns no document meta');
    assert.equal((await col.document('s'))._key, 's');
    await assert.rejects(col.remove('a', { ifMatch: cur._rev }), arangoErr(1200, 412));
    const removed = await col.remove('a', { returnOld: true });
    assert.equal(removed.old.n, 4);
    await assert.rejects(col.remove('a'), arangoErr(1202, 404));

    // overwriteMode replace and update on save.
    await col.save({ _key: 'o', a: 1, b: 1 });
    assert.equal((await col.save({ _key: 'o', a: 2 }, { overwriteMode: 'update', returnNew: true })).new.b, 1);
    assert.equal('b' in (await col.save({ _key: 'o', a: 3 }, { overwriteMode: 'replace', returnNew: true })).new, false);
    await assert.rejects(col.save({ _key: 'o' }, { overwriteMode: 'conflict' }), arangoErr(1210, 409));
  });

  test('multi-document calls: one result per document, an error object for each that failed', async () => {
    const db = database('arango3');
    const col = await db.createCollection('many');
    const saved = await col.saveAll([{ _key: 'a', v: 1 }, { _key: 'a', v: 2 }, { _key: 'bad key' }, { v: 3 }]);
    assert.equal(saved[0]._key, 'a');
    assert.deepEqual([saved[1].errorNum, saved[2].errorNum], [1210, 1221]);
    assert.equal(saved[1].error, true);
    assert.match(saved[3]._key, /^\d+$/);
    const docs = await col.documents(['a', 'nope', saved[3]._key]);
    assert.equal(docs[0].v, 1);
    assert.equal(docs[1].errorNum, 1202);
    assert.equal(docs[2].v, 3);
    const replaced = await col.replaceAll([{ _key: 'a', v: 10 }, { _key: 'nope', v: 0 }]);
    assert.equal(replaced[0]._oldRev, saved[0]._rev);
    assert.equal(replaced[1].errorNum, 1202);
    const updated = await col.updateAll([{ _key: 'a', w: 1 }], { returnNew: true });
    assert.deepEqual([updated[0].new.v, updated[0].new.w], [10, 1]);
    const stale = await col.updateAll([{ _key: 'a', _rev: saved[0]._rev, w: 2 }], { ignoreRevs: false });
    assert.equal(stale[0].errorNum, 1200);
    const removed = await col.removeAll(['a', 'nope']);
    assert.equal(removed[0]._key, 'a');
    assert.equal(removed[1].errorNum, 1202);
  });

  test('one store, three doors: a browser write read by arangojs, an arangojs write replicated, one precondition', async () => {
    const db = database('arango4');
    const col = db.collection('notes');
    // Synced only when asked (store.sync()), so that the browser's edit
    // below is made without having seen the ArangoDB edit.
    const store = await openStore({ url: server.wsURL, database: 'arango4', sync: false });
    const fromWs = await store.collection('notes').save({ _key: 'ws', text: 'from a browser' });
    await store.sync();
    const viaArango = await col.document('ws');
    assert.equal(viaArango.text, 'from a browser');
    assert.equal(viaArango._rev, fromWs._rev);

    const fromArango = await col.save({ _key: 'ar', text: 'from arangojs' });
    await store.sync();
    const got = await store.get('notes/ar');
    assert.equal(got.text, 'from arangojs');
    assert.equal(got._rev, fromArango._rev);

    // Whichever door writes first, the other's stale _rev is refused.
    await col.update('ws', { text: 'arango edit' });
    await store.put('notes', { ...(await store.get('notes/ws')), text: 'browser edit' }).catch(() => {});
    const outcome = await store.sync().then(
      () => 'synced',
      (err) => err.code,
    );
    assert.ok(['synced', 'conflict'].includes(outcome), outcome);
    const final = await col.document('ws');
    assert.equal(final.text, 'arango edit', 'the browser overwrote a newer write it never saw');
    await assert.rejects(col.replace('ws', { text: 'stale' }, { ifMatch: fromWs._rev }), arangoErr(1200, 412));
    await store.close();
  });

  test('errors: unknown paths and bad bodies answer at once with ArangoDB error bodies', async () => {
    const res = await fetch(`${server.base}/_db/arango5/_api/gharial`);
    assert.equal(res.status, 404);
    const body = await res.json();
    assert.deepEqual([body.error, body.errorNum], [true, 1911]);
    const bad = await fetch(`${server.base}/_db/arango5/_api/document/c`, { method: 'POST', body: '{"a":' });
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).error, true);
    const deep = await fetch(`${server.base}/_db/arango5/_api/document/c`, { method: 'POST', body: '['.repeat(200) + ']'.repeat(200) });
    assert.equal((await deep.json()).errorNum, 1904);
    const other = await fetch(`${server.base}/_db/arango5/_api/document/c`, { method: 'POST', body: '{}', headers: { origin: 'http://evil.example' } });
    assert.equal(other.status, 403);
    const metrics = await (await fetch(`${server.base}/metrics`)).text();
    assert.match(metrics, /hilodb_http_requests_total\{door="arango"\} [1-9]/);
  });

  test('reads with If-Match and If-None-Match, graceful reads, and the x-arango-error-codes header', async () => {
    const db = database('arango6');
    const col = await db.createCollection('docs');
    const a = await col.save({ _key: 'a', n: 1 });
    assert.equal((await col.document('a', { ifMatch: a._rev })).n, 1);
    await assert.rejects(col.document('a', { ifMatch: '_stale' }), arangoErr(1200, 412));
    await assert.rejects(col.document('a', { ifNoneMatch: a._rev }), (err) => err.code === 304);
    assert.equal((await col.document('a', { ifNoneMatch: '_other' })).n, 1);
    assert.equal(await col.documentExists('a', { ifMatch: a._rev }), true);
    await assert.rejects(col.documentExists('a', { ifNoneMatch: a._rev }), (err) => err.code === 304);
    assert.equal(await col.document('nope', { graceful: true }), null);
    // The header counts the failures of a multi-document call by number.
    const res = await fetch(`${server.base}/_db/arango6/_api/document/docs`, {
      method: 'POST',
      body: JSON.stringify([{ _key: 'a' }, { _key: 'bad key' }, { _key: 'b' }, { _key: 'a' }]),
    });
    assert.equal(res.status, 202);
    assert.deepEqual(JSON.parse(res.headers.get('x-arango-error-codes')), { 1210: 2, 1221: 1 });
    const body = await res.json();
    assert.deepEqual(body.map((r) => r.errorNum ?? r._key), [1210, 1221, 'b', 1210]);
    // An insert that overwrites takes a _rev as a precondition with ignoreRevs: false.
    await assert.rejects(col.save({ _key: 'a', _rev: '_stale', n: 2 }, { overwriteMode: 'replace', ignoreRevs: false }), arangoErr(1200, 412));
    const cur = await col.document('a');
    assert.equal((await col.save({ _key: 'a', _rev: cur._rev, n: 3 }, { overwriteMode: 'update', ignoreRevs: false, returnNew: true })).new.n, 3);
  });

  test('options and properties hilodb does not serve are refused, never ignored', async () => {
    const db = database('arango7');
    const col = await db.createCollection('docs');
    await assert.rejects(col.save({ v: 1 }, { versionAttribute: 'v' }), arangoErr(400, 400));
    await assert.rejects(db.createCollection('typed', { schema: { rule: { type: 'object' } } }), arangoErr(400, 400));
    await assert.rejects(db.createCollection('edges', { type: 3 }), arangoErr(400, 400));
    assert.deepEqual((await db.collections()).map((c) => c.name), ['docs'], 'a refused collection was created');
    // waitForSync is served: every write is synced before it is answered.
    const made = await col.save({ v: 1 }, { waitForSync: true });
    assert.equal((await col.document(made._key)).v, 1);
    // Unserved routes answer at once.
    await assert.rejects(db.listAnalyzers(), arangoErr(1911, 404));
    await assert.rejects(col.figures(), arangoErr(1911, 404));
  });

  test('a write through arangojs is a live change with its document on the websocket', async () => {
    const db = database('arango8');
    const store = await openStore({ url: server.wsURL, database: 'arango8', sync: true, changeFeed: true });
    try {
      let found;
      let wake;
      const stop = store.watch(({ results }) => {
        found ??= results.find((r) => r.id === 'live/x');
        wake?.();
      });
      const made = await (await db.createCollection('live')).save({ _key: 'x', text: 'pushed by the server' });
      const deadline = Date.now() + 10000;
      while (!found && Date.now() < deadline) await new Promise((ok) => ((wake = ok), setTimeout(ok, 200)));
      stop();
      assert.ok(found, 'the arangojs write never reached the live change feed');
      assert.equal(found.doc.text, 'pushed by the server');
      assert.equal(found.rev, made._rev);
    } finally {
      await store.close();
    }
  });
});
