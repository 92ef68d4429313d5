// One store, three doors, in Chromium: a document a page pushes is read
// through RavenDB's and ArangoDB's HTTP APIs with its _rev; documents
// written through those APIs reach the page live; a _rev made stale by an
// HTTP write cannot overwrite it from the page. And the package's
// ArangoDB-style calls in a page's shared store: keyOptions, preconditions on
// reads, writes and deletes, refused options, per-item errors, the feed.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { serveWithChromium } from './harness.mjs';

const env = serveWithChromium();

async function http(method, path, body) {
  const res = await fetch(`${env.server.base}${path}`, { method, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

test('a page, RavenDB\'s API and ArangoDB\'s API share one store', async () => {
  const database = `doors${Date.now()}`;
  const page = await env.browser.newPage();
  const pageErrors = [];
  page.on('pageerror', (err) => pageErrors.push(err));
  try {
    await page.goto(`${env.server.base}/`);
    await page.evaluate(async (database) => {
      const { openStore } = await import('/index.js');
      window.store = await openStore({ url: `ws://${location.host}/v1/sync`, database, sync: true, persist: false });
    }, database);

    // A browser's write, read through both HTTP APIs with its _rev.
    const mine = await page.evaluate(async () => {
      const doc = await window.store.put('notes', { _key: 'browser', text: 'from the page' });
      await window.store.sync();
      return doc;
    });
    const viaArango = await http('GET', `/_db/${database}/_api/document/notes/browser`);
    assert.equal(viaArango.status, 200);
    assert.deepEqual([viaArango.body.text, viaArango.body._rev], ['from the page', mine._rev]);
    const viaRaven = await http('GET', `/databases/${database}/docs?id=notes/browser`);
    assert.equal(viaRaven.status, 200);
    assert.deepEqual([viaRaven.body.Results[0].text, viaRaven.body.Results[0]['@metadata']['@change-vector']], ['from the page', mine._rev]);

    // Writes through the HTTP APIs reach the page live.
    const arango = await http('POST', `/_db/${database}/_api/document/notes`, { _key: 'arango', text: 'from arangojs' });
    assert.equal(arango.status, 201);
    const raven = await http('POST', `/databases/${database}/bulk_docs`, {
      Commands: [{ Id: 'notes/raven', Type: 'PUT', ChangeVector: null, Document: { text: 'from ravendb', '@metadata': { '@collection': 'notes' } } }],
    });
    assert.equal(raven.status, 201);
    const seen = await page.evaluate(async () => {
      const deadline = Date.now() + 10000;
      for (;;) {
        const got = await Promise.all(['notes/arango', 'notes/raven'].map((id) => window.store.get(id).catch(() => null)));
        if (got.every(Boolean) || Date.now() > deadline) return got;
        await new Promise((ok) => setTimeout(ok, 25));
      }
    });
    assert.deepEqual(
      seen.map((d) => d && [d.text, d._rev]),
      [
        ['from arangojs', arango.body._rev],
        ['from ravendb', raven.body.Results[0]['@change-vector']],
      ],
    );

    // An HTTP write makes the page's _rev stale: the page cannot overwrite it.
    const updated = await http('PATCH', `/_db/${database}/_api/document/notes/browser`, { text: 'edited over HTTP' });
    assert.equal(updated.status, 201);
    const outcome = await page.evaluate(
      async ({ mine, newRev }) => {
        const deadline = Date.now() + 10000;
        while ((await window.store.get(mine._id))._rev !== newRev && Date.now() < deadline) await new Promise((ok) => setTimeout(ok, 25));
        return window.store.put('notes', { ...mine, text: 'stale edit' }).then(
          () => 'written',
          (err) => `${err.code} ${err.num}`,
        );
      },
      { mine, newRev: updated.body._rev },
    );
    assert.equal(outcome, 'conflict 1200');
    assert.equal((await http('GET', `/_db/${database}/_api/document/notes/browser`)).body.text, 'edited over HTTP');
    await page.evaluate(() => window.store.close());
    assert.deepEqual(pageErrors, []);
  } finally {
    await page.close();
  }
});

test('in a page (a persisted store shared by tabs): collections, keyOptions, preconditions, per-item errors, the change feed', async () => {
  const database = `pagecol${Date.now()}`;
  const page = await env.browser.newPage();
  const pageErrors = [];
  page.on('pageerror', (err) => pageErrors.push(err));
  try {
    await page.goto(`${env.server.base}/`);
    const r = await page.evaluate(async (database) => {
      const { openStore } = await import('/index.js');
      const store = await openStore({ url: `ws://${location.host}/v1/sync`, database, persist: database, changeFeed: true });
      const code = (p) => p.then(
        () => 'ok',
        (err) => `${err.code} ${err.num}`,
      );
      const users = await store.createCollection('users', { keyOptions: { type: 'autoincrement', increment: 10, offset: 5, allowUserKeys: false } });
      const a = await users.save({ name: 'ann' });
      const b = await users.save({ name: 'bob' });
      const up = await users.update(a._key, { age: 30 }, { returnNew: true });
      const out = {
        shared: (await store.info()).shared,
        keys: [a._key, b._key],
        oldRev: up._oldRev === a._rev,
        age: up.new.age,
        userKey: await code(users.save({ _key: 'mine' })),
        staleUpdate: await code(users.update(a._key, { age: 1 }, { ifMatch: a._rev })),
        staleRead: await code(users.document(a._key, { ifMatch: a._rev })),
        graceful: await users.document('404', { graceful: true }),
        unknown: await code(users.save({}, { waitForSync: true })),
        many: (await users.saveAll([{ name: 'c' }, { _key: 'x' }])).map((x) => x.errorNum ?? 'saved'),
        staleDelete: await code(store.delete(`users/${a._key}`, { rev: a._rev })),
        delete: await code(store.delete(`users/${b._key}`, { rev: b._rev })),
      };
      out.feed = (await store.changes()).results.map((e) => [e.id, e.deleted]);
      out.age2 = (await users.document(a._key)).age;
      await store.close();
      return out;
    }, database);
    assert.equal(r.shared, true);
    assert.deepEqual(r.keys.map((k) => (Number(k) - 5) % 10), [0, 0]);
    assert.equal(Number(r.keys[1]) - Number(r.keys[0]), 10);
    assert.deepEqual([r.oldRev, r.age, r.age2], [true, 30, 30]);
    assert.deepEqual([r.userKey, r.staleUpdate, r.staleRead, r.unknown], ['unexpected_key 1222', 'conflict 1200', 'conflict 1200', 'bad_request 400']);
    assert.equal(r.graceful, null);
    assert.deepEqual(r.many, ['saved', 1222]);
    assert.deepEqual([r.staleDelete, r.delete], ['conflict 1200', 'ok']);
    const [ua, ub] = r.keys.map((k) => `users/${k}`);
    assert.deepEqual(r.feed.filter(([id]) => id === ua || id === ub), [
      [ua, false],
      [ub, true],
    ]);
    assert.deepEqual(pageErrors, []);
  } finally {
    await page.close();
  }
});
