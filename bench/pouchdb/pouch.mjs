// The PouchDB 9 baseline for make bench-sync: one client pushes N small
// documents to express-pouchdb on 127.0.0.1, then a fresh client pulls them.
// Prints one JSON line with documents per second for each leg. The second
// argument is PouchDB's batch_size (its default is 100; make bench-sync also
// runs 1000, its best here).
import PouchDB from 'pouchdb-node';
import memory from 'pouchdb-adapter-memory';
import express from 'express';
import expressPouchDB from 'express-pouchdb';

PouchDB.plugin(memory);
const MemPouch = PouchDB.defaults({ adapter: 'memory' });

const n = Number(process.argv[2] || 10000);
const batch = Number(process.argv[3] || 100);

const app = express();
app.use('/', expressPouchDB(MemPouch, { mode: 'minimumForPouchDB', logPath: '/dev/null' }));
const server = await new Promise((resolve) => {
  const s = app.listen(0, '127.0.0.1', () => resolve(s));
});
const url = `http://127.0.0.1:${server.address().port}/bench`;

try {
  const a = new MemPouch('a');
  const docs = [];
  for (let i = 0; i < n; i++) docs.push({ _id: `orders/${i + 1}-A`, total: i, item: 'widget' });
  await a.bulkDocs(docs);

  let t0 = performance.now();
  const push = await a.replicate.to(url, { batch_size: batch });
  const pushMs = performance.now() - t0;
  if (push.docs_written !== n) throw new Error(`push wrote ${push.docs_written} of ${n}`);

  const b = new MemPouch('b');
  t0 = performance.now();
  const pull = await b.replicate.from(url, { batch_size: batch });
  const pullMs = performance.now() - t0;
  const info = await b.info();
  if (info.doc_count !== n) throw new Error(`pull holds ${info.doc_count} of ${n}`);

  console.log(JSON.stringify({
    system: batch === 100 ? 'pouchdb' : `pouchdb-batch${batch}`, docs: n,
    pushMs: Math.round(pushMs), pullMs: Math.round(pullMs),
    pushDocsPerSec: Math.round(n / (pushMs / 1000)),
    pullDocsPerSec: Math.round(n / (pullMs / 1000)),
  }));
} finally {
  server.close();
  server.closeAllConnections?.();
}
