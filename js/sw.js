// hilodb's app shell: a service worker that keeps the page, its scripts,
// the store's workers and its WebAssembly in the Cache Storage, so that a
// reload with the server or the network gone still starts the app, which
// then opens its persisted store offline.
//
// Register it from the page with registerShell (shell.js), or by hand:
//   navigator.serviceWorker.register('/hilodb-sw.js')
// It must be served from the directory whose pages it is to keep (a
// service worker controls the pages under its own path): copy it into the
// app's public root (Vite: public/hilodb-sw.js).
//
// Every same-origin GET of a page, a script, a worker, a style sheet, an
// image, a font or a .wasm file goes to the network first, so an online
// app is always the current one, and what comes back is kept; when the
// network fails, the kept copy answers. Everything else (the sync
// server's websocket, its HTTP APIs) passes through untouched.
/* eslint-env serviceworker */

const cacheName = 'hilodb-shell-1';

// destinations are the request destinations kept.
const destinations = new Set(['document', 'script', 'worker', 'sharedworker', 'serviceworker', 'style', 'image', 'font', 'manifest']);

function keeps(request) {
  if (request.method !== 'GET') return false;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return false;
  return destinations.has(request.destination) || url.pathname.endsWith('.wasm');
}

self.addEventListener('install', () => self.skipWaiting());

self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

// {t: 'hilodb-keep', urls}: what the page loaded before this worker
// controlled it (shell.js sends it), kept now. Answers on the port given.
self.addEventListener('message', (event) => {
  const msg = event.data;
  if (!msg || msg.t !== 'hilodb-keep' || !Array.isArray(msg.urls)) return;
  const done = keepAll(msg.urls).then((n) => event.ports[0]?.postMessage({ kept: n }));
  event.waitUntil(done);
});

async function keepAll(urls) {
  const cache = await caches.open(cacheName);
  let n = 0;
  await Promise.all(
    urls.map(async (u) => {
      try {
        const url = new URL(u, self.location.href);
        if (url.origin !== self.location.origin) return;
        const res = await fetch(url, { cache: 'no-cache' });
        if (res.ok) {
          await cache.put(url.href, res);
          n++;
        }
      } catch {
        // not there (a file the app does not use): nothing to keep
      }
    }),
  );
  return n;
}

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (!keeps(request)) return;
  event.respondWith(
    (async () => {
      const cache = await caches.open(cacheName);
      try {
        const res = await fetch(request);
        if (res.ok && res.type === 'basic') await cache.put(request.url, res.clone());
        return res;
      } catch (err) {
        const kept = await cache.match(request.url, { ignoreVary: true });
        if (kept) return kept;
        // A page never seen: the start page kept, if any.
        if (request.mode === 'navigate') {
          const start = await cache.match(new URL('./', self.location.href).href, { ignoreVary: true });
          if (start) return start;
        }
        throw err;
      }
    })(),
  );
});
