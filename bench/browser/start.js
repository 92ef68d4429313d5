// The start scenario of make bench-browser: how long a page takes to open a
// store, its code loaded as part of it (the page itself loads nothing
// else). window.start(system, name) loads the system's code (hilodb: the
// npm package's index.js, which loads its WebAssembly; PouchDB: its
// scripts), opens store name and reads one document from it, and returns
// the milliseconds from the call and from the page's start. run.mjs calls
// it in a new browser profile (a cold first load: empty cache, no store)
// and again after a reload (a warm one).

// ?ws= names another sync server (run.mjs's AWAY_MS: the same one, far away).
const url = new URLSearchParams(location.search).get('ws') ?? `ws://${location.host}/v1/sync`;

function loadScript(src) {
  return new Promise((resolve, reject) => {
    const s = document.createElement('script');
    s.src = src;
    s.onload = resolve;
    s.onerror = () => reject(new Error(`cannot load ${src}`));
    document.head.append(s);
  });
}

window.start = async (system, name) => {
  const t0 = performance.now();
  let db;
  if (system.startsWith('hilodb')) {
    const { openStore } = await import(system === 'hilodb-base' ? '/base/index.js' : '/index.js');
    db = await openStore({ url, database: name, persist: name });
    await db.get('orders/first').catch(() => null);
  } else {
    if (!window.PouchDB) {
      await loadScript('pouchdb.min.js');
      await loadScript('pouchdb.indexeddb.min.js');
    }
    // eslint-disable-next-line no-undef
    db = new PouchDB(name, { adapter: system === 'pouch-idb' ? 'idb' : 'indexeddb' });
    await db.get('orders/first').catch(() => null);
  }
  const t1 = performance.now();
  // Something stored for the next load to find.
  if (system.startsWith('hilodb')) await db.put('orders', { _id: 'orders/first', item: 'widget' }).catch(() => {});
  else await db.put({ _id: 'orders/first', item: 'widget' }).catch(() => {});
  await db.close();
  return { ms: t1 - t0, fromPageMs: t1 };
};
