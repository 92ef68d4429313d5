// Helpers of the tests of persisted stores shared by the tabs of an origin
// (tabs.test.mjs, takeover.test.mjs): pages with a store open, the host
// worker's test hook, and a record of the calls a page sends its host.

// openPagesWith returns openPages for env (harness.mjs's serveWithChromium),
// which pushes the errors of the pages it opens onto errors.
// openPages(context, n, database, {hooks}) opens n pages with database's
// persisted store open. With hooks, their host workers serve the tests'
// hook (js/shared.js).
export function openPagesWith(env, errors) {
  return (context, n, database, opts) => openPages(env, errors, context, n, database, opts);
}

async function openPages(env, errors, context, n, database, { hooks = false } = {}) {
  const pages = [];
  for (let i = 0; i < n; i++) {
    const page = await context.newPage();
    page.on('pageerror', (err) => errors.push(err));
    // Before the page's scripts: the demo page opens a store as it loads.
    if (hooks) await page.addInitScript(() => (globalThis.__hilodbTestHooks = true));
    await page.goto(`${env.server.base}/`);
    await page.evaluate(async (database) => {
      const { openStore } = await import('/index.js');
      window.store = await openStore({ url: `ws://${location.host}/v1/sync`, database, persist: database, sync: true });
      window.changed = new Set();
      window.store.on('change', ({ changes }) => changes.forEach((c) => window.changed.add(c.id)));
    }, database);
    pages.push(page);
  }
  return pages;
}

// holdNextWrite arms the hook of the host worker running the store (opened
// with hooks): the next receipted write it gets (of method, when given) is
// held in flight, made first when hold is 'made', and never answered.
// Resolves once armed; page.evaluate('window.held') resolves to the held
// write's method.
export async function holdNextWrite(page, hold, method) {
  await page.evaluate(
    ([hold, method]) =>
      new Promise((armed) => {
        // Kept on window: a channel nothing refers to may be collected.
        const bc = (window.hookChannel = new BroadcastChannel('hilodb-test-hooks'));
        window.held = new Promise((held) => {
          bc.onmessage = (m) => {
            if (m.data?.armed) armed();
            if (m.data?.held) held(m.data.held);
          };
        });
        bc.postMessage({ hold, method });
      }),
    [hold, method],
  );
}

// recordCalls makes page record the method of each call its stores send
// to their host, in window.calls, until window.stopRecording(), which
// returns them. The page is the demo app, whose own store polls its host
// for 'pending' and 'info' in the background at any time: those two are
// not recorded.
export async function recordCalls(page) {
  await page.evaluate(() => {
    window.calls = [];
    const post = MessagePort.prototype.postMessage;
    const background = new Set(['pending', 'info']);
    MessagePort.prototype.postMessage = function (msg, ...rest) {
      if (msg?.t === 'call' && !background.has(msg.m)) window.calls.push(msg.m);
      return post.call(this, msg, ...rest);
    };
    window.stopRecording = () => {
      MessagePort.prototype.postMessage = post;
      return window.calls;
    };
  });
}
