// Debian's Chromium, on an on-disk profile, is SIGKILLed (with every
// process of it) while a page writes into a persisted store with two
// indexes; restarted on the same profile, every query through an index
// answers as a scan of the collection filtered in the page does.

import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { serveWithChromium, startChromium } from './harness.mjs';

const env = serveWithChromium({ launch: false });
let profile;

before(async () => {
  profile = await mkdtemp(join(tmpdir(), 'hilodb-profile-'));
});

after(async () => {
  if (profile) await rm(profile, { recursive: true, force: true });
});

test('Chromium SIGKILLed mid-write: answers through an index equal a scan\'s', async () => {
  const database = `querycrash${Date.now()}`;
  for (const target of [120, 300]) {
    const { browser, kill } = await startChromium(profile);
    let acked = 0;
    try {
      const page = await browser.contexts()[0].newPage();
      let enough;
      const reached = new Promise((ok) => (enough = ok));
      await page.exposeFunction('ack', () => {
        if (++acked === target) enough();
      });
      await page.goto(`${env.server.base}/`);
      await page.evaluate(async (database) => {
        const { openStore } = await import('/index.js');
        const store = await openStore({ url: `ws://${location.host}/v1/sync`, database, persist: database });
        await store.createIndex('tasks', { fields: ['state', 'rank'], name: 'by-state-rank' });
        await store.createIndex('tasks', { fields: ['owner'], name: 'by-owner' });
        const states = ['open', 'doing', 'done'];
        let i = 0;
        // New tasks, updates that move a task in both indexes, deletes.
        const writer = async (w) => {
          const mine = [];
          for (;;) {
            const n = i++;
            if (mine.length > 3 && n % 7 === 0) {
              await store.delete(mine.splice(n % mine.length, 1)[0]);
            } else if (mine.length > 0 && n % 3 === 0) {
              const doc = await store.get(mine[n % mine.length]);
              await store.put('tasks', { ...doc, state: states[(n >> 2) % 3], rank: (n * 31) % 97, owner: `u${n % 4}` });
            } else {
              mine.push((await store.put('tasks', { state: states[n % 3], rank: (n * 17) % 97, owner: `u${n % 5}`, w }))._id);
            }
            window.ack();
          }
        };
        // Bulk writes too: many index entries in one transaction.
        const bulkWriter = async () => {
          for (let k = 0; ; k++) {
            const docs = Array.from({ length: 1 + ((k * 37) % 60) }, (_, j) => ({ state: states[(k + j) % 3], rank: (k * 13 + j) % 97, owner: `u${j % 5}` }));
            await store.putMany('tasks', docs);
            window.ack();
          }
        };
        writer(0);
        writer(1);
        bulkWriter();
      }, database);
      await reached;
    } finally {
      await kill();
    }

    const again = await startChromium(profile);
    try {
      const p = await again.browser.contexts()[0].newPage();
      await p.goto(`${env.server.base}/`);
      const got = await p.evaluate(async (database) => {
        const { openStore } = await import('/index.js');
        const store = await openStore({ url: `ws://${location.host}/v1/sync`, database, persist: database });
        const all = [];
        let after = null;
        do {
          const page = await store.list('tasks', { limit: 1000, after });
          all.push(...page.docs);
          after = page.next;
        } while (after !== null);
        const byRank = (a, b) => a.rank - b.rank || (a._id < b._id ? -1 : a._id > b._id ? 1 : 0);
        const cases = [
          [{ state: 'open' }, 'by-state-rank', (d) => d.state === 'open'],
          [{ state: 'doing', rank: { $gte: 20, $lt: 70 } }, 'by-state-rank', (d) => d.state === 'doing' && d.rank >= 20 && d.rank < 70],
          [{ state: { $in: ['done', 'open'] }, rank: { $gt: 50 } }, 'by-state-rank', (d) => (d.state === 'done' || d.state === 'open') && d.rank > 50],
          [{ owner: 'u3' }, 'by-owner', (d) => d.owner === 'u3'],
        ];
        const out = { total: all.length, indexes: (await store.getIndexes('tasks')).indexes.map((i) => i.name), cases: [] };
        for (const [selector, index, filter] of cases) {
          const q = { selector, sort: ['rank'], use_index: index };
          const plan = await store.explain('tasks', q);
          const { docs } = await store.find('tasks', q);
          const want = all.filter(filter).sort(byRank);
          out.cases.push({
            selector,
            index: plan.index,
            same: JSON.stringify(docs) === JSON.stringify(want),
            found: docs.length,
            want: want.length,
            count: await store.count('tasks', { selector }),
          });
        }
        return out; // killed with the store open, as crash.test.mjs's rounds are
      }, database);
      assert.deepEqual(got.indexes, ['by-owner', 'by-state-rank']);
      for (const c of got.cases) {
        assert.equal(c.index, c.selector.owner ? 'by-owner' : 'by-state-rank');
        assert.ok(c.same, `${JSON.stringify(c.selector)}: ${c.found} documents through ${c.index}, ${c.want} by the scan`);
        assert.equal(c.count, c.want);
        assert.ok(c.want > 0, `${JSON.stringify(c.selector)} matched nothing: the test checks nothing`);
      }
    } finally {
      await again.kill();
    }
  }
});
