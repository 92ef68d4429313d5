// registerShell: one call that makes a page start offline, with hilodb's
// service worker (sw.js) keeping the page, its scripts, the store's
// workers and its WebAssembly.

// packageFiles are the files of this package a store loads (in a page, in
// its workers), kept at once, relative to this module; a bundler that
// renamed them leaves them unfound, and they are kept as they are loaded.
// The web root js/build-web.mjs lays out names its bundles here instead
// (hilodbWebFiles, defined at its build).
/* global hilodbWebFiles */
const packageFiles = typeof hilodbWebFiles === 'object' ? hilodbWebFiles : [
  'index.js', 'store.js', 'events.js', 'options.js', 'platform.js', 'runtime.js', 'tabs.js', 'shared.js', 'host.js',
  'writer.js', 'collection.js', 'session.js', 'watch.js', 'persist.js', 'errors.js', 'closing.js', 'network.js',
  'group.js', 'cache.js', 'opfs.js', 'query.js', 'documentquery.js', 'dist/hilodb.wasm', 'dist/wasm_exec.js',
];

/**
 * registerShell registers the service worker at url (default
 * '/hilodb-sw.js': a copy of this package's sw.js in the app's public
 * root) and resolves once it controls the page and keeps everything the
 * page has loaded so far, with the package's own files: from then on a
 * reload works without the network. It resolves to {kept}: the files kept
 * now. Where there are no service workers it resolves to {kept: 0}.
 *
 * @param {string | URL} [url]
 * @param {RegistrationOptions} [options]
 * @returns {Promise<{kept: number}>}
 */
export async function registerShell(url = '/hilodb-sw.js', options) {
  const sw = globalThis.navigator?.serviceWorker;
  if (!sw) return { kept: 0 };
  await sw.register(url, options);
  await sw.ready;
  if (!sw.controller) {
    await new Promise((resolve) => sw.addEventListener('controllerchange', resolve, { once: true }));
  }
  const urls = new Set([location.href]);
  for (const e of performance.getEntriesByType('resource')) urls.add(e.name);
  for (const f of packageFiles) urls.add(new URL(f, import.meta.url).href);
  const ch = new MessageChannel();
  const answer = new Promise((resolve) => (ch.port1.onmessage = (m) => resolve(m.data)));
  sw.controller.postMessage({ t: 'hilodb-keep', urls: [...urls] }, [ch.port2]);
  return answer;
}
