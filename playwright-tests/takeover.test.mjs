// Tabs of one origin sharing one persisted store, in Debian's Chromium
// against the real sync server, while the tab whose host worker runs the
// store goes away (closed, mid-write or with calls in flight): the next
// tab's host takes over, no acknowledged write is lost or made twice, and
// no id is handed out twice. tabs.test.mjs has the rest.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { logBackend, serveWithChromium } from './harness.mjs';
import { holdNextWrite, openPagesWith } from './tabs.mjs';

const env = serveWithChromium();
const pageErrors = [];
const openPages = openPagesWith(env, pageErrors);

test('the first page closed mid-write: nothing it was told is lost, the others go on', async () => {
  const database = `tabsclose${Date.now()}`;
  const context = await env.browser.newContext();
  try {
    const [first, ...rest] = await openPages(context, 3, database);
    // The log is in OPFS, written by the store in the first page's host
    // worker: closing that page moves the store to another page's.
    assert.equal(await logBackend(rest[0], database), 'opfs');
    const acked = [];
    await first.exposeFunction('ack', (d) => acked.push(d));
    await first.evaluate(() => {
      (async () => {
        for (let i = 0; ; i++) {
          const d = await window.store.put('orders', { first: i });
          window.ack({ id: d._id, rev: d._rev });
        }
      })();
    });
    await new Promise((ok) => setTimeout(ok, 300));
    await first.close();
    assert.ok(acked.length > 5, `only ${acked.length} writes acknowledged before the close`);
    // The others keep writing and read every acknowledged write. The first
    // page's host worker ran the store: a put sent to it as it went away is
    // sent again to the next host, which tells from its receipt whether it
    // was made, so none fails.
    const { more, retried } = await rest[0].evaluate(async () => {
      const docs = [];
      let retried = 0;
      while (docs.length < 20) {
        try {
          docs.push(await window.store.put('orders', { after: docs.length }));
        } catch (err) {
          if (err.code !== 'unavailable' || err.num !== 503) throw err;
          retried++;
        }
      }
      return { more: docs.map((d) => d._id), retried };
    });
    assert.equal(retried, 0, `${retried} puts rejected after their host went away`);
    const ids = [...acked.map((d) => d.id), ...more];
    assert.equal(new Set(ids).size, ids.length, 'an id was handed out twice');
    const revs = await rest[1].evaluate((ids) => Promise.all(ids.map((id) => window.store.get(id).then((d) => d._rev))), acked.map((d) => d.id));
    assert.deepEqual(revs, acked.map((d) => d.rev));
    // Closing the last pages closes the store; a new page reopens it from
    // IndexedDB with everything in it.
    for (const page of rest) await page.evaluate(() => window.store.close());
    const [again] = await openPages(context, 1, database);
    const found = await again.evaluate((ids) => Promise.all(ids.map((id) => window.store.get(id).then((d) => d._id))), ids);
    assert.deepEqual(found, ids);
    await again.evaluate(() => window.store.close());
  } finally {
    await context.close();
  }
});

test('the writing tab closes again and again while another tab writes: every acknowledged write is kept', async () => {
  const database = `tabsrotate${Date.now()}`;
  const context = await env.browser.newContext();
  try {
    // The store runs in the oldest open tab's host worker: each close
    // below takes the host away mid-write, and the next tab's host worker
    // opens the store from storage. A put or delete in flight to the host
    // that went away is sent again there and answered from its receipt, or
    // made: none fails, and none is made twice.
    const lent = await openPages(context, 3, database);
    const [writer] = await openPages(context, 1, database);
    assert.equal(await logBackend(writer, database), 'opfs');
    const acked = [];
    await writer.exposeFunction('ack', (d) => acked.push(d));
    await writer.evaluate(() => {
      window.stop = false;
      window.retried = 0;
      window.done = (async () => {
        for (let i = 0; !window.stop; i++) {
          let d;
          try {
            d = await window.store.put('orders', { rotate: i });
            // Every third document is deleted again: a delete sent again
            // to the next host must not fail with not_found.
            if (i % 3 === 2) {
              await window.store.delete(d._id);
              continue;
            }
          } catch (err) {
            if (err.code !== 'unavailable' || err.num !== 503) throw err;
            window.retried++;
            continue;
          }
          window.ack({ id: d._id, rev: d._rev });
        }
      })();
    });
    for (const page of [...lent]) {
      const before = acked.length;
      await page.close();
      // Writes go on through the next tab's writer.
      const deadline = Date.now() + 15000;
      while (acked.length < before + 20) {
        assert.ok(Date.now() < deadline, `writes stalled after a writing tab closed (${acked.length - before} since)`);
        await new Promise((ok) => setTimeout(ok, 20));
      }
    }
    const retried = await writer.evaluate(async () => {
      window.stop = true;
      await window.done;
      return window.retried;
    });
    assert.equal(retried, 0, `${retried} puts rejected for ${lent.length} hosts gone`);
    const ids = acked.map((d) => d.id);
    assert.equal(new Set(ids).size, ids.length, 'an id was handed out twice');
    // Each put of the loop stored once: a put made by a host that went away
    // and then sent again is not made a second time.
    const stored = await writer.evaluate(async () => {
      const seen = [];
      let after = null;
      do {
        const page = await window.store.list('orders', { limit: 1000, after });
        for (const d of page.docs) if (d.rotate !== undefined) seen.push(d.rotate);
        after = page.next;
      } while (after !== null);
      return seen;
    });
    assert.equal(new Set(stored).size, stored.length, 'a put was stored twice');
    assert.ok(stored.length >= acked.length, `${stored.length} puts stored, ${acked.length} acknowledged`);
    await writer.evaluate(() => window.store.close());
    await writer.close();
    const [again] = await openPages(context, 1, database);
    const revs = await again.evaluate((ids) => Promise.all(ids.map((id) => window.store.get(id).then((d) => d._rev, (e) => `missing: ${e.code}`))), ids);
    assert.deepEqual(revs, acked.map((d) => d.rev));
    await again.evaluate(() => window.store.close());
  } finally {
    await context.close();
  }
});

