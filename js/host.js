// Where the persisted stores shared by the tabs of an origin run: a Host
// holds one store per persist name and serves the tabs' ports to it. It runs
// in one tab's host worker (shared.js), a dedicated worker that holds the
// store's OPFS files itself, so a write is a call in the same thread; or, when
// no tab can start one, in the shared worker (shared.js), which also decides
// which host runs each persist name.
//
// Messages on a tab's port (one port per store a tab opened): {t: 'open',
// rid, options}; {t: 'call', rid, sid, m, args}; {t: 'close', rid, sid}.
// Replies: {t: 'reply', rid, ok, value} or {t: 'reply', rid, ok: false,
// error: {code, num, message}}. Events: {t: 'event', sid, type, payload}.

import { collectionWrites } from './collection.js';
import { openStore } from './index.js';
import { mark } from './platform.js';
import { HostWatches } from './query.js';
import { TokenAsks } from './token.js';

/** methods are the Store methods a tab may call. */
const methods = new Set(['put', 'putMany', '_putManyText', 'get', '_getMany', 'list', 'delete', 'info', 'sync', 'pending', 'conflicts', 'clearConflicts', 'flush', '_collectionOp', 'nextIdentityFor', 'seedIdentityFor', 'changes', '_names', '_generateId', '_saveBatch', '_query', '_watchQuery', '_unwatchQuery']);
const writes = new Set(['put', 'putMany', '_putManyText', 'delete', '_saveBatch']);

/**
 * How long opening a store waits for the previous host of its persist name
 * (a tab that just closed or crashed) to let go of its lock.
 */
const takeoverWait = 3000;

/** plainError is err as a message can carry it. */
export function plainError(err) {
  return {
    code: typeof err?.code === 'string' ? err.code : 'internal',
    num: typeof err?.num === 'number' ? err.num : 4,
    message: String(err?.message ?? err),
  };
}

/** Host runs shared stores for the tabs connected to it. */
export class Host {
  #stores = new Map(); // persist name → entry
  #sessions = new Map(); // sid → {port, tab, entry}
  #tabs = new Set(); // tabs watched for going away
  #nextSid = 0;
  #hold = null; // test only: see holdNextWrite
  #tokens = new TokenAsks();

