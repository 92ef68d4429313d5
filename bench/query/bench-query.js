// The scenarios of make bench-query, run inside a Chromium page for one
// system, named by the page's address (bench-query.html?system=…): hilodb (a
// persisted store, shared through its worker), PouchDB 9 with
// pouchdb-find on the idb or the indexeddb adapter, or RxDB with its Dexie
// storage. The page loads only that system's code. With &reopen=NAME it
// opens store NAME at once and answers its first query: the time from
// the page's start to that answer is the reopen figure (window.reopened).
// run.mjs calls the rest through page.evaluate; times are milliseconds.

const params = new URLSearchParams(location.search);
const system = params.get('system');
const started = performance.now(); // this module's first line, since the page's start
const url = `ws://${location.host}/v1/sync`;

// The documents: todos, the same in every system. n numbers them; the
// fields come from a generator seeded by n, and createdAt is unique (a
// permutation of 0..N-1 minutes after BASE; the live query's new ones
// come after all of them).
const BASE = 1_700_000_000_000;
const MINUTE = 60_000;
const STATUS = ['open', 'doing', 'done'];
const TAGS = ['home', 'work', 'urgent', 'later', 'errand', 'call', 'read', 'buy'];
const pad = (n, w) => String(n).padStart(w, '0');
const OWNERS = 1000;
const owner = (k) => `user-${pad(k % OWNERS, 3)}`;

function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function todo(n, size, over) {
  const r = random(Math.imul(n + 1, 2654435761));
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  const tags = new Set([pick(TAGS)]);
  for (let k = Math.floor(r() * 3); k > 0; k--) tags.add(pick(TAGS));
  return {
    n,
    title: `todo ${n}: ${pick(['buy', 'call', 'write', 'fix', 'read'])} the ${pick(['milk', 'report', 'bike', 'letter', 'bill'])}`,
    status: pick(STATUS),
    priority: 1 + Math.floor(r() * 5),
    owner: owner(Math.floor(r() * OWNERS)),
    createdAt: BASE + (n < size ? (n * 1_000_003) % size : n) * MINUTE,
    estimate: 1 + Math.floor(r() * 1000),
    tags: [...tags],
    ...over,
  };
}

// The indexes, as field lists; the big store has all three, the reopened
// one the first two.
const INDEXES = {
  'owner-createdAt': ['owner', 'createdAt'],
  'owner-status-createdAt': ['owner', 'status', 'createdAt'],
  createdAt: ['createdAt'],
};

// The queries, in the neutral form each system's find is given: the
// selector, the sort, the limit, and the index the query is meant for.
// Run i of each asks for other values than the runs before it (for the
// first 1,000 runs), so that no answer comes from a cache of answers
// (RxDB keeps one). Every system must answer each the same (run.mjs
// compares the n).
function queries(size) {
  const span = Math.max(1, Math.floor(size / 5));
  return {
    // One owner's todos, newest first: equality on an indexed field, a sort, 20.
    eqSort: (i) => ({ selector: { owner: owner(i * 37) }, sort: [{ createdAt: 'desc' }], limit: 20, index: 'owner-createdAt' }),
    // A fifth of the collection's time span, oldest first, 100 of it.
    range: (i) => {
      const from = (i * 7919) % Math.max(1, size - span);
      return { selector: { createdAt: { $gte: BASE + from * MINUTE, $lt: BASE + (from + span) * MINUTE } }, sort: [{ createdAt: 'asc' }], limit: 100, index: 'createdAt' };
    },
    // One owner's todos of one status, newest first: two equalities on a
    // compound index, a sort, 20.
    compound: (i) => ({ selector: { owner: owner(i * 37 + 11), status: STATUS[i % 3] }, sort: [{ createdAt: 'desc' }], limit: 20, index: 'owner-status-createdAt' }),
    // A field no index has: every document read (about 1 in 1,000 match).
    scan: (i) => ({ selector: { estimate: 1 + ((i * 389) % 1000) } }),
  };
}