test('reads in flight when the tab running the store closes are answered by the next tab\'s host; writes go on there', async () => {
  const database = `tabsreads${Date.now()}`;
  const context = await env.browser.newContext();
  try {
    const [host, reader] = await openPages(context, 2, database);
    const ids = await host.evaluate(async () => {
      const ids = [];
      for (let i = 0; i < 20; i++) ids.push((await window.store.put('orders', { i }))._id);
      return ids;
    });
    // The reader keeps many gets in flight while the first page, whose
    // host worker runs the store, closes: none of them fails.
    await reader.evaluate((ids) => {
      window.stop = false;
      window.reads = 0;
      window.readFailures = [];
      window.reading = (async () => {
        while (!window.stop) {
          const got = await Promise.allSettled(ids.map((id) => window.store.get(id)));
          for (const g of got) if (g.status === 'rejected') window.readFailures.push(`${g.reason.code}: ${g.reason.message}`);
          window.reads += got.length;
        }
      })();
    }, ids);
    await new Promise((ok) => setTimeout(ok, 200));
    await host.close();
    const after = await reader.evaluate(async () => {
      const before = window.reads;
      const deadline = Date.now() + 15000;
      while (window.reads < before + 200 && Date.now() < deadline) await new Promise((ok) => setTimeout(ok, 20));
      window.stop = true;
      await window.reading;
      const doc = await window.store.put('orders', { after: true });
      return { more: window.reads - before, failures: window.readFailures, doc, info: await window.store.info() };
    });
    assert.deepEqual(after.failures, []);
    assert.ok(after.more >= 200, `only ${after.more} reads answered after the host closed`);
    assert.ok(!ids.includes(after.doc._id));
    assert.equal(after.info.shared, true);
    assert.equal(await logBackend(reader, database), 'opfs');
    await reader.evaluate(() => window.store.close());
  } finally {
    await context.close();
  }
});

