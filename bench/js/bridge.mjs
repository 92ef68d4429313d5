// The cost of one call through the npm package's bridge into the Go core,
// in Node: sequential awaited get (of documents read before: the read cache;
// and of documents never read: a call into Go) and put (answered on the
// event loop when it needs no lease), on a store without a server (ids from
// _key, so no lease), nothing persisted. Prints one JSON
// line of microseconds per call. Usage: node bridge.mjs [calls] [package]
// where package is the path of another build's js/index.js, to compare
// two builds in one session.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const n = Number(process.argv[2] || 20000);
const pkg = process.argv[3] ? pathToFileURL(resolve(process.argv[3])).href : '../../js/node.js';
const { openStore } = await import(pkg);
// Nothing listens on port 9: the store opens offline.
const store = await openStore({ url: 'ws://127.0.0.1:9/v1/sync', database: 'bench', requestTimeout: 1000 });
const keys = 1000;
for (let i = 0; i < keys; i++) await store.put('orders', { _key: `k${i}`, total: i, item: 'widget' });

// time runs fn(0…1999) to warm up, then times fn(2000…2000+calls-1): the
// wall-clock time per call, and the process's CPU time per call (user and
// system, all threads), which other work on a busy machine disturbs less.
const warm = 2000;
const cpu = {};
const time = async (calls, fn, name) => {
  for (let i = 0; i < warm; i++) await fn(i);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = warm; i < warm + calls; i++) await fn(i);
  const t = ((performance.now() - t0) * 1000) / calls;
  const c = process.cpuUsage(c0);
  cpu[name] = +((c.user + c.system) / calls).toFixed(2);
  return t;
};
const getUs = await time(n, (i) => store.get(`orders/k${i % keys}`), 'getCachedUs');
const putUs = await time(n / 4, (i) => store.put('orders', { _key: `p${i}`, total: i, item: 'widget' }), 'putUs');
// Documents never read before (putMany does not fill the read cache): each
// get enters Go, through the fast path where the build has one (the
// documents are in its mirror: they were written in this session).
const cold = n / 4 + warm;
await store.putMany('cold', Array.from({ length: cold }, (_, i) => ({ _key: `c${i}`, total: i, item: 'widget' })));
const coldUs = await time(n / 4, (i) => store.get(`cold/c${i}`), 'getUncachedUs');
await store.close();
console.log(JSON.stringify({ calls: n, getCachedUs: +getUs.toFixed(2), getUncachedUs: +coldUs.toFixed(2), putUs: +putUs.toFixed(2), cpu }));