// pouchQuery is q as pouchdb-find wants it to use its index best: the
// sort names every field of the index up to the sorted one, all one way;
// the sorted field is in the selector too ($gte null, which every value
// meets), or pouchdb-find reads every match of the equality and applies
// the limit afterwards; use_index names the index (its design document);
// without a limit pouchdb-find answers 25.
function pouchQuery(q) {
  const out = { selector: { ...q.selector }, limit: q.limit ?? 1e9 };
  if (q.sort) {
    const [[field, dir]] = Object.entries(q.sort[0]);
    const fields = INDEXES[q.index];
    out.sort = fields.slice(0, fields.indexOf(field) + 1).map((f) => ({ [f]: dir }));
    out.selector[field] ??= { $gte: null };
  }
  if (q.index) out.use_index = q.index;
  return out;
}

const rxSchema = (indexes) => ({
  version: 0,
  primaryKey: 'id',
  type: 'object',
  properties: {
    id: { type: 'string', maxLength: 20 },
    n: { type: 'integer' },
    title: { type: 'string' },
    status: { type: 'string', maxLength: 8 },
    priority: { type: 'integer', minimum: 1, maximum: 5, multipleOf: 1 },
    owner: { type: 'string', maxLength: 12 },
    createdAt: { type: 'integer', minimum: 0, maximum: 10_000_000_000_000, multipleOf: 1 },
    estimate: { type: 'integer' },
    tags: { type: 'array', items: { type: 'string' } },
  },
  required: ['id', 'n', 'status', 'priority', 'owner', 'createdAt'],
  indexes: indexes.map((name) => INDEXES[name]),
});

function loadScript(src) {
  return new Promise((resolve, reject) => {
    const s = document.createElement('script');
    s.src = src;
    s.onload = resolve;
    s.onerror = () => reject(new Error(`cannot load ${src}`));
    document.head.append(s);
  });
}

// Each system's code, loaded once for the page.
const lib = (async () => {
  if (system === 'hilodb') return import('/index.js');
  if (system === 'hilodb-base') return import('/base/index.js'); // another build (run.mjs's BASE)
  if (system === 'rxdb') return import('./rxdb.js');
  await loadScript('pouchdb.min.js');
  if (system === 'pouch-indexeddb') await loadScript('pouchdb.indexeddb.min.js');
  await loadScript('pouchdb.find.min.js');
  return window.PouchDB;
})();