  // portsOf lists the ports of entry's sessions, the tabs that may give
  // its store a token.
  #portsOf(entry) {
    const ports = [];
    for (const sid of entry.sessions) {
      const s = this.#sessions.get(sid);
      if (s) ports.push(s.port);
    }
    return ports;
  }

  /**
   * holdNextWrite is a test-only hook (shared.js starts it only for a tab
   * that asked, playwright-tests/takeover.test.mjs): the next receipted write
   * is kept in flight for good, made first when `when` is 'made', not made when
   * it is 'unmade', and never answered, so that a test can take this host
   * away with the write certainly in flight. With a method, the next
   * receipted write of that method. Resolves to the write's method once it
   * is held (made and durable, for 'made').
   */
  holdNextWrite(when, method) {
    return new Promise((resolve) => {
      this.#hold = { when, method, resolve };
    });
  }

  /** client serves port, one store's connection from tab (a Web Lock name the tab holds while it lives). */
  client(port, tab) {
    if (tab && !this.#tabs.has(tab)) {
      this.#tabs.add(tab);
      // Granted once the tab is gone (closed, crashed, navigated away):
      // its sessions end as if it had closed them.
      navigator.locks.request(tab, () => {
        this.#tabs.delete(tab);
        for (const [sid, s] of this.#sessions) if (s.tab === tab) this.#closeSession(sid);
      });
    }
    port.onmessage = (m) => {
      this.#handle(port, tab, m.data).catch((err) => console.error('hilodb host:', err));
    };
    port.start?.();
  }

  async #handle(port, tab, msg) {
    const reply = (rid, value) => port.postMessage({ t: 'reply', rid, ok: true, value });
    const fail = (rid, err) => port.postMessage({ t: 'reply', rid, ok: false, error: plainError(err) });
    switch (msg?.t) {
      case 'open':
        mark('host-open');
        try {
          reply(msg.rid, await this.#openSession(port, tab, msg.options, typeof msg.link === 'string' ? msg.link : ''));
        } catch (err) {
          fail(msg.rid, err);
        }
        return;
      case 'call': {
        const s = this.#sessions.get(msg.sid);
        if (!s) return fail(msg.rid, { code: 'closed', num: 1902, message: 'store is closed' });
        if (!methods.has(msg.m)) return fail(msg.rid, { code: 'bad_request', num: 400, message: `unknown method ${msg.m}` });
        try {
          if (msg.m === '_collectionOp') msg.args = unsilenced(msg.args);
          const withReceipt = msg.receipt && isReceipted(msg.m, msg.args);
          const hold = withReceipt && (!this.#hold?.method || this.#hold.method === msg.m) ? this.#hold : null;
          if (hold) {
            this.#hold = null;
            // A write that failed stored no receipt: the next host makes it
            // again, as it would any write not made; it is held all the same.
            if (hold.when === 'made') await receiptedCall(s.entry.store, msg).catch(() => {});
            hold.resolve(msg.m);
            return;
          }
          if (msg.m === '_watchQuery' || msg.m === '_unwatchQuery') {
            // Live queries run here; their results go to the tab as 'query' events.
            s.watches ??= new HostWatches();
            if (msg.m === '_watchQuery') await s.watches.start(s.entry.store, msg.args ?? [], (payload) => port.postMessage({ t: 'event', sid: msg.sid, type: 'query', payload }));
            else s.watches.stop(msg.args?.[0]);
            return reply(msg.rid, undefined);
          }
          let value = withReceipt ? await receiptedCall(s.entry.store, msg) : await s.entry.store[msg.m](...(msg.args ?? []));
          if (msg.m === 'putMany') value = value.map((r) => (r instanceof Error ? { __hiloError: plainError(r) } : r));
          // A page of a query comes as bytes of their own buffer
          // (_query's find as text): handed to the tab, not copied.
          if (msg.m === '_query' && value instanceof Uint8Array) port.postMessage({ t: 'reply', rid: msg.rid, ok: true, value }, [value.buffer]);
          else reply(msg.rid, value);
          if (writes.has(msg.m) || (msg.m === '_collectionOp' && collectionWrites.has(msg.args?.[0]))) this.#tellOthers(msg.sid, s.entry, msg.m, msg.args, value);
        } catch (err) {
          fail(msg.rid, err);
        }
        return;
      }
      case 'close':
        await this.#closeSession(msg.sid);
        reply(msg.rid, undefined);
        return;
      case 'token-reply':
        this.#tokens.answer(msg);
        return;
    }
  }

  // openSession joins the store of options.persist, opening it first if it
  // is not open here.
  async #openSession(port, tab, options, link) {
    const name = options.persist;
    const key = JSON.stringify([options.url, options.database, options.tokenFromTab ? { fromTab: true } : (options.token ?? ''), options.changeFeed ?? false]);
    for (;;) {
      let entry = this.#stores.get(name);
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
        this.#stores.set(name, entry);
        const e = entry;
        const { tokenFromTab, ...storeOptions } = options;
        // The tabs using the store give it tokens; the one opening it
        // first, before it has a session.
        if (tokenFromTab === true) storeOptions.token = () => this.#tokens.ask([...this.#portsOf(e), port]);
        entry.opening = openTakingOver(storeOptions).then(
          (store) => {
            e.store = store;
            dropDeadTabsReceipts(store);
            store._onFeedHead((head) => this.#tell(e, null, 'feed', head));
            for (const type of ['change', 'conflict', 'error', 'status']) {
              store.on(type, (payload) => this.#tell(e, null, type, type === 'error' ? plainError(payload) : payload));
            }
          },
          (err) => {
            if (this.#stores.get(name) === e) this.#stores.delete(name);
            throw err;
          },
        );
      }
      await entry.opening;
      if (entry.closing) continue; // closed while this tab waited
      const sid = ++this.#nextSid;
      this.#sessions.set(sid, { port, tab, entry, link });
      entry.sessions.add(sid);
      return sid;
    }
  }

  // tell sends an event to every session of entry but from.
  #tell(entry, from, type, payload) {
    for (const sid of entry.sessions) {
      if (sid !== from) this.#sessions.get(sid)?.port.postMessage({ t: 'event', sid, type, payload });
    }
  }

  // tellOthers reports a tab's write to the other tabs of the store as a
  // 'change' event, as a write from another client would be.
  #tellOthers(from, entry, m, args, value) {
    if (entry.sessions.size < 2) return; // nobody else to tell
    let docs;
    if (m === '_collectionOp') {
      // ArangoDB-style results: {_id, _rev, …} for each document written
      // (an array for the *All operations), an error object for one that
      // failed; removals are deletions. create writes no document.
      const [op] = args;
      const removed = op === 'remove' || op === 'removeAll';
      docs = (Array.isArray(value) ? value : [value])
        .filter((r) => r && !r.error && typeof r._id === 'string')
        .map((r) => (removed ? { id: r._id, rev: '', deleted: true } : r));
    } else if (m === '_saveBatch') {
      const items = JSON.parse(args[0]);
      docs = value.map((d, i) => (items[i]?.delete ? { id: d?._id ?? items[i].id, rev: '', deleted: true } : d)).filter((d) => d);
    } else {
      if (m === '_putManyText') value = JSON.parse(value);
      docs = m === 'delete' ? [{ id: args[0], rev: '', deleted: true }] : (m === 'put' ? [value] : value).filter((d) => d && !d.__hiloError);
    }
    const changes = docs.map((d) => (d.deleted ? d : { id: d._id, rev: d._rev, deleted: false }));
    if (changes.length > 0) this.#tell(entry, from, 'change', { changes });
  }

  async #closeSession(sid) {
    const s = this.#sessions.get(sid);
    if (!s) return;
    this.#sessions.delete(sid);
    s.watches?.stopAll();
    const { entry } = s;
    entry.sessions.delete(sid);
    // The tab's writes through this session can no longer be sent again.
    if (s.tab && s.link) await entry.store?._dropReceipts('only', [`${s.tab}/${s.link}/`]).catch(() => {});
    if (entry.sessions.size > 0 || entry.closing) return;
    entry.closing = (async () => {
      try {
        await entry.store?.close();
      } finally {
        for (const [name, e] of this.#stores) if (e === entry) this.#stores.delete(name);
      }
    })();
    await entry.closing;
  }
}

