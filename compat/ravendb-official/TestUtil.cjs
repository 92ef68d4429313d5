// The harness's stand-in for the upstream test driver (test/Utils/TestUtil):
// the same testContext and disposeTestDocumentStore, with stores on the
// hilodb server that hooks.mjs starts. hilodb makes a database on
// first use, so each store gets a fresh database name instead of a
// CreateDatabaseOperation; no index is ever stale, so waitForIndexing has
// nothing to wait for.
'use strict';
const { DocumentStore } = require('ravendb');

let index = 0;
const run = Date.now().toString(36);

class HilodbTestContext {
  constructor() {
    this.customizeStore = null;
    this.customizeDbRecord = null;
  }

  async getDocumentStore(database = 'test_db') {
    const url = globalThis.__hilodbURL;
    if (!url) throw new Error('the hilodb server is not running (hooks.mjs)');
    const name = `${database}_${run}_${++index}`.replace(/[^A-Za-z0-9_-]/g, '_');
    const store = new DocumentStore([url], name);
    if (this.customizeStore) await this.customizeStore(store);
    store.initialize();
    return store;
  }

  async waitForIndexing() {}
}

const testContext = new HilodbTestContext();

async function disposeTestDocumentStore(store) {
  if (!store) return;
  await new Promise((resolve) => {
    store.once('executorsDisposed', () => resolve());
    store.dispose();
  });
}

module.exports = { testContext, disposeTestDocumentStore };