// A system's store of collections: open(name, {collection: [index names]})
// defines the indexes (an app's code does on every start; an index that
// exists is kept), then put, bulk, find (the n of the answer, in order)
// and watch.
const systems = {
  hilodb: {
    async open(name, collections) {
      const { openStore } = await lib;
      const db = await openStore({ url, database: name, persist: name });
      for (const [c, ixs] of Object.entries(collections)) {
        for (const ix of ixs) await db.createIndex(c, { name: ix, fields: INDEXES[ix] });
      }
      return db;
    },
    put: (db, c, doc) => db.put(c, doc),
    async bulk(db, c, docs) {
      const res = await db.putMany(c, docs);
      if (res.some((r) => r instanceof Error)) throw new Error('putMany failed');
    },
    async find(db, c, q) {
      const res = await db.find(c, { selector: q.selector, sort: q.sort, limit: q.limit });
      return res.docs.map((d) => d.n);
    },
    async explain(db, c, q) {
      const { index, examined } = await db.explain(c, { selector: q.selector, sort: q.sort, limit: q.limit });
      return { index, examined };
    },
    async watch(db, c, q, cb) {
      const w = db.watchQuery(c, { selector: q.selector, sort: q.sort, limit: q.limit }, (r) => cb(r.docs.map((d) => d.n)));
      await w.ready;
      return () => w.close();
    },
    close: (db) => db.close(),
  },
  pouch: {
    // One database for each collection: PouchDB has none.
    async open(name, collections) {
      const PouchDB = await lib;
      const adapter = system === 'pouch-idb' ? 'idb' : 'indexeddb';
      const db = {};
      for (const [c, ixs] of Object.entries(collections)) {
        db[c] = new PouchDB(`${name}-${c}`, { adapter });
        for (const ix of ixs) await db[c].createIndex({ index: { fields: INDEXES[ix], name: ix, ddoc: ix } });
      }
      return db;
    },
    put: (db, c, doc) => db[c].put({ _id: `${c}/${pad(doc.n, 8)}`, ...doc }),
    async bulk(db, c, docs) {
      const res = await db[c].bulkDocs(docs.map((d) => ({ _id: `${c}/${pad(d.n, 8)}`, ...d })));
      if (res.some((r) => r.error)) throw new Error('bulkDocs failed');
    },
    async find(db, c, q) {
      const res = await db[c].find(pouchQuery(q));
      return res.docs.map((d) => d.n);
    },
    async explain(db, c, q) {
      const { index } = await db[c].explain(pouchQuery(q));
      return { index: index.name };
    },
    // No live query: the changes feed, and the query run again on each change.
    async watch(db, c, q, cb) {
      const run = () => this.find(db, c, q).then(cb);
      await run();
      const feed = db[c].changes({ since: 'now', live: true }).on('change', run);
      return () => feed.cancel();
    },
    async close(db) {
      for (const d of Object.values(db)) await d.close();
    },
  },
  rxdb: {
    async open(name, collections) {
      const { createRxDatabase, getRxStorageDexie } = await lib;
      const db = await createRxDatabase({ name, storage: getRxStorageDexie(), multiInstance: false, eventReduce: true });
      await db.addCollections(Object.fromEntries(Object.entries(collections).map(([c, ixs]) => [c, { schema: rxSchema(ixs) }])));
      return db;
    },
    put: (db, c, doc) => db[c].insert({ id: pad(doc.n, 8), ...doc }),
    async bulk(db, c, docs) {
      const res = await db[c].bulkInsert(docs.map((d) => ({ id: pad(d.n, 8), ...d })));
      if (res.error.length > 0) throw new Error('bulkInsert failed');
    },
    async find(db, c, q) {
      const docs = await db[c].find({ selector: q.selector, sort: q.sort, limit: q.limit }).exec();
      return docs.map((d) => d.n);
    },
    async watch(db, c, q, cb) {
      let first;
      const ready = new Promise((resolve) => (first = resolve));
      const sub = db[c].find({ selector: q.selector, sort: q.sort, limit: q.limit }).$.subscribe((docs) => {
        cb(docs.map((d) => d.n));
        first();
      });
      await ready;
      return () => sub.unsubscribe();
    },
    close: (db) => db.close(),
  },
};
const sys = systems[system.startsWith('pouch') ? 'pouch' : system === 'hilodb-base' ? 'hilodb' : system];

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// timed runs fn(i) for i = 0 … warm-1, then for warm … warm+reps-1, each
// timed: the median and the mean (performance.now() ticks in 0.1 ms
// here; the mean of many is finer) and the first timed run's answer.
async function timed(fn, warm, reps) {
  for (let i = 0; i < warm; i++) await fn(i);
  const times = [];
  let answer;
  for (let i = warm; i < warm + reps; i++) {
    const t0 = performance.now();
    const a = await fn(i);
    times.push(performance.now() - t0);
    answer ??= a;
  }
  return { median: median(times), mean: times.reduce((a, b) => a + b, 0) / reps, answer };
}

// The big store: collection todos with the three indexes; the reopened
// one: todos with the first two.
const bigCollections = { todos: Object.keys(INDEXES) };
const reopenCollections = { todos: ['owner-createdAt', 'owner-status-createdAt'] };

