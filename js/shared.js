// The SharedWorker behind every tab of an origin that opens a persisted store
// (tabs.js is its other end). It decides where each persist name's store
// runs, so that the tabs share one store per name: in the host worker of
// one tab (hostworker.js, a dedicated worker that holds the store's OPFS
// files itself), or here when no tab can start one. Each tab's Store talks
// to that host directly, through a port this worker hands out. When the
// host's tab is gone (closed, crashed, navigated away), the next tab's host
// worker opens the store from storage and the tabs reconnect to it.
//
// Messages from a tab: {t: 'tab', tab, host} once, naming a Web Lock the tab
// holds for its lifetime and giving the port of the tab's host worker (none
// where a page cannot start one); {t: 'open', rid, persist}, answered with
// {t: 'reply', rid, ok: true, value: port}, a port to the host of the
// persist name (host.js describes its messages); {t: 'host-failed', tab}
// when the tab's host worker failed. To every tab: {t: 'host-gone',
// persist} when the host of persist went away: the tabs with the store open
// connect again.

import { Host } from './host.js';

const tabs = new Map(); // tab → {port, host}, oldest first
const hosts = new Map(); // persist name → {tab, port}; tab null: this worker
let local = null; // the Host in this worker

globalThis.onconnect = (e) => {
  const port = e.ports[0];
  port.onmessage = (m) => handle(port, m.data);
  port.start();
};

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