// Each write below is certainly in flight when the tab running the store
// closes: the host worker's test hook holds it (made and durable, or not
// made) and never answers. The writing tab sends it again to the next host,
// which answers it from its receipt or makes it: it resolves, is stored
// once, and a third tab sees it.
const inFlight = [
  {
    name: 'a delete',
    hold: 'made',
    setup: () => window.store.put('orders', { _key: 'gone', n: 1 }),
    write: () => window.store.delete('orders/gone'),
    check: async (answer) => ({
      answer: answer === undefined,
      read: await window.store.get('orders/gone').then(
        () => 'found',
        (err) => err.code,
      ),
    }),
    want: { answer: true, read: 'not_found' },
  },
  {
    name: 'a session\'s saveChanges',
    hold: 'made',
    setup: async () => {},
    write: async () => {
      // New documents under optimistic concurrency: made twice, the
      // second would fail with conflict.
      const session = window.store.openSession({ useOptimisticConcurrency: true });
      await session.store({ note: 'in flight' }, 'notes/inflight');
      await session.store({ note: 'in flight too' }, 'notes/inflight2');
      await session.saveChanges();
    },
    check: async () => {
      const page = await window.store.list('notes', { limit: 100 });
      return { notes: page.docs.map((d) => [d._id, d.note]).sort() };
    },
    want: {
      notes: [
        ['notes/inflight', 'in flight'],
        ['notes/inflight2', 'in flight too'],
      ],
    },
  },
  {
    name: 'a put made',
    hold: 'made',
    method: 'put',
    setup: async () => {},
    write: () => window.store.put('orders', { _key: 'one', n: 1, nested: { a: [1, 'b'] } }),
    check: async (answer) => {
      const doc = await window.store.get('orders/one');
      return { same: JSON.stringify(answer) === JSON.stringify(doc), n: doc.n, count: await window.store.collection('orders').count() };
    },
    want: { same: true, n: 1, count: { count: 1 } },
  },
  {
    name: 'a put not made yet',
    hold: 'unmade',
    method: 'put',
    setup: async () => {},
    write: () => window.store.put('orders', { n: 2 }),
    check: async (answer) => {
      const page = await window.store.list('orders', { limit: 100 });
      return { answered: typeof answer?._id === 'string' && answer.n === 2, stored: page.docs.map((d) => [d._id === answer?._id, d.n]) };
    },
    want: { answered: true, stored: [[true, 2]] },
  },
  {
    name: 'a collection save',
    hold: 'made',
    setup: async () => {},
    write: () => window.store.collection('orders').save({ _key: 'saved', n: 1 }, { returnNew: true }),
    check: async (answer) => {
      const doc = await window.store.get('orders/saved');
      return {
        answer: answer._id === doc._id && answer._key === 'saved' && answer._rev === doc._rev && answer.new._rev === doc._rev,
        count: await window.store.collection('orders').count(),
      };
    },
    want: { answer: true, count: { count: 1 } },
  },
  {
    name: 'puts made together',
    hold: 'made',
    method: '_putManyText',
    setup: async () => {},
    write: async () => {
      // The first goes alone; the others go together, as one write, the one
      // the host holds.
      const puts = [window.store.put('orders', { _key: 'alone', n: 0 })];
      for (let k = 1; k <= 4; k++) puts.push(window.store.put('orders', k === 2 ? { _key: 'not a key' } : { _key: `p${k}`, n: k }));
      const got = await Promise.allSettled(puts);
      return got.map((g) => (g.status === 'fulfilled' ? [g.value._key, g.value.n] : g.reason.code));
    },
    check: async (answer) => {
      const page = await window.store.list('orders', { limit: 100 });
      return { answer, stored: page.docs.map((d) => [d._key, d.n]).sort() };
    },
    want: {
      answer: [['alone', 0], ['p1', 1], 'illegal_key', ['p3', 3], ['p4', 4]],
      stored: [['alone', 0], ['p1', 1], ['p3', 3], ['p4', 4]],
    },
  },
  {
    name: 'a collection updateAll and removeAll not made yet',
    hold: 'unmade',
    setup: () => window.store.collection('orders').saveAll([{ _key: 'u', n: 1 }, { _key: 'r' }]),
    write: async () => {
      const c = window.store.collection('orders');
      const updated = await c.updateAll([{ _key: 'u', n: 2 }, { _key: 'none' }], { returnOld: true });
      return { updated, removed: await c.removeAll(['r']) };
    },
    check: async (answer) => ({
      old: answer.updated[0].old.n,
      missing: answer.updated[1].errorNum,
      removed: answer.removed[0]._key,
      n: (await window.store.get('orders/u')).n,
      count: await window.store.collection('orders').count(),
    }),
    want: { old: 1, missing: 1202, removed: 'r', n: 2, count: { count: 1 } },
  },
];

for (const c of inFlight) {
  test(`${c.name} in flight when the tab running the store closes resolves, is stored once, and is seen from the other tab`, { timeout: 60000 }, async () => {
    const database = `tabsinflight${Date.now()}`;
    const context = await env.browser.newContext();
    try {
      // The first page's host worker runs the store (the oldest tab).
      const [host] = await openPages(context, 1, database, { hooks: true });
      const [writer, reader] = await openPages(context, 2, database);
      await writer.evaluate(`(${c.setup})()`);
      await holdNextWrite(reader, c.hold, c.method);
      await writer.evaluate(`window.inflight = (${c.write})(); window.inflight.catch(() => {}); undefined`);
      assert.ok(['delete', '_saveBatch', '_collectionOp', '_putManyText', 'put'].includes(await reader.evaluate('window.held')));
      await host.close();
      const answer = await writer.evaluate('window.inflight');
      assert.deepEqual(await reader.evaluate(`(${c.check})(${JSON.stringify(answer ?? null)} ?? undefined)`), c.want);
      assert.deepEqual(await writer.evaluate(`(${c.check})(${JSON.stringify(answer ?? null)} ?? undefined)`), c.want);
      await writer.evaluate(() => window.store.close());
      await reader.evaluate(() => window.store.close());
    } finally {
      await context.close();
    }
  });
}

// As in tabs.test.mjs: no page raised an error of its own meanwhile.
test('no page raised an uncaught error', () => {
  assert.deepEqual(pageErrors, []);
});
