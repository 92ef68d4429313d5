// The scenarios of make bench-browser, run inside a Chromium page for one
// system: hilodb (a persisted store, shared through its worker, strict
// durability) or PouchDB 9 with the idb or indexeddb adapter. Each returns
// milliseconds; run.mjs calls them through page.evaluate. System
// 'hilodb-base' is another build of hilodb served under /base/ (run.mjs's
// BASE), measured beside this one.

const url = `ws://${location.host}/v1/sync`;

const isHilo = (system) => system.startsWith('hilodb');

async function open(system, name) {
  if (isHilo(system)) {
    const { openStore } = await import(system === 'hilodb-base' ? '/base/index.js' : '/index.js');
    return openStore({ url, database: name, persist: name });
  }
  // eslint-disable-next-line no-undef
  return new PouchDB(name, { adapter: system === 'pouch-idb' ? 'idb' : 'indexeddb' });
}

const doc = (i) => ({ total: i, item: 'widget', qty: i % 7, note: 'a small order' });

async function put(system, db, i) {
  if (isHilo(system)) return db.put('orders', doc(i));
  return db.put({ _id: `orders/${String(i).padStart(8, '0')}`, ...doc(i) });
}

async function bulk(system, db, from, n) {
  const docs = Array.from({ length: n }, (_, k) => doc(from + k));
  if (isHilo(system)) {
    const res = await db.putMany('orders', docs);
    if (res.some((r) => r instanceof Error)) throw new Error('putMany failed');
    return;
  }
  const res = await db.bulkDocs(docs.map((d, k) => ({ _id: `orders/${String(from + k).padStart(8, '0')}`, ...d })));
  if (res.some((r) => r.error)) throw new Error('bulkDocs failed');
}

async function listAll(system, db) {
  if (isHilo(system)) {
    let n = 0;
    let after = null;
    do {
      const page = await db.list('orders', { limit: 1000, after });
      n += page.docs.length;
      after = page.next;
    } while (after !== null);
    return n;
  }
  const res = await db.allDocs({ include_docs: true });
  return res.rows.length;
}

async function close(system, db) {
  return db.close();
}

const ms = async (fn) => {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
};

window.bench = {
  // Sequential puts, each durable (hilodb) or committed (PouchDB) when it
  // resolves: ms for n.
  async sequential(system, name, n) {
    const db = await open(system, name);
    await put(system, db, -1); // leases a range, creates the database
    const t = await ms(async () => {
      for (let i = 0; i < n; i++) await put(system, db, i);
    });
    await close(system, db);
    return t;
  },
  // n puts made at once and awaited together (Promise.all), each durable
  // (hilodb) or committed (PouchDB) when it resolves: ms for n.
  async concurrent(system, name, n) {
    const db = await open(system, name);
    await put(system, db, -1);
    const t = await ms(() => Promise.all(Array.from({ length: n }, (_, i) => put(system, db, i))));
    await close(system, db);
    return t;
  },
  // One bulk write of n documents: ms.
  async bulk(system, name, n) {
    const db = await open(system, name);
    await put(system, db, -1);
    const t = await ms(() => bulk(system, db, 0, n));
    await close(system, db);
    return t;
  },
  // The two above again, each after a warm-up of the same size into
  // another store in the same page: what an app that writes again sees.
  // A new page runs both systems' code in a baseline tier at first (V8
  // compiles WebAssembly with Liftoff and optimizes a function once it has
  // run a while; JavaScript likewise), so the first write of a page is
  // also a measure of that.
  async sequentialWarm(system, name, n) {
    await this.sequential(system, `${name}-warmup`, n);
    return this.sequential(system, name, n);
  },
  async bulkWarm(system, name, n) {
    await this.bulk(system, `${name}-warmup`, n);
    return this.bulk(system, name, n);
  },
  // Every document of a store of n, read back: ms.
  async list(system, name, n) {
    const db = await open(system, name);
    await bulk(system, db, 0, n);
    let got = 0;
    const t = await ms(async () => {
      got = await listAll(system, db);
    });
    await close(system, db);
    if (got !== n) throw new Error(`listed ${got} of ${n}`);
    return t;
  },
  // k sequential puts into an empty store and into a store of n: ms per
  // put, each, and the time to reopen the big store and read a document.
  async big(system, name, n, k) {
    const small = await open(system, `${name}-empty`);
    await put(system, small, -1);
    const empty = await ms(async () => {
      for (let i = 0; i < k; i++) await put(system, small, i);
    });
    await close(system, small);
    const db = await open(system, name);
    for (let from = 0; from < n; from += 10000) await bulk(system, db, from, Math.min(10000, n - from));
    const full = await ms(async () => {
      for (let i = 0; i < k; i++) await put(system, db, n + i);
    });
    await close(system, db);
    let reopened;
    const reopen = await ms(async () => {
      reopened = await open(system, name);
      if (isHilo(system)) await reopened.list('orders', { limit: 1 });
      else await reopened.allDocs({ limit: 1 });
    });
    await close(system, reopened);
    return { emptyPutMs: empty / k, fullPutMs: full / k, reopenMs: reopen };
  },
  // hilodb only: the longest main-thread task while a new persisted store
  // pulls n documents another client pushed.
  async pull(name, n) {
    const { openStore } = await import('/index.js');
    const src = await openStore({ url, database: name });
    for (let from = 0; from < n; from += 5000) await src.putMany('orders', Array.from({ length: Math.min(5000, n - from) }, (_, k) => doc(from + k)));
    await src.sync();
    await src.close();
    let longest = 0;
    const obs = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) longest = Math.max(longest, e.duration);
    });
    obs.observe({ type: 'longtask', buffered: false });
    const dst = await openStore({ url, database: name, persist: `${name}-pull` });
    const t = await ms(() => dst.sync());
    await new Promise((ok) => setTimeout(ok, 100));
    obs.disconnect();
    await dst.close();
    return { pullMs: t, longestTaskMs: longest };
  },
};
