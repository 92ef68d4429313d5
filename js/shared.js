// The workers behind the persisted stores shared by the tabs of an origin
// (tabs.js is their other end). This one script runs as both:
//
// The SharedWorker of the origin decides where each persist name's store
// runs, so that the tabs share one store per name: in the host worker of
// one tab, or in the SharedWorker itself when no tab can start one. Each
// tab's Store talks to that host directly, through a port the SharedWorker
// hands out. When the host's tab is gone (closed, crashed, navigated away),
// the next tab's host worker opens the store from storage and the tabs
// reconnect to it.
//
// A tab's host worker is a dedicated worker each tab starts, in which the
// SharedWorker may run stores (host.js): a dedicated worker can hold a
// store's OPFS files itself, so a write is done in the thread that runs the
// store. (One script for both, so that bundlers see no worker that starts
// another that starts the first.)
//
// Messages to the SharedWorker from a tab: {t: 'tab', tab, host} once,
// naming a Web Lock the tab holds for its lifetime and giving the port of
// the tab's host worker (none where a page cannot start one); {t: 'open',
// rid, persist}, answered with {t: 'reply', rid, ok: true, value: port}, a
// port to the host of the persist name (host.js describes its messages);
// {t: 'host-failed', tab} when the tab's host worker failed or the tab is
// closing. To every tab:
// {t: 'host-gone', persist} when the host of persist went away: the tabs
// with the store open connect again. To a host worker, on the port given in
// its first message ({t: 'port'}): {t: 'client', port, tab}: serve port, a
// tab's connection to one store.

import { Host } from './host.js';
import { useCompiled } from './runtime.js';

const tabs = new Map(); // tab → {port, host}, oldest first
const hosts = new Map(); // persist name → {tab, port}; tab null: this worker
let local = null; // the Host in this worker

if (typeof globalThis.SharedWorkerGlobalScope === 'function' && globalThis instanceof globalThis.SharedWorkerGlobalScope) {
  globalThis.onconnect = (e) => {
    const port = e.ports[0];
    port.onmessage = (m) => handle(port, m.data);
    port.start();
  };
} else {
  // A tab's host worker. Its tab compiles the WebAssembly while this worker
  // starts and sends the module, or null ({t: 'module'}, tabs.js): the
  // store's open here waits for it.
  let compiled;
  useCompiled(new Promise((resolve) => (compiled = resolve)));
  const host = new Host();
  globalThis.onmessage = (e) => {
    const msg = e.data;
    if (msg?.t === 'module') compiled(msg.module ?? undefined);
    if (msg?.t !== 'port') return;
    msg.port.onmessage = (m) => {
      if (m.data?.t === 'client') host.client(m.data.port, m.data.tab);
    };
    msg.port.start();
    if (msg.testHooks === true) testHooks(host);
  };
}

function handle(port, msg) {
  switch (msg?.t) {
    case 'tab':
      tabs.set(msg.tab, { port, host: msg.host ?? null });
      // Granted once the tab is gone: the stores it ran move.
      navigator.locks.request(msg.tab, () => {
        tabs.delete(msg.tab);
        dropHosts(msg.tab);
      });
      return;
    case 'host-failed': {
      const t = tabs.get(msg.tab);
      if (t) t.host = null;
      dropHosts(msg.tab);
      return;
    }
    case 'open': {
      const ch = new MessageChannel();
      const h = hostOf(msg.persist);
      if (h.tab === null) {
        local ??= new Host();
        local.client(ch.port1, msg.tab);
      } else {
        h.port.postMessage({ t: 'client', port: ch.port1, tab: msg.tab }, [ch.port1]);
      }
      port.postMessage({ t: 'reply', rid: msg.rid, ok: true, value: ch.port2 }, [ch.port2]);
      return;
    }
  }
}

// hostOf is where the store of persist name runs, choosing the oldest tab
// with a host worker when it runs nowhere yet.
function hostOf(name) {
  let h = hosts.get(name);
  if (h) return h;
  h = { tab: null, port: null };
  for (const [tab, t] of tabs) {
    if (t.host) {
      h = { tab, port: t.host };
      break;
    }
  }
  hosts.set(name, h);
  return h;
}

// dropHosts forgets the stores tab ran and tells every tab.
function dropHosts(tab) {
  for (const [name, h] of hosts) {
    if (h.tab !== tab) continue;
    hosts.delete(name);
    for (const t of tabs.values()) t.port.postMessage({ t: 'host-gone', persist: name });
  }
}

// testHooks serves the tests' hook on host (playwright-tests/takeover.test.mjs),
// only in the host worker of a tab that set globalThis.__hilodbTestHooks
// before it opened a store: on the BroadcastChannel 'hilodb-test-hooks',
// {hold: 'made' | 'unmade', method?} holds the next receipted write (of
// that method) (Host.holdNextWrite), answered with {armed: true}, then
// {held: method}.
function testHooks(host) {
  const bc = new BroadcastChannel('hilodb-test-hooks');
  bc.onmessage = (m) => {
    if (m.data?.hold !== 'made' && m.data?.hold !== 'unmade') return;
    const method = typeof m.data.method === 'string' ? m.data.method : undefined;
    host.holdNextWrite(m.data.hold, method).then((held) => bc.postMessage({ held }));
    bc.postMessage({ armed: true });
  };
}
