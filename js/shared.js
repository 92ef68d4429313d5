// The SharedWorker behind every tab of an origin that opens a persisted store
// (tabs.js is its other end). It runs the Go core off the main thread and
// holds one store per persist name, shared by all the tabs that open it:
// writes from any tab go through the one store, sync runs once per origin,
// and a store lives as long as one tab has it open.
//
// Messages from a tab: {t: 'tab', tab, writer} once, naming a Web Lock the
// tab holds for its lifetime and giving the port of the tab's log writer
// (writer.js), which persisted stores write their OPFS logs through while
// the tab lives; {t: 'open', rid, options}; {t: 'call', rid, sid, m,
// args}; {t: 'close', rid, sid}. Replies: {t: 'reply', rid, ok, value} or
// {t: 'reply', rid, ok: false, error: {code, num, message}}. Events:
// {t: 'event', sid, type, payload}.

import { openStore } from './index.js';
import { WriterPool } from './opfs.js';

// The tabs' writers, for persist.js: a dedicated worker's, since a shared
// worker cannot hold an OPFS file open for writing itself.
const writers = new WriterPool();
globalThis[Symbol.for('hilodb.writers')] = writers;

const stores = new Map(); // persist name → shared entry
const sessions = new Map(); // sid → {port, tab, entry}
let nextSid = 0;

const methods = new Set(['put', 'putMany', 'get', 'list', 'delete', 'info', 'sync', 'pending', 'conflicts', 'clearConflicts', 'flush', '_collectionOp', 'nextIdentityFor', 'seedIdentityFor', 'changes', '_names', '_generateId', '_saveBatch']);
const writes = new Set(['put', 'putMany', 'delete', '_saveBatch']);

globalThis.onconnect = (e) => {
  const port = e.ports[0];
  port.onmessage = (m) => {
    handle(port, m.data).catch((err) => console.error('hilodb shared worker:', err));
  };
  port.start();
};

function plainError(err) {
  return {
    code: typeof err?.code === 'string' ? err.code : 'internal',
    num: typeof err?.num === 'number' ? err.num : 4,
    message: String(err?.message ?? err),
  };
}

async function handle(port, msg) {
  const reply = (rid, value) => port.postMessage({ t: 'reply', rid, ok: true, value });
  const fail = (rid, err) => port.postMessage({ t: 'reply', rid, ok: false, error: plainError(err) });
  switch (msg?.t) {
    case 'tab':
      if (msg.writer) writers.add(msg.tab, msg.writer);
      // Granted once the tab is gone (closed, crashed, navigated away):
      // its sessions end as if it had closed them, and writes go through
      // another tab's writer.
      navigator.locks.request(msg.tab, () => {
        writers.remove(msg.tab);
        for (const [sid, s] of sessions) if (s.tab === msg.tab) closeSession(sid);
      });
      return;
    case 'open':
      try {
        reply(msg.rid, await openSession(port, msg.tab, msg.options));
      } catch (err) {
        fail(msg.rid, err);
      }
      return;
    case 'call': {
      const s = sessions.get(msg.sid);
      if (!s) return fail(msg.rid, { code: 'closed', num: 1902, message: 'store is closed' });
      if (!methods.has(msg.m)) return fail(msg.rid, { code: 'bad_request', num: 400, message: `unknown method ${msg.m}` });
      try {
        let value = await s.entry.store[msg.m](...(msg.args ?? []));
        if (msg.m === 'putMany') value = value.map((r) => (r instanceof Error ? { __hiloError: plainError(r) } : r));
        reply(msg.rid, value);
        if (writes.has(msg.m)) tellOthers(msg.sid, s.entry, msg.m, msg.args, value);
      } catch (err) {
        fail(msg.rid, err);
      }
      return;
    }
    case 'close':
      await closeSession(msg.sid);
      reply(msg.rid, undefined);
      return;
  }
}

// openSession joins the shared store of options.persist, opening it first
// if no tab has it open.
async function openSession(port, tab, options) {
  const name = options.persist;
  const key = JSON.stringify([options.url, options.database, options.token ?? '', options.changeFeed ?? false]);
  for (;;) {
    let entry = stores.get(name);
    if (entry?.closing) {
      await entry.closing; // the last tab closed it: open it anew
      continue;
    }
    if (entry && entry.key !== key) {
      const err = new Error(`openStore: persist ${JSON.stringify(name)} is open in another tab for another server, database or token`);
      err.code = 'locked';
      err.num = 423;
      throw err;
    }
    if (!entry) {
      entry = { key, sessions: new Set(), opening: null, store: null, closing: null };
      stores.set(name, entry);
      const e = entry;
      entry.opening = openStore({ ...options, shared: false }).then(
        (store) => {
          e.store = store;
          store._onFeedHead((head) => {
            for (const sid of e.sessions) sessions.get(sid)?.port.postMessage({ t: 'event', sid, type: 'feed', payload: head });
          });
          for (const type of ['change', 'conflict', 'error', 'status']) {
            store.on(type, (payload) => {
              for (const sid of e.sessions) {
                sessions.get(sid)?.port.postMessage({ t: 'event', sid, type, payload: type === 'error' ? plainError(payload) : payload });
              }
            });
          }
        },
        (err) => {
          if (stores.get(name) === e) stores.delete(name);
          throw err;
        },
      );
    }
    await entry.opening;
    if (entry.closing) continue; // closed while this tab waited
    const sid = ++nextSid;
    sessions.set(sid, { port, tab, entry });
    entry.sessions.add(sid);
    return sid;
  }
}

// tellOthers reports a tab's write to the other tabs of the store as a
// 'change' event, as a write from another client would be.
function tellOthers(from, entry, m, args, value) {
  let docs;
  if (m === '_saveBatch') {
    const items = JSON.parse(args[0]);
    docs = value.map((d, i) => (items[i]?.delete ? { id: d?._id ?? items[i].id, rev: '', deleted: true } : d)).filter((d) => d);
  } else {
    docs = m === 'delete' ? [{ id: args[0], rev: '', deleted: true }] : (m === 'put' ? [value] : value).filter((d) => d && !d.__hiloError);
  }
  const changes = docs.map((d) => (d.deleted ? d : { id: d._id, rev: d._rev, deleted: false }));
  if (changes.length === 0) return;
  for (const sid of entry.sessions) {
    if (sid !== from) sessions.get(sid)?.port.postMessage({ t: 'event', sid, type: 'change', payload: { changes } });
  }
}

async function closeSession(sid) {
  const s = sessions.get(sid);
  if (!s) return;
  sessions.delete(sid);
  const { entry } = s;
  entry.sessions.delete(sid);
  if (entry.sessions.size > 0 || entry.closing) return;
  entry.closing = (async () => {
    try {
      await entry.store?.close();
    } finally {
      for (const [name, e] of stores) if (e === entry) stores.delete(name);
    }
  })();
  await entry.closing;
}
