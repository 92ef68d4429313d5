// RavenDB's official Node client (pinned in package.json), unchanged,
// against the real hilodb sync server: queries, lazy operations,
// loadStartingWith, conditional loads, HiLo documents and the operations
// the door serves. Each test follows a test of the client's own suite
// (github.com/ravendb/ravendb-nodejs-client, test/…), named beside it;
// compat/ravendb-official runs those files themselves.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import {
  DocumentStore,
  GetCollectionStatisticsOperation,
  GetIdentitiesOperation,
  NextIdentityForOperation,
} from 'ravendb';

import { buildServer, startServer } from '../js/test/server.mjs';

class User {
  constructor(name, age) {
    this.name = name;
    this.age = age;
  }
}

class HiloDoc {
  constructor(max) {
    this.Max = max;
  }
}

class Order {
  constructor(company, status, total, tags) {
    this.company = company;
    this.status = status;
    this.total = total;
    this.tags = tags;
  }
}

class Company {
  constructor(name) {
    this.name = name;
  }
}

class RegexMe {
  constructor(text) {
    this.text = text;
  }
}

let cleanupBin = async () => {};
let server;
const stores = [];
let dbs = 0;

function newStore() {
  const store = new DocumentStore([server.base], `q${++dbs}`);
  store.initialize();
  stores.push(store);
  return store;
}

before(async () => {
  const built = await buildServer();
  cleanupBin = built.cleanup;
  server = await startServer(built.bin);
});

after(async () => {
  for (const s of stores) s.dispose();
  await server?.stop();
  await cleanupBin();
});

async function seedUsers(store) {
  const session = store.openSession();
  await session.store(new User('John', 3), 'users/1');
  await session.store(new User('John', 5), 'users/2');
  await session.store(new User('Tarzan', 2), 'users/3');
  await session.saveChanges();
}

describe('the ravendb client queries hilodb', () => {
  // QueryTest "query simple", "query with where clause".
  test('session.query with where, order by, count, paging and projections', async () => {
    const store = newStore();
    await seedUsers(store);
    const session = store.openSession();
    const all = await session.query({ collection: 'users' }).all();
    assert.equal(all.length, 3);
    const johns = await session.query(User).whereEquals('name', 'JOHN').orderByDescending('age').all();
    assert.deepEqual(johns.map((u) => u.age), [5, 3]);
    assert.ok(johns[0] instanceof User);
    const young = await session.query(User).whereLessThan('age', 3).all();
    assert.deepEqual(young.map((u) => u.name), ['Tarzan']);
    // QueryTest "query where between is inclusive".
    assert.equal(await session.query(User).whereBetween('age', 2, 3).count(), 2);
    // QueryTest "query count".
    assert.equal(await session.query(User).count(), 3);
    const page = await session.query(User).orderBy('age').skip(1).take(1).all();
    assert.deepEqual(page.map((u) => u.age), [3]);
    const names = await session.query(User).selectFields('name').orderBy('name').all();
    assert.deepEqual(names, ['John', 'John', 'Tarzan']);
    let stats;
    await session.query(User).whereIn('name', ['tarzan']).statistics((s) => { stats = s; }).all();
    assert.equal(stats.totalResults, 1);
    assert.equal(stats.indexName, 'Auto/Users/Byname');
    assert.equal(stats.isStale, false);
  });

  test('documentQuery and rawQuery: startsWith, not, or, exists, includes', async () => {
    const store = newStore();
    {
      const session = store.openSession();
      await session.store(new Company('Acme'), 'companies/1');
      await session.store(new Order('companies/1', 'Shipped', 10, ['red', 'blue']), 'orders/1');
      await session.store(new Order('companies/1', 'Pending', 20, ['red']), 'orders/2');
      await session.saveChanges();
    }
    const session = store.openSession();
    const shipped = await session.advanced.documentQuery(Order)
      .whereStartsWith('status', 'ship').orElse().whereEquals('total', 99).all();
    assert.deepEqual(shipped.map((o) => o.total), [10]);
    const notShipped = await session.advanced.documentQuery(Order).not().whereEquals('status', 'shipped').all();
    assert.deepEqual(notShipped.map((o) => o.total), [20]);
    const both = await session.query(Order).containsAll('tags', ['red', 'blue']).all();
    assert.deepEqual(both.map((o) => o.total), [10]);
    const withInclude = await session.query(Order).include('company').whereExists('tags').all();
    assert.equal(withInclude.length, 2);
    const requests = session.advanced.numberOfRequests;
    const company = await session.load('companies/1');
    assert.equal(company.name, 'Acme');
    assert.equal(session.advanced.numberOfRequests, requests, 'the included company came with the query');
    const raw = await session.advanced.rawQuery('from Orders where total >= $min order by total desc', Order)
      .addParameter('min', 10).all();
    assert.deepEqual(raw.map((o) => o.total), [20, 10]);
  });

  // RegexQueryTest "can do queries with regex from documentQuery".
  test('whereRegex matches as RavenDB does, without case', async () => {
    const store = newStore();
    const session = store.openSession();
    for (const t of ['I love dogs and cats', 'I love cats', 'I love dogs', 'I love bats', 'dogs love me', 'cats love me']) {
      await session.store(new RegexMe(t));
    }
    await session.saveChanges();
    const found = await store.openSession().query(RegexMe).whereRegex('text', '^[a-z ]{2,4}love').all();
    assert.equal(found.length, 4);
  });

  test('what is not served says so at once', async () => {
    const store = newStore();
    const session = store.openSession();
    await assert.rejects(session.query({ indexName: 'Users/ByName' }).all(), /not served/);
    await assert.rejects(session.query(User).search('name', 'john').all(), /search\(\) is not served/);
    await assert.rejects(session.advanced.rawQuery('from Users where', User).all(), (err) => err.name === 'InvalidQueryException');
  });
});

