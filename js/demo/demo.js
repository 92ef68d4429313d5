// The hilodb demo: an offline-first document board. The store is persisted
// in this browser and shared by every tab of the page, synced live with the
// server that serves the page; every write is durable when it is shown.
// The status line, the pending count and the conflicts it shows are what the
// store reports, never a guess.

import { openStore } from './index.js';
import { registerShell } from './shell.js';

const $ = (id) => document.getElementById(id);

const form = $('form');
const storeButton = $('store');
const rows = $('docs').querySelector('tbody');

// Every document the board shows, by _id: the change feed's entry, whose
// seq orders the list (latest write first, the same in every tab, since
// the tabs share one store and its feed).
const shown = new Map();
let store;
let since = 0; // the change feed's checkpoint
let editing = null; // the document loaded into the editor

function setStatus(state, text) {
  $('status').dataset.state = state;
  $('status').textContent = text;
}

function showError(err) {
  $('error').hidden = false;
  $('error').textContent = err.code ? `${err.code} (${err.num}): ${err.message}` : String(err.message || err);
}

function clearError() {
  $('error').hidden = true;
  $('stale').hidden = true;
}

function showDocument(doc) {
  $('result-id').textContent = doc._id;
  $('result-rev').textContent = doc._rev;
  $('result').textContent = JSON.stringify(doc, null, 2);
}

// fields returns a document's own fields, without the ones hilodb sets.
function fields(doc) {
  const { _id, _key, _rev, '@metadata': _meta, ...rest } = doc;
  return rest;
}

function edit(doc) {
  editing = doc;
  $('collection').value = doc['@metadata']?.['@collection'] ?? $('collection').value;
  $('doc').value = JSON.stringify({ _key: doc._key, ...fields(doc) }, null, 2);
  showDocument(doc);
}

function renderList() {
  const newestFirst = [...shown.values()].sort((a, b) => b.seq - a.seq);
  rows.replaceChildren(
    ...newestFirst.map((d) => {
      const tr = document.createElement('tr');
      tr.dataset.id = d.id;
      tr.classList.toggle('deleted', d.deleted);
      for (const text of [d.id, d.rev, d.deleted ? '(deleted)' : JSON.stringify(fields(d.doc))]) {
        const td = document.createElement('td');
        td.textContent = text;
        tr.append(td);
      }
      const td = document.createElement('td');
      if (!d.deleted) {
        const del = document.createElement('button');
        del.type = 'button';
        del.className = 'delete';
        del.textContent = 'Delete';
        del.dataset.rev = d.rev;
        td.append(del);
      }
      tr.append(td);
      return tr;
    }),
  );
  const live = [...shown.values()].filter((d) => !d.deleted).length;
  $('count').textContent = String(live);
  $('empty').hidden = live > 0;
}

// refresh reads what changed since the last look (local writes, other
// tabs' and other clients') from the store's change feed.
let refreshing = Promise.resolve();
function refresh() {
  refreshing = refreshing.then(async () => {
    const { results, last } = await store.changes({ since });
    since = last;
    for (const r of results) shown.set(r.id, r);
    renderList();
  });
  return refreshing;
}

function showPending(n) {
  $('pending').dataset.count = String(n);
  $('pending').textContent = n === 0 ? 'All changes are on the server.' : `${n} change${n === 1 ? '' : 's'} waiting for the server.`;
}

function statusFrom(state) {
  const text = {
    online: 'Online: changes sync as you make them.',
    syncing: 'Syncing…',
    connecting: 'Connecting…',
    offline: 'Offline: your changes are kept in this browser and sync when the server is back.',
  }[state];
  setStatus(state, text);
}