// receipted are the writes a tab sends with a receipt {key, seq} (tabs.js):
// stored with the write, in its transaction, so that when the host goes
// away before it answers, the next host can tell whether it was made.
// A collection operation is one of them when it writes (collectionWrites).
const receipted = new Set(['put', 'putMany', '_putManyText', '_saveBatch', 'delete']);
const receiptedMethods = {
  put: '_putReceipted',
  putMany: '_putManyReceipted',
  _putManyText: '_putManyTextReceipted',
  _saveBatch: '_saveBatchReceipted',
  delete: '_deleteReceipted',
  _collectionOp: '_collectionOpReceipted',
};

// unsilenced returns a collection operation's arguments [op, name, payload,
// options] with a write's silent option dropped: the host needs the ids it
// wrote to tell the other tabs, and the tab's Collection answers a silent
// write with nothing whatever the host returns.
function unsilenced(args) {
  if (!Array.isArray(args) || !collectionWrites.has(args[0]) || typeof args[3] !== 'string' || !args[3].includes('silent')) return args;
  let options;
  try {
    options = JSON.parse(args[3]);
  } catch {
    return args; // refused by the store as it is
  }
  if (options === null || typeof options !== 'object' || options.silent !== true) return args;
  delete options.silent;
  return [args[0], args[1], args[2], JSON.stringify(options), ...args.slice(4)];
}

// isReceipted reports whether the call of method m with args is a write
// sent with a receipt.
function isReceipted(m, args) {
  return receipted.has(m) || (m === '_collectionOp' && collectionWrites.has(args?.[0]));
}

// receiptedCall makes the write of msg with its receipt. A write sent again
// (msg.resend: its host went away before answering) is answered from its
// receipt when that shows it was made, and made now when it shows it was
// not; when a later write of the tab took its receipt's slot, which of the
// two is no longer known, and it fails with unavailable. Exported for the
// tests (js/test), which play a host that went away.
export async function receiptedCall(store, msg) {
  const { key, seq } = msg.receipt;
  if (typeof key !== 'string' || typeof seq !== 'number') {
    throw { code: 'bad_request', num: 400, message: `${msg.m}: a receipt is {key: string, seq: number}` };
  }
  const args = msg.args ?? [];
  if (msg.resend) {
    const text = await store._receipt(key);
    const r = text === undefined ? undefined : JSON.parse(text);
    if (r?.seq === seq) return answerFromReceipt(store, msg.m, r, args);
    if (r && r.seq > seq) {
      throw { code: 'unavailable', num: 503, message: `${msg.m}: the tab that ran the shared store went away before it answered, and whether the write was stored is no longer known (retry it)` };
    }
  }
  return store[receiptedMethods[msg.m]](key, seq, ...args);
}

