// The Go client's websocket in Node, against servers that fail in the ways
// a real network does: nothing listening, a connection dropped during the
// upgrade, a binary frame, a connection cut after hello. Each call must
// settle promptly (well before the 10 s dial timeout) with needs_server or
// unavailable, and the Go runtime must stay responsive afterwards: an error
// event answered by waiting inside the event handler would freeze it.

import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { afterEach, describe, test } from 'node:test';
import { WebSocketServer } from 'ws';

import { openStore } from '../node.js';
import { freePort } from './server.mjs';

// PROMPT_MS is what "promptly" means here: far below the dial timeout.
const PROMPT_MS = 3000;

const closers = [];

afterEach(async () => {
  const all = closers.splice(0);
  await Promise.allSettled(all.map((close) => close()));
});

// rejectsPromptly asserts that promise rejects within PROMPT_MS with an
// Error whose code is one of codes.
async function rejectsPromptly(promise, codes) {
  const start = Date.now();
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still pending after ${PROMPT_MS} ms`)), PROMPT_MS);
  });
  try {
    await assert.rejects(Promise.race([promise, late]), (err) => {
      assert.ok(err instanceof Error, `got ${err}, want an Error`);
      assert.ok(codes.includes(err.code), `code ${err.code} of "${err.message}", want one of ${codes}`);
      return true;
    });
  } finally {
    clearTimeout(timer);
  }
  return Date.now() - start;
}

// within resolves with promise's value, or fails after PROMPT_MS.
async function within(promise, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still pending after ${PROMPT_MS} ms`)), PROMPT_MS);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

// open opens a store on url and closes it after the test.
async function open(url) {
  const store = await within(openStore({ url, database: 'shop' }), 'openStore');
  closers.push(() => within(store.close(), 'close'));
  return store;
}

// stillWorks checks that the Go runtime answers: a document with its own key
// needs no server.
async function stillWorks(store, key) {
  const doc = await within(store.put('orders', { _key: key }), 'put with a key');
  assert.equal(doc._id, `orders/${key}`);
}

// wsServer starts a websocket server on 127.0.0.1 whose connections are
// handed to onConnection, and returns its URL. Close codes the server
// receives are pushed to codes.
async function wsServer(onConnection, codes = []) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((ok) => wss.once('listening', ok));
  wss.on('connection', (ws) => {
    ws.on('close', (code) => codes.push(code));
    onConnection(ws);
  });
  closers.push(
    () =>
      new Promise((ok) => {
        for (const ws of wss.clients) ws.terminate();
        wss.close(() => ok());
      }),
  );
  return `ws://127.0.0.1:${wss.address().port}/v1/sync`;
}

// helloOK answers hello like the sync server does; other requests get
// onRequest(ws, request), if given.
function helloOK(onRequest = () => {}) {
  return (ws) => {
    ws.on('message', (data) => {
      const req = JSON.parse(String(data));
      if (req.op === 'hello') {
        ws.send(JSON.stringify({ id: req.id, ok: true, serverTag: 'A', node: 'n1' }));
      } else {
        onRequest(ws, req);
      }
    });
  };
}

describe('the websocket when the server fails', () => {
  test('nothing listening: open, put and sync settle promptly', async () => {
    const port = await freePort();
    const store = await open(`ws://127.0.0.1:${port}/v1/sync`);
    await rejectsPromptly(store.put('orders', { _id: 'orders|' }), ['needs_server']);
    await rejectsPromptly(store.sync(), ['needs_server', 'unavailable']);
    await stillWorks(store, 'refused');
  });

  test('the connection is dropped during the upgrade', async () => {
    const sockets = new Set();
    const tcp = createServer((socket) => {
      sockets.add(socket);
      socket.once('data', () => socket.destroy());
    });
    await new Promise((ok) => tcp.listen(0, '127.0.0.1', ok));
    closers.push(
      () =>
        new Promise((ok) => {
          for (const s of sockets) s.destroy();
          tcp.close(() => ok());
        }),
    );
    const store = await open(`ws://127.0.0.1:${tcp.address().port}/v1/sync`);
    await rejectsPromptly(store.put('orders', { _id: 'orders|' }), ['needs_server', 'unavailable']);
    await stillWorks(store, 'dropped');
  });

  test('a binary frame ends the connection', async () => {
    const url = await wsServer((ws) => ws.on('message', () => ws.send(new Uint8Array([1, 2, 3]))));
    const store = await open(url);
    await rejectsPromptly(store.put('orders', { _id: 'orders|' }), ['needs_server', 'unavailable']);
    await stillWorks(store, 'binary');
  });

  test('the connection is cut after hello', async () => {
    const url = await wsServer(helloOK((ws) => ws.terminate()));
    const store = await open(url);
    await rejectsPromptly(store.put('orders', { _id: 'orders|' }), ['needs_server', 'unavailable']);
    await stillWorks(store, 'cut');
  });

  test('the server closes with 1011 after hello', async () => {
    const url = await wsServer(helloOK((ws) => ws.close(1011, 'internal error')));
    const store = await open(url);
    await rejectsPromptly(store.put('orders', { _id: 'orders|' }), ['needs_server', 'unavailable']);
    await stillWorks(store, 'closed');
  });

  test('the client closes with 1000', async () => {
    const codes = [];
    const url = await wsServer(helloOK(), codes);
    const store = await within(openStore({ url, database: 'shop' }), 'openStore');
    assert.equal((await store.info()).connected, true);
    await within(store.close(), 'close');
    const deadline = Date.now() + PROMPT_MS;
    while (codes.length === 0 && Date.now() < deadline) await new Promise((ok) => setTimeout(ok, 10));
    assert.deepEqual(codes, [1000]);
  });
});

describe('masking in Node', () => {
  test('ws masks frames with the native bufferutil the package lists', async () => {
    // Installed as an optional dependency; without it ws masks every byte
    // a client sends in JavaScript, measurably slower on a large push.
    const { createRequire } = await import('node:module');
    const require = createRequire(new URL('../node_modules/ws/package.json', import.meta.url));
    const bufferutil = require('bufferutil');
    assert.match(String(bufferutil.mask), /\[native code\]/);
    const data = Buffer.from('hilodb');
    const out = Buffer.alloc(data.length);
    bufferutil.mask(data, Buffer.from([1, 2, 3, 4]), out, 0, data.length);
    assert.deepEqual([...out], [...data].map((b, i) => b ^ [1, 2, 3, 4][i % 4]));
  });
});