// showConflict lists a document with an unresolved conflict, once: from
// the 'conflict' event, and after a reload from conflicts(). Either this
// client's version lost to the server's (its own is kept to restore), or
// it won and another client's lost (theirs is kept to take instead).
async function showConflict({ id, kept }) {
  const versions = await store.conflicts(id);
  const last = versions.at(-1);
  if (!last) return;
  const won = last.won === true;
  $('conflict-list').querySelector(`li[data-id="${CSS.escape(id)}"]`)?.remove();
  const li = document.createElement('li');
  li.dataset.id = id;
  li.dataset.side = won ? 'won' : 'lost';
  const shown = JSON.stringify(last.doc && fields(last.doc));
  li.textContent = won
    ? `${id}: your version was kept; another client's was ${last.deleted ? 'a deletion' : shown}.`
    : `${id}: kept the ${kept === 'merged' ? 'merged' : "server's"} version; yours was ${shown}.`;
  const take = document.createElement('button');
  take.textContent = won ? 'Take theirs' : 'Restore mine';
  take.disabled = !last.doc && !last.deleted;
  take.addEventListener('click', async () => {
    const current = await store.get(id);
    if (last.deleted) await store.delete(id);
    else await store.put(current['@metadata']['@collection'], { ...last.doc, _id: id, _rev: current._rev });
    await dismiss();
  });
  const dismissButton = document.createElement('button');
  dismissButton.textContent = won ? 'Keep mine' : 'Keep theirs';
  const dismiss = async () => {
    await store.clearConflicts(id);
    li.remove();
    $('conflicts').hidden = $('conflict-list').children.length === 0;
    await refresh();
  };
  dismissButton.addEventListener('click', dismiss);
  li.append(take, dismissButton);
  $('conflict-list').append(li);
  $('conflicts').hidden = false;
  // The editor shows what the store holds now.
  if (editing?._id === id) edit(await store.get(id));
}

async function save(body) {
  const saved = await store.put($('collection').value.trim(), body);
  // The editor now holds the stored document (its _key): storing again
  // updates it, with its _rev as the precondition, instead of adding a copy.
  edit(saved);
  await refresh();
}

async function main() {
  // The page starts again without the server: its files are kept by the
  // service worker (sw.js), its documents by the persisted store.
  window.shell = registerShell('./sw.js').catch((err) => ({ error: String(err) }));
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  try {
    store = await openStore({ url: `${scheme}://${location.host}/v1/sync`, database: 'demo', persist: 'demo', sync: true, changeFeed: true });
    store.on('status', ({ state }) => statusFrom(state));
    store.on('change', () => refresh());
    store.on('conflict', (c) => showConflict(c).then(refresh));
    store.on('pending', ({ pending }) => showPending(pending));
    // A server out of reach is the status's to tell (offline), not an
    // error of what the user did.
    store.on('error', (err) => {
      if (err.code !== 'needs_server' && err.code !== 'unavailable') showError(err);
    });
    const info = await store.info();
    // A store opened before opens from this browser and connects after.
    statusFrom(info.connected ? 'online' : info.connecting ? 'connecting' : 'offline');
    await refresh();
    // Conflicts not settled before the last reload are listed again.
    for (const id of await store.conflicts()) await showConflict({ id, kept: 'remote' });
  } catch (err) {
    setStatus('error', 'Could not open the store.');
    showError(err);
    return;
  }
  storeButton.disabled = false;

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearError();
    let body;
    try {
      body = JSON.parse($('doc').value);
    } catch (err) {
      showError({ code: 'bad_json', num: 600, message: `not JSON: ${err.message}` });
      return;
    }
    // Editing a stored document: its _rev guards against lost updates.
    if (editing && body._key === editing._key && body._rev === undefined) body._rev = editing._rev;
    storeButton.disabled = true;
    try {
      await save(body);
    } catch (err) {
      showError(err);
      if (err.code === 'conflict') {
        $('error').textContent = 'Someone changed this document after you loaded it. Load the newer version, or store yours over it.';
        $('stale').hidden = false;
      }
    } finally {
      storeButton.disabled = false;
    }
  });

  $('new').addEventListener('click', () => {
    editing = null;
    clearError();
    $('doc').value = '{\n  "item": "apple",\n  "qty": 3\n}';
  });
  $('load-theirs').addEventListener('click', async () => {
    clearError();
    edit(await store.get(editing._id));
  });
  $('keep-mine').addEventListener('click', async () => {
    clearError();
    const current = await store.get(editing._id);
    await save({ ...JSON.parse($('doc').value), _rev: current._rev });
  });
  rows.addEventListener('click', async (event) => {
    const tr = event.target.closest('tr');
    if (!tr || shown.get(tr.dataset.id)?.deleted) return;
    clearError();
    if (event.target.closest('button.delete')) {
      try {
        await store.delete(tr.dataset.id, { rev: event.target.dataset.rev });
        if (editing?._id === tr.dataset.id) $('new').click();
        await refresh();
      } catch (err) {
        showError(err);
      }
      return;
    }
    try {
      edit(await store.get(tr.dataset.id));
    } catch (err) {
      showError(err);
    }
  });
  addEventListener('pagehide', () => store.close());
}

main();