// answerFromReceipt answers a write that was made: each document as it is
// stored now (or its id, if it is gone since), or the error it failed with;
// a collection operation's answer as it made it (collectionAnswer).
async function answerFromReceipt(store, m, r, args) {
  if (m === 'delete') return undefined;
  if (m === '_collectionOp') return collectionAnswer(r, args);
  // A session's batch answered {_id, _key, _rev} per item (all or nothing:
  // one that failed stored no receipt).
  if (m === '_saveBatch') return r.items.map((it) => arangoResult(it, false));
  const item = async (it) => {
    if (failed(it)) return { __hiloError: { code: it.code || 'internal', num: it.num ?? 4, message: it.message ?? '' } };
    try {
      return await store.get(it.id);
    } catch {
      return { _id: it.id };
    }
  };
  const out = await Promise.all(r.items.map(item));
  if (m !== 'put') return out;
  if (out[0]?.__hiloError) throw out[0].__hiloError;
  return out[0];
}

// failed reports whether a receipt's item is an error (a silent
// collection write's item has no id).
const failed = (it) => Boolean(it.code || it.num);

// collectionAnswer is the answer a collection write (args: op, name,
// payload, options) made under receipt r gave, rebuilt from r's items as
// wasm/collections.go makes it: ArangoDB's {_id, _key, _rev, _oldRev?,
// new?, old?} per document ({} when silent), {error: true, …} for one that
// failed in a multi-document call; create's {name}. The receipt holds the
// revisions and the documents the write was asked to return, so that the
// answer is the same whatever was written since.
function collectionAnswer(r, [op, name, , options]) {
  if (op === 'create') return { name };
  const silent = typeof options === 'string' && JSON.parse(options)?.silent === true;
  const result = (it) => arangoResult(it, silent);
  if (op.endsWith('All')) return r.items.map(result);
  // A single-document write that failed stored no receipt: this one was made.
  const it = r.items[0];
  if (!it || failed(it)) throw { code: it?.code || 'internal', num: it?.num ?? 4, message: it?.message ?? `${op}: its receipt holds no result` };
  return result(it);
}

// arangoResult is one receipt item as core's Result marshals it:
// {_id, _key, _rev, _oldRev?, new?, old?}, {} when silent, {error: true, …}
// for one that failed.
function arangoResult(it, silent) {
  if (failed(it)) {
    const e = { error: true, errorNum: it.num ?? 4, errorMessage: it.message ?? '' };
    if (it.code) e.errorCode = it.code;
    if (it.key) e._key = it.key;
    if (it.rev) e._rev = it.rev;
    return e;
  }
  if (silent) return {};
  const out = { _id: it.id ?? '', _key: it.key ?? '', _rev: it.rev ?? '' };
  if (it.oldRev) out._oldRev = it.oldRev;
  if (it.new !== undefined) out.new = it.new;
  if (it.old !== undefined) out.old = it.old;
  return out;
}

// dropDeadTabsReceipts drops the receipts of tabs that are gone (their Web
// Lock is free): a browser killed with tabs open leaves theirs.
function dropDeadTabsReceipts(store) {
  navigator.locks
    .query()
    .then(({ held }) => {
      const live = held.map((l) => l.name).filter((n) => n.startsWith('hilodb-tab:'));
      return store._dropReceipts('except', live.map((n) => `${n}/`));
    })
    .catch(() => {});
}

// openTakingOver opens the store of options.persist in this realm. The host
// before this one (a tab that has just closed or crashed) may still hold the
// persist name's lock for a moment while its worker is torn down, so a
// locked store is tried again for up to takeoverWait.
async function openTakingOver(options) {
  const deadline = Date.now() + takeoverWait;
  for (;;) {
    try {
      return await openStore({ ...options, shared: false });
    } catch (err) {
      if (err?.code !== 'locked' || Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
