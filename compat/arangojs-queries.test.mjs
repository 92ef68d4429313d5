// ArangoDB's official client (arangojs, pinned in package.json) against the
// real hilodb sync server: AQL queries and cursors, collection management,
// indexes, imports, databases and the queue-time header. Each test follows
// a test file of arangojs's own suite (github.com/arangodb/arangojs,
// src/test/), named beside it, with the cases it checks.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { aql, Database } from 'arangojs';

import { buildServer, startServer } from '../js/test/server.mjs';

let cleanupBin = async () => {};
let server;
let system;

before(async () => {
  const built = await buildServer();
  cleanupBin = built.cleanup;
  server = await startServer(built.bin);
  system = new Database({ url: server.base });
});

after(async () => {
  system?.close();
  await server?.stop();
  await cleanupBin();
});

function arangoErr(errorNum, code) {
  return (err) => {
    assert.equal(err.errorNum, errorNum, `errorNum of ${err.message}`);
    if (code) assert.equal(err.code, code, `code of ${err.message}`);
    return true;
  };
}

describe('arangojs queries, collections, indexes, imports and databases against hilodb', () => {
  // 01-manipulating-databases.ts: createDatabase, get, listDatabases,
  // dropDatabase; get fails once dropped.
  test('databases: create, describe, list, drop', async () => {
    const db = await system.createDatabase('qdb1');
    assert.equal((await db.get()).name, 'qdb1');
    assert.ok((await system.listDatabases()).includes('qdb1'));
    await assert.rejects(system.createDatabase('qdb1'), arangoErr(1207, 409));
    await system.dropDatabase('qdb1');
    await assert.rejects(db.get(), arangoErr(1228, 404));
  });

  // 08-cursors.ts: "for await of cursor", cursor.all, cursor.next,
  // cursor.hasNext, cursor.batches (batchSize), cursor.kill; and
  // 23-aql-queries-stream.ts: "supports options" (a stream's count is
  // undefined), "supports compact queries with options" (RANGE).
  test('cursors: all, next, hasNext, batches, kill, stream', async () => {
    const db = await system.createDatabase('qdb2');
    const all = [];
    for await (const v of await db.query(aql`FOR i IN 0..10 RETURN i`)) all.push(v);
    assert.deepEqual(all, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const c = await db.query(aql`FOR i IN 0..10 RETURN i`, { batchSize: 3, count: true });
    assert.equal(c.count, 11);
    assert.equal(await c.next(), 0);
    assert.equal(c.hasNext, true);
    assert.deepEqual(await c.batches.next(), [1, 2]);
    assert.deepEqual(await c.all(), [3, 4, 5, 6, 7, 8, 9, 10]);
    assert.equal(c.hasNext, false);
    const k = await db.query(aql`FOR i IN 1..10 RETURN i`, { batchSize: 2 });
    assert.equal(k.batches.hasMore, true);
    await k.kill();
    assert.equal(k.batches.hasMore, false);
    const s = await db.query({ query: 'FOR x IN RANGE(1, @max) RETURN x', bindVars: { max: 10 } }, { batchSize: 2, count: true, stream: true });
    assert.equal(s.count, undefined);
    assert.equal(s.batches.hasMore, true);
    assert.deepEqual(await s.all(), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  // 08-cursors.ts and the query tests of arangojs's README: FILTER, SORT,
  // LIMIT, projections, bind parameters, fullCount, COLLECT WITH COUNT,
  // LENGTH and DOCUMENT over a collection's documents; a query outside the
  // subset is an ArangoError 1501.
  test('AQL over documents', async () => {
    const db = await system.createDatabase('qdb3');
    const users = await db.createCollection('users');
    await users.saveAll([
      { _key: 'ann', age: 31, city: 'Oslo', tags: ['a'] },
      { _key: 'bob', age: 25, city: 'Rome', tags: [] },
      { _key: 'cy', age: 40, city: 'Oslo', tags: ['a', 'b'] },
      { _key: 'dee', age: 19, city: 'Lima' },
    ]);
    const names = await (await db.query(aql`FOR u IN ${users} FILTER u.age >= ${20} AND u.city != "Lima" SORT u.age DESC RETURN u._key`)).all();
    assert.deepEqual(names, ['cy', 'ann', 'bob']);
    const page = await db.query(aql`FOR u IN users SORT u._key LIMIT 1, 2 RETURN {k: u._key, c: u.city}`, { fullCount: true });
    assert.deepEqual(await page.all(), [{ k: 'bob', c: 'Rome' }, { k: 'cy', c: 'Oslo' }]);
    assert.equal(page.extra.stats.fullCount, 4);
    const tagged = await (await db.query(aql`FOR u IN users FILTER "a" IN u.tags AND u._key LIKE "a%" RETURN u.age`)).all();
    assert.deepEqual(tagged, [31]);
    const other = await (await db.query(aql`FOR u IN users FILTER u.city NOT IN ["Oslo", "Rome"] OR NOT (u.age < 40) SORT u._key RETURN u._key`)).all();
    assert.deepEqual(other, ['cy', 'dee']);
    assert.deepEqual(await (await db.query(aql`FOR u IN users FILTER u.city == "Oslo" COLLECT WITH COUNT INTO n RETURN n`)).all(), [2]);
    assert.deepEqual(await (await db.query(aql`RETURN LENGTH(${users})`)).all(), [4]);
    const [doc] = await (await db.query(aql`RETURN DOCUMENT("users/ann")`)).all();
    assert.equal(doc.age, 31);
    assert.equal(doc['@metadata'], undefined);
    await assert.rejects(db.query('FOR u IN users RETURN CONCAT(u._key, "!")'), arangoErr(1501, 400));
    await assert.rejects(db.query('FOR u IN nosuch RETURN u'), arangoErr(1203, 404));
    await assert.rejects(db.query('FOR u IN users FILTER u.a == @a RETURN u'), arangoErr(1551, 400));
  });

  // 09-collection-metadata.ts: get, exists, properties, count, revision;
  // 10-manipulating-collections.ts: properties({waitForSync}), rename,
  // truncate, drop.
  test('collections: metadata and management', async () => {
    const db = await system.createDatabase('qdb4');
    const col = await db.createCollection('things');
    const info = await col.get();
    assert.deepEqual([info.name, info.isSystem, info.status, info.type], ['things', false, 3, 2]);
    assert.equal(await col.exists(), true);
    assert.equal(await db.collection('no').exists(), false);
    await assert.rejects(db.collection('no').get(), arangoErr(1203, 404));
    assert.equal((await col.properties()).waitForSync, false);
    assert.equal((await col.properties({ waitForSync: true })).waitForSync, true);
    assert.ok('revision' in (await col.revision()));
    await col.save({});
    assert.equal((await col.count()).count, 1);
    await col.truncate();
    assert.equal((await col.count()).count, 0);
    assert.equal((await col.rename('stuff')).name, 'stuff');
    await col.drop();
    await assert.rejects(col.get(), arangoErr(1203, 404));
  });

  // 11-managing-indexes.ts: ensureIndex#persistent, index, indexes,
  // dropIndex; kinds hilodb does not keep are refused.
  test('indexes', async () => {
    const db = await system.createDatabase('qdb5');
    const col = await db.createCollection('items');
    const ix = await col.ensureIndex({ type: 'persistent', fields: ['value'] });
    assert.deepEqual([ix.type, ix.fields, ix.isNewlyCreated], ['persistent', ['value'], true]);
    assert.equal((await col.ensureIndex({ type: 'persistent', fields: ['value'] })).isNewlyCreated, false);
    assert.equal((await col.index(ix.id)).id, ix.id);
    assert.equal((await col.indexes()).filter((i) => i.id === ix.id).length, 1);
    assert.equal((await col.dropIndex(ix.id)).id, ix.id);
    assert.equal((await col.indexes()).filter((i) => i.id === ix.id).length, 0);
    await assert.rejects(col.ensureIndex({ type: 'geo', fields: ['value'] }), arangoErr(10, 400));
  });

  // 13-bulk-imports.ts: tuples array, documents array, LDJSON strings and
  // buffers of arrays and documents, JSON arrays (type auto and list).
  test('imports', async () => {
    const db = await system.createDatabase('qdb6');
    const col = await db.createCollection('fruit');
    const ok = { error: false, created: 3, errors: 0, empty: 0, updated: 0, ignored: 0 };
    assert.deepEqual(await col.import([['_key', 'data'], ['ta1', 'banana'], ['ta2', 'peach'], ['ta3', 'apricot']]), ok);
    assert.deepEqual(await col.import([{ _key: 'da1', data: 'banana' }, { _key: 'da2' }, { _key: 'da3' }]), ok);
    assert.deepEqual(await col.import(Buffer.from('["_key", "data"]\r\n["tb1", "x"]\r\n["tb2", "y"]\r\n["tb3", "z"]\r\n')), ok);
    assert.deepEqual(await col.import('{"_key": "ds1"}\r\n{"_key": "ds2"}\r\n{"_key": "ds3"}\r\n', { type: 'documents' }), ok);
    assert.deepEqual(await col.import(JSON.stringify([{ _key: 'j1' }, { _key: 'j2' }, { _key: 'j3' }]), { type: 'auto' }), ok);
    assert.deepEqual(await col.import(JSON.stringify([{ _key: 'l1' }, { _key: 'l2' }, { _key: 'l3' }]), { type: 'list' }), ok);
    assert.equal((await col.count()).count, 18);
  });

  // 29-queue-time.ts: the x-arango-queue-time-seconds header feeds
  // db.queueTime.
  test('queue time', async () => {
    const db = new Database({ url: server.base });
    await db.version();
    assert.equal(db.queueTime.getLatest(), 0);
    assert.ok(db.queueTime.getValues().length > 0);
    db.close();
  });
});