describe('lazy operations and loadStartingWith', () => {
  // LazyTest "can execute all pending lazy operations", QueryTest
  // "query lazily" and "query count lazily".
  test('lazy loads and lazy queries go in one multi_get', async () => {
    const store = newStore();
    await seedUsers(store);
    const session = store.openSession();
    const u1 = session.advanced.lazily.load('users/1');
    const missing = session.advanced.lazily.load('users/404');
    const johns = session.query(User).whereEquals('name', 'john').lazily();
    const count = session.query(User).countLazily();
    await session.advanced.eagerly.executeAllPendingLazyOperations();
    assert.equal(session.advanced.numberOfRequests, 1);
    assert.equal((await u1.getValue()).name, 'John');
    assert.equal(await missing.getValue(), null);
    assert.equal((await johns.getValue()).length, 2);
    assert.equal(await count.getValue(), 3);
  });

  // LoadAllStartingWith "can load all starting with".
  test('loadStartingWith pages, matches and excludes, eagerly and lazily', async () => {
    const store = newStore();
    {
      const session = store.openSession();
      for (const id of ['abc/1', 'abc/2', 'abc/10', 'xyz/1']) await session.store(new User(id, 1), id);
      await session.saveChanges();
    }
    const session = store.openSession();
    const all = await session.advanced.loadStartingWith('abc/');
    assert.deepEqual(all.map((u) => u.name), ['abc/1', 'abc/10', 'abc/2']);
    const page = await session.advanced.loadStartingWith('abc/', { start: 1, pageSize: 1 });
    assert.deepEqual(page.map((u) => u.name), ['abc/10']);
    const matched = await store.openSession().advanced.loadStartingWith('abc/', { matches: '1*', exclude: '10' });
    assert.deepEqual(matched.map((u) => u.name), ['abc/1']);
    const lazy = store.openSession().advanced.lazily.loadStartingWith('xyz/');
    assert.deepEqual(Object.keys(await lazy.getValue()), ['xyz/1']);
  });
});

describe('conditional loads, HiLo documents and operations', () => {
  // ConditionalLoadTest "conditionalLoad_GetNotModifiedDocumentByIdShouldReturnNull".
  test('conditionalLoad of an unchanged document answers not modified', async () => {
    const store = newStore();
    await seedUsers(store);
    const session = store.openSession();
    const user = await session.load('users/1');
    const cv = session.advanced.getChangeVectorFor(user);
    const other = store.openSession();
    const same = await other.advanced.conditionalLoad('users/1', cv, User);
    assert.equal(same.entity, null);
    assert.equal(same.changeVector, cv);
    user.age = 4;
    await session.saveChanges();
    const changed = await store.openSession().advanced.conditionalLoad('users/1', cv, User);
    assert.equal(changed.entity.age, 4);
    assert.notEqual(changed.changeVector, cv);
  });

  // HiLoTest "can operate with multiple DBs" and "capacity should double".
  test('a stored Raven/Hilo document moves the ids on, and shows the new Max', async () => {
    const store = newStore();
    {
      const session = store.openSession();
      await session.store(new HiloDoc(64), 'Raven/Hilo/users');
      await session.saveChanges();
    }
    const session = store.openSession();
    const user = new User('after the migration', 1);
    await session.store(user);
    await session.saveChanges();
    assert.equal(user.id, 'users/65-A');
    const hilo = await store.openSession().load('Raven/Hilo/users', HiloDoc);
    assert.equal(hilo.Max, 96);
    assert.ok(hilo instanceof HiloDoc, 'the type comes back from @metadata');
  });

  test('GetIdentitiesOperation and GetCollectionStatisticsOperation', async () => {
    const store = newStore();
    await seedUsers(store);
    await store.maintenance.send(new NextIdentityForOperation('orders'));
    const ids = await store.maintenance.send(new GetIdentitiesOperation());
    assert.equal(ids['orders|'], 1);
    const stats = await store.maintenance.send(new GetCollectionStatisticsOperation());
    assert.equal(stats.countOfDocuments, 3);
    assert.equal(stats.collections.Users, 3);
  });
});
