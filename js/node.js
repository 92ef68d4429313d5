// The package's entry in Node (its "node" export): the store of index.js,
// with what only Node has handed in (platform.js): the ws package's
// WebSocket on Node 20, the wasm read from its file, persisted stores in
// files (files.js).

import { readFile } from 'node:fs/promises';

import { filePersistence } from './files.js';
import { useNode } from './platform.js';

useNode({
  WebSocket: async () => globalThis.WebSocket ?? (await import('ws')).WebSocket,
  readFile: (url) => readFile(url),
  filePersistence,
});

export * from './index.js';
