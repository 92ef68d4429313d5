// The demo served by make run, used as a person would in Debian's Chromium:
// two tabs of one browser sharing a persisted, synced store, a second
// client in another browser profile, a stale edit refused and resolved, a
// sync conflict shown and resolved. Screenshots of each step go to
// HILODB_SCREENSHOTS (default: a temporary directory) and are checked to be
// real pictures.

import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { serveWithChromium } from './harness.mjs';

const env = serveWithChromium();
let shots;
const pageErrors = [];

before(async () => {
  shots = process.env.HILODB_SCREENSHOTS || (await mkdtemp(join(tmpdir(), 'hilodb-shots-')));
});

after(async () => {
  if (!process.env.HILODB_SCREENSHOTS && shots) await rm(shots, { recursive: true, force: true });
});

async function open(context) {
  const page = await context.newPage();
  page.on('pageerror', (err) => pageErrors.push(err));
  await page.goto(`${env.server.base}/`);
  await page.waitForSelector('#status[data-state="online"]');
  return page;
}

// shot saves a screenshot and checks that it is a PNG of a real page.
async function shot(page, name) {
  const path = join(shots, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  const b = await readFile(path);
  assert.equal(b.subarray(1, 4).toString(), 'PNG', `${name} is not a PNG`);
  assert.ok(b.length > 10000, `${name} is ${b.length} bytes: an empty page?`);
}

async function store(page, json) {
  await page.fill('#doc', json);
  await page.click('#store');
}

const row = (id) => `#docs tbody tr[data-id="${id}"]`;

// edit clicks the row of id and waits until the editor holds that document.
async function edit(page, id) {
  await page.evaluate(() => {
    document.getElementById('result-id').textContent = '';
  });
  await page.click(row(id));
  await page.waitForFunction((id) => document.getElementById('result-id').textContent === id, id);
}

test('the demo: two tabs and a second client, a stale edit and a sync conflict resolved', async () => {
  const size = { viewport: { width: 1100, height: 900 } };
  const browserA = await env.browser.newContext(size);
  const browserB = await env.browser.newContext(size);
  try {
    const [tab1, tab2] = [await open(browserA), await open(browserA)];
    const other = await open(browserB);

    // A document stored in one tab shows in the other tab and the other client.
    await store(tab1, '{"_key":"desk","item":"desk","qty":1}');
    for (const p of [tab2, other]) await p.waitForSelector(row('orders/desk'));
    await tab1.waitForSelector('#pending[data-count="0"]');
    assert.match(await tab1.textContent('#pending'), /All changes are on the server/);
    await shot(tab2, '1-two-tabs');

    // A stale edit: tab1 loads it, the other client changes it, tab1 stores.
    await edit(tab1, 'orders/desk');
    await edit(other, 'orders/desk');
    await store(other, '{"_key":"desk","item":"desk","qty":5}');
    await tab1.waitForFunction(() => document.querySelector('#docs tbody tr[data-id="orders/desk"]').textContent.includes('"qty":5'));
    await store(tab1, '{"_key":"desk","item":"desk","qty":2}');
    await tab1.waitForSelector('#stale:not([hidden])');
    assert.match(await tab1.textContent('#error'), /changed this document after you loaded it/);
    await shot(tab1, '2-stale-edit');
    await tab1.click('#load-theirs');
    await tab1.waitForFunction(() => JSON.parse(document.getElementById('doc').value).qty === 5);
    await store(tab1, '{"_key":"desk","item":"desk","qty":6}');
    for (const p of [tab2, other]) {
      await p.waitForFunction(() => document.querySelector('#docs tbody tr[data-id="orders/desk"]').textContent.includes('"qty":6'));
    }

    // A sync conflict: both clients edit while the server is frozen; the
    // one that reaches it second is shown the conflict and resolves it.
    await edit(tab1, 'orders/desk');
    await edit(other, 'orders/desk');
    process.kill(env.server.pid, 'SIGSTOP');
    try {
      await store(tab1, '{"_key":"desk","item":"desk","qty":7}');
      await store(other, '{"_key":"desk","item":"desk","qty":8}');
      await new Promise((ok) => setTimeout(ok, 300));
    } finally {
      process.kill(env.server.pid, 'SIGCONT');
    }
    // Both sides hear of it: the one that reached the server second lost
    // (its version is kept to restore), the other won (the refused version
    // is kept to take instead).
    await Promise.all([tab1, other].map((p) => p.waitForSelector('#conflict-list li[data-id="orders/desk"]', { timeout: 30000 })));
    const side = (p) => p.getAttribute('#conflict-list li[data-id="orders/desk"]', 'data-side');
    const loser = (await side(tab1)) === 'lost' ? tab1 : other;
    const winner = loser === tab1 ? other : tab1;
    assert.equal(await side(loser), 'lost');
    assert.match(await loser.textContent('#conflict-list'), /orders\/desk: kept the server's version/);
    await winner.waitForSelector('#conflict-list li[data-side="won"]', { timeout: 30000 });
    // The open conflict is still listed after a reload (store.conflicts()),
    // on both sides.
    for (const p of [loser, winner]) {
      await p.reload();
      await p.waitForSelector('#status[data-state="online"]');
      await p.waitForSelector('#conflicts:not([hidden])', { timeout: 10000 });
      assert.match(await p.textContent('#conflict-list'), /orders\/desk/);
    }
    assert.equal(await side(loser), 'lost');
    assert.equal(await side(winner), 'won');
    assert.match(await winner.textContent('#conflict-list'), /orders\/desk: your version was kept; another client's was/);
    assert.match(await winner.textContent('#conflict-list'), loser === tab1 ? /"qty":7/ : /"qty":8/);
    await shot(winner, '3-sync-conflict-won');
    await winner.click('#conflict-list button:has-text("Keep mine")');
    await winner.waitForSelector('#conflicts', { state: 'hidden' });
    await shot(loser, '3-sync-conflict');
    assert.match(await loser.textContent('#conflict-list'), loser === tab1 ? /"qty":7/ : /"qty":8/);
    await loser.click('#conflict-list button:has-text("Restore mine")');
    await loser.waitForSelector('#conflicts', { state: 'hidden' });
    // Every page converges on the restored version.
    const mine = loser === tab1 ? 7 : 8;
    const text = (p) => p.evaluate(() => document.querySelector('#docs tbody tr[data-id="orders/desk"]').textContent);
    const deadline = Date.now() + 10000;
    for (;;) {
      const seen = await Promise.all([tab1, tab2, other].map(text));
      if (new Set(seen).size === 1 && seen[0].includes(`"qty":${mine}`)) break;
      if (Date.now() > deadline) assert.fail(`pages did not converge: ${seen}`);
      await new Promise((ok) => setTimeout(ok, 100));
    }
    await shot(loser, '4-resolved');
    assert.deepEqual(pageErrors, []);
  } finally {
    await browserA.close();
    await browserB.close();
  }
});

test('the demo: delete, one newest-first order in both tabs, no copy on a second Store, a calm offline badge', async () => {
  const context = await env.browser.newContext({ viewport: { width: 1100, height: 900 } });
  try {
    const [tab1, tab2] = [await open(context), await open(context)];
    const ids = async (p) => p.$$eval('#docs tbody tr', (trs) => trs.map((tr) => tr.dataset.id));
    const before = (await ids(tab1)).length;

    await store(tab1, '{"item":"first"}');
    await tab1.waitForFunction(() => /^orders\/\d+-A$/.test(document.getElementById('result-id').textContent));
    const first = await tab1.textContent('#result-id');
    await tab1.click('#new');
    await store(tab1, '{"item":"second"}');
    await tab1.waitForFunction((first) => /^orders\/\d+-A$/.test(document.getElementById('result-id').textContent) && document.getElementById('result-id').textContent !== first, first);
    const second = await tab1.textContent('#result-id');
    await tab2.waitForSelector(row(second));

    // Newest first, and the same order in both tabs, read after read.
    for (const p of [tab1, tab2]) assert.deepEqual((await ids(p)).slice(0, 2), [second, first]);
    await tab1.reload();
    await tab1.waitForSelector(row(second));
    assert.deepEqual(await ids(tab1), await ids(tab2));

    // Store pressed again on the stored document updates it: no copy.
    await edit(tab2, second);
    await tab2.click('#store');
    await tab2.click('#store');
    await tab2.waitForFunction(() => !document.getElementById('store').disabled);
    await tab1.waitForFunction((id) => document.querySelector(`#docs tbody tr[data-id="${id}"]`) !== null, second);
    assert.equal((await ids(tab2)).length, before + 2);
    assert.equal(await tab2.textContent('#result-id'), second);

    // Delete, from the row's button: gone in both tabs.
    await tab2.click(`${row(first)} button.delete`);
    for (const p of [tab1, tab2]) await p.waitForSelector(`${row(first)}.deleted`);
    assert.equal(await tab1.$(`${row(first)} button.delete`), null);

    // Offline: a calm badge within 2 s, no error under the form, the
    // change kept and counted; back online it reaches the server.
    const off = Date.now();
    await context.setOffline(true);
    await tab1.waitForSelector('#status[data-state="offline"]', { timeout: 2000 });
    const took = Date.now() - off;
    await tab1.click('#new');
    await store(tab1, '{"_key":"offline-note","item":"kept"}');
    await tab1.waitForSelector(row('orders/offline-note'));
    await tab1.waitForSelector('#pending:not([data-count="0"])', { timeout: 5000 });
    await new Promise((ok) => setTimeout(ok, 1500));
    assert.equal(await tab1.getAttribute('#status', 'data-state'), 'offline');
    assert.equal(await tab1.isHidden('#error'), true, `an error is shown: ${await tab1.textContent('#error')}`);
    await shot(tab1, '5-offline');
    await context.setOffline(false);
    await tab1.waitForSelector('#status[data-state="online"]', { timeout: 15000 });
    await tab1.waitForSelector('#pending[data-count="0"]', { timeout: 15000 });
    console.log(`# offline status ${took} ms after context.setOffline(true)`);
    assert.deepEqual(pageErrors, []);
  } finally {
    await context.close();
  }
});
