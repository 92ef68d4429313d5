// What only Node has, handed in by the Node entry (node.js): the package's
// other modules import nothing of Node's, so that the browser build (index.js,
// the "browser" and "default" exports) bundles none of it.

let node = null;

/**
 * useNode installs Node's parts: WebSocket() resolves to a WebSocket class
 * (the ws package's on Node 20, which has none), readFile(url) to the bytes
 * of a file: URL, and filePersistence(path, flush) to a persisted store's
 * files (files.js).
 */
export function useNode(parts) {
  node = parts;
}

/** nodePlatform returns Node's parts, or throws when the Node entry did not install them. */
export function nodePlatform(what) {
  if (node === null) {
    throw new Error(`hilodb: ${what} in Node needs the package's Node entry: import 'hilodb' by name (its "node" export, node.js), not index.js`);
  }
  return node;
}

/**
 * mark puts a step of a store's start ('hilodb:' and step) on the realm's
 * performance timeline, in a browser (a page or a worker; Node keeps
 * every mark for good, so none is made there): the browser's profiler
 * shows them, and make profile-browser prints them in order.
 */
export function mark(step) {
  if (node === null && typeof globalThis.performance?.mark === 'function') globalThis.performance.mark(`hilodb:${step}`);
}
