// The parts of RxDB the bench page uses, bundled by run.mjs (esbuild) into
// one module for the browser: the core and its free Dexie.js storage.
export { createRxDatabase, addRxPlugin } from 'rxdb/plugins/core';
export { getRxStorageDexie } from 'rxdb/plugins/storage-dexie';
