// The hilodb demo page: store JSON documents and see the ids and revisions
// they get. It talks to the sync server that serves the page.

import { openStore } from './index.js';

const $ = (id) => document.getElementById(id);

const form = $('form');
const storeButton = $('store');
const statusLine = $('status');
const errorLine = $('error');
const rows = $('docs').querySelector('tbody');

// The documents stored in this page, newest first, by _id.
const stored = new Map();

function setStatus(state, text) {
  statusLine.dataset.state = state;
  statusLine.textContent = text;
}

function showError(err) {
  errorLine.hidden = false;
  errorLine.textContent = err.code ? `${err.code} (${err.num}): ${err.message}` : String(err.message || err);
}

function clearError() {
  errorLine.hidden = true;
  errorLine.textContent = '';
}

function showDocument(doc) {
  $('result-id').textContent = doc._id;
  $('result-rev').textContent = doc._rev;
  $('result').textContent = JSON.stringify(doc, null, 2);
}

// body returns a document's own fields, without the ones hilodb sets.
function body(doc) {
  const { _id, _key, _rev, '@metadata': _meta, ...rest } = doc;
  return JSON.stringify(rest);
}

function renderList() {
  rows.replaceChildren(
    ...[...stored.values()].map((doc) => {
      const tr = document.createElement('tr');
      tr.dataset.id = doc._id;
      for (const text of [doc._id, doc._rev, body(doc)]) {
        const td = document.createElement('td');
        td.textContent = text;
        tr.append(td);
      }
      return tr;
    }),
  );
  $('count').textContent = String(stored.size);
  $('empty').hidden = stored.size > 0;
}

async function main() {
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  let store;
  let info;
  try {
    store = await openStore({ url: `${scheme}://${location.host}/v1/sync`, database: 'demo' });
    info = await store.info();
  } catch (err) {
    setStatus('error', 'Could not open the store.');
    showError(err);
    return;
  }
  setStatus(
    info.connected ? 'online' : 'offline',
    info.connected
      ? `Connected to server ${info.serverTag} as node ${info.node}, database "demo".`
      : 'Offline: documents with a _key can be stored; HiLo ids need the server.',
  );
  storeButton.disabled = false;

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearError();
    let doc;
    try {
      doc = JSON.parse($('doc').value);
    } catch (err) {
      showError({ code: 'bad_json', num: 600, message: `not JSON: ${err.message}` });
      return;
    }
    storeButton.disabled = true;
    try {
      const saved = await store.put($('collection').value.trim(), doc);
      stored.delete(saved._id);
      const rest = [...stored.values()];
      stored.clear();
      for (const d of [saved, ...rest]) stored.set(d._id, d);
      showDocument(saved);
      renderList();
    } catch (err) {
      showError(err);
    } finally {
      storeButton.disabled = false;
    }
  });

  rows.addEventListener('click', async (event) => {
    const tr = event.target.closest('tr');
    if (!tr) return;
    clearError();
    try {
      showDocument(await store.get(tr.dataset.id));
    } catch (err) {
      showError(err);
    }
  });

  addEventListener('pagehide', () => store.close());
}

main();
