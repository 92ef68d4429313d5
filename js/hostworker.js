// A tab's host worker (host.js): the dedicated worker each tab starts
// (tabs.js) in which the shared worker may run the tab's share of the
// origin's persisted stores. A dedicated worker can hold a store's OPFS
// files itself, so a write is done in the thread that runs the store.
//
// Messages, on the port given in the first message ({t: 'port'}), from the
// shared worker: {t: 'client', port, tab}: serve port, a tab's connection to
// one store.

import { Host } from './host.js';

const host = new Host();

globalThis.onmessage = (e) => {
  const msg = e.data;
  if (msg?.t !== 'port') return;
  msg.port.onmessage = (m) => {
    if (m.data?.t === 'client') host.client(m.data.port, m.data.tab);
  };
  msg.port.start();
};