window.bench = {
  system,
  ready: lib.then(() => true),

  // load writes size todos into a new store, 10,000 at a time, then has
  // every index ready (PouchDB's idb adapter builds an index on its
  // first query): ms for the writes and for the indexes.
  async load(name, size, big) {
    const t0 = performance.now();
    const db = await sys.open(name, big ? bigCollections : reopenCollections);
    for (let from = 0; from < size; from += 10000) {
      await sys.bulk(db, 'todos', Array.from({ length: Math.min(10000, size - from) }, (_, k) => todo(from + k, size)));
    }
    const t1 = performance.now();
    const qs = queries(size);
    for (const q of big ? [qs.eqSort, qs.range, qs.compound] : [qs.eqSort, qs.compound]) await sys.find(db, 'todos', q(0));
    const t2 = performance.now();
    await sys.close(db);
    return { writeMs: Math.round(t1 - t0), indexMs: Math.round(t2 - t1) };
  },

  // queries runs each query of the big store: warm warm-ups (the scan
  // one), then reps timed runs (scanReps for the scan); the answers (the n, in order) and how
  // the system planned it (hilodb's explain, pouchdb-find's).
  async queries(name, size, reps, scanReps, warm) {
    const db = await sys.open(name, bigCollections);
    const out = {};
    for (const [k, q] of Object.entries(queries(size))) {
      const scan = k === 'scan';
      const r = await timed((i) => sys.find(db, 'todos', q(i)), scan ? 1 : warm, scan ? scanReps : reps);
      out[k] = { ...r, plan: sys.explain ? await sys.explain(db, 'todos', q(0)) : undefined };
    }
    await sys.close(db);
    return out;
  },

  // live watches one owner's newest todos (eqSort) and puts warm + k new
  // todos of that owner one by one, each the newest: for each of the last
  // k, ms from the put to the watch's callback with it at the top. from
  // numbers the new todos.
  async live(name, size, from, k, warm) {
    const db = await sys.open(name, bigCollections);
    const q = queries(size).eqSort(0);
    let want = -1;
    let seen;
    const stop = await sys.watch(db, 'todos', q, (ns) => {
      if (ns[0] === want) seen(performance.now());
    });
    const times = [];
    for (let i = 0; i < warm + k; i++) {
      const doc = todo(from + i, size, { owner: q.selector.owner });
      const got = new Promise((resolve) => (seen = resolve));
      want = doc.n;
      const t0 = performance.now();
      const put = sys.put(db, 'todos', doc);
      const t = (await got) - t0;
      if (i >= warm) times.push(t);
      await put;
      await sleep(20);
    }
    stop();
    await sys.close(db);
    return { median: median(times), times };
  },

  // puts writes k todos one by one into a collection with no index and k
  // into one with the three, taking turns, into a new store where each
  // already holds seed documents: the median ms of a put into each.
  async puts(name, seed, k) {
    const db = await sys.open(name, { plain: [], todos: Object.keys(INDEXES) });
    const qs = queries(seed);
    for (const c of ['plain', 'todos']) {
      for (let from = 0; from < seed; from += 10000) {
        await sys.bulk(db, c, Array.from({ length: Math.min(10000, seed - from) }, (_, i) => todo(from + i, seed)));
      }
    }
    for (const q of [qs.eqSort, qs.range, qs.compound]) await sys.find(db, 'todos', q(0));
    const times = { plain: [], todos: [] };
    const warm = 20;
    for (let i = 0; i < warm + k; i++) {
      for (const c of i % 2 ? ['plain', 'todos'] : ['todos', 'plain']) {
        const t0 = performance.now();
        await sys.put(db, c, todo(seed + i, seed));
        if (i >= warm) times[c].push(performance.now() - t0);
      }
    }
    await sys.close(db);
    return { plainPutMs: median(times.plain), indexedPutMs: median(times.todos) };
  },
};

// reopen opens the store name (its todos with two indexes) and answers
// the first query, as an app's first screen after a reload does.
if (params.has('reopen')) {
  window.reopened = (async () => {
    const size = Number(params.get('size'));
    const db = await sys.open(params.get('reopen'), reopenCollections);
    const opened = performance.now();
    const answer = await sys.find(db, 'todos', queries(size).eqSort(0));
    const answered = performance.now();
    // Writes the store holds still to be pushed: each is a mark a reopen loads.
    const pending = typeof db.pending === 'function' ? await db.pending() : undefined;
    await sys.close(db);
    return { reopenMs: answered, fromScriptMs: answered - started, openMs: opened - started, answer, pending };
  })();
}
