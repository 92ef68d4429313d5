// The edge object's start, in the real workerd against the real sync
// server: a first read after workerd starts is answered from the replica
// without waiting for the server (README.md, "Fresh reads"), and the
// replica connects in the background.
//
//   cd edge && npm test      (make test-edge builds the server and the worker first)
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { edgeDir, freePort, run, serverBinary, startServer, startWorker, stop } from "./procs.mjs";

const REQUEST_TIMEOUT_MS = 15_000;
// DIAL_TIMEOUT_MS is how long the replica's first dial could hold its
// opening before it answered without the server (app.go, DialTimeout).
const DIAL_TIMEOUT_MS = 2_000;
// PULL_WAIT_MS bounds the pull a read that must be fresh makes (pullWait).
const PULL_WAIT_MS = 1_000;
// FRESH_BOUND_MS is the documented freshness bound.
const FRESH_BOUND_MS = 2_000;
const DB = "starttest";

let tmp, replicas, server, worker;
const env = () => ({ HILODB_URL: server.ws, HILODB_DB: DB });

before(
  async () => {
    tmp = await mkdtemp(join(tmpdir(), "hilodb-edge-start-"));
    await run("bash", [join(edgeDir, "build.sh")], { cwd: edgeDir });
    const bin = await serverBinary(tmp);
    replicas = join(tmp, "replicas");
    await mkdir(replicas);
    server = await startServer(bin, await freePort(), join(tmp, "data"));
    worker = await startWorker({ replicas, env: env() });
    const made = await call(server.http, "POST", `/_db/${DB}/_api/collection`, { body: { name: "orders", keyOptions: { type: "hilo" } } });
    assert.equal(made.status, 200);
  },
  { timeout: 600_000 },
);

after(async () => {
  await stop(worker);
  await stop(server);
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

// call sends one request and returns status, headers, the parsed body and
// how long the answer took (ms).
async function call(base, method, path, { body, headers = {} } = {}) {
  const t0 = performance.now();
  const res = await fetch(base + path, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
    headers,
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : null, ms: performance.now() - t0 };
}

// blackHole is a server lost on the network: it accepts connections on
// 127.0.0.1 and never answers; it counts them.
async function blackHole() {
  const sockets = new Set();
  const hole = { accepted: 0 };
  const srv = createServer((s) => {
    hole.accepted++;
    sockets.add(s);
    s.on("error", () => {});
    s.on("close", () => sockets.delete(s));
  });
  await new Promise((ok) => srv.listen(0, "127.0.0.1", ok));
  hole.url = `ws://127.0.0.1:${srv.address().port}/v1/sync`;
  hole.close = () =>
    new Promise((ok) => {
      for (const s of sockets) s.destroy();
      srv.close(ok);
    });
  return hole;
}

async function until(what, fn, ms = 10_000) {
  const deadline = performance.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (performance.now() > deadline) assert.fail(`${what} within ${ms} ms`);
    await new Promise((ok) => setTimeout(ok, 20));
  }
}

test("a first read after workerd starts is answered from the replica at once, stale, while the server never answers", async () => {
  const created = await call(worker.base, "POST", "/_api/document/orders?waitForSync=true", { body: { item: "tea" } });
  assert.equal(created.status, 201, JSON.stringify(created.json));
  const { _key: key, _rev: rev } = created.json;

  // workerd killed and started again, its sync server now one that takes
  // connections and never answers.
  await stop(worker, "SIGKILL");
  const hole = await blackHole();
  try {
    worker = await startWorker({ replicas, env: { HILODB_URL: hole.url, HILODB_DB: DB } });
    const first = await call(worker.base, "GET", `/_api/document/orders/${key}`);
    assert.equal(first.status, 200, JSON.stringify(first.json));
    assert.equal(first.json._rev, rev);
    assert.equal(first.headers.get("x-hilodb-fresh"), "stale");
    assert.ok(first.ms < DIAL_TIMEOUT_MS, `the first read took ${first.ms.toFixed(0)} ms: it waited for the server (${worker.output.slice(-2000)})`);
    assert.match(first.headers.get("server-timing") ?? "", /open;dur=[\d.]+/, "the first answer tells the object's start");
    // The replica dials in the background.
    await until("a connection from the worker to the server", () => hole.accepted > 0);

    // A read that must be fresh (Cache-Control: no-cache) tries to pull
    // first, for at most the pull's bound, then is served as the replica
    // has it.
    const insisting = await call(worker.base, "GET", `/_api/document/orders/${key}`, { headers: { "cache-control": "no-cache" } });
    assert.equal(insisting.status, 200);
    assert.equal(insisting.headers.get("x-hilodb-fresh"), "stale");
    assert.ok(insisting.ms >= PULL_WAIT_MS - 100, `a no-cache read answered in ${insisting.ms.toFixed(0)} ms: it did not try to pull`);
    assert.ok(insisting.ms < PULL_WAIT_MS + 1_500, `a no-cache read waited ${insisting.ms.toFixed(0)} ms, past the pull's bound`);

    // A write meanwhile is durable here and pending.
    const offline = await call(worker.base, "POST", "/_api/document/orders", { body: { item: "milk" } });
    assert.equal(offline.status, 202, JSON.stringify(offline.json));
    assert.equal(offline.headers.get("x-hilodb-sync"), "pending");
    await stop(worker, "SIGKILL");

    // Started again with the real server: the first read does not wait for
    // it either, the replica follows the feed within the bound, and the
    // write made meanwhile reaches the server.
    worker = await startWorker({ replicas, env: env() });
    const again = await call(worker.base, "GET", `/_api/document/orders/${offline.json._key}`);
    assert.equal(again.status, 200);
    assert.ok(["stale", "live"].includes(again.headers.get("x-hilodb-fresh")), again.headers.get("x-hilodb-fresh"));
    await until(
      "reads served live",
      async () => (await call(worker.base, "GET", `/_api/document/orders/${key}`)).headers.get("x-hilodb-fresh") === "live",
      FRESH_BOUND_MS,
    );
    await until("the write made while the server was away on the server", async () => {
      const r = await call(server.http, "GET", `/_db/${DB}/_api/document/orders/${offline.json._key}`);
      return r.status === 200 && r.json._rev === offline.json._rev;
    });
  } finally {
    await hole.close();
  }
});

test("after start, reads are the replica's until it follows the server; a no-cache read pulls first; the bound holds", async () => {
  const created = await call(worker.base, "POST", "/_api/document/orders?waitForSync=true", { body: { item: "tea", v: 1 } });
  assert.equal(created.status, 201);
  const key = created.json._key;
  await stop(worker, "SIGKILL");
  // Changed on the server while the object is down.
  const changed = await call(server.http, "PATCH", `/_db/${DB}/_api/document/orders/${key}`, { body: { v: 2 } });
  assert.ok(changed.status === 201 || changed.status === 202, JSON.stringify(changed.json));
  worker = await startWorker({ replicas, env: env() });
  const began = performance.now();
  // The first read is answered at once, from the replica as it was.
  const first = await call(worker.base, "GET", `/_api/document/orders/${key}`);
  assert.equal(first.status, 200);
  assert.equal(first.headers.get("x-hilodb-fresh"), "stale");
  assert.equal(first.json.v, 1, "the first read is the replica's copy");
  // A read that must be fresh has the server's version.
  const fresh = await call(worker.base, "GET", `/_api/document/orders/${key}`, { headers: { "cache-control": "no-cache" } });
  assert.equal(fresh.status, 200);
  assert.equal(fresh.json.v, 2, `a no-cache read after start: ${JSON.stringify(fresh.json)} (${fresh.headers.get("x-hilodb-fresh")})`);
  assert.ok(["pulled", "live"].includes(fresh.headers.get("x-hilodb-fresh")));
  // And within the bound, so does every read.
  await until("the server's change in every read", async () => (await call(worker.base, "GET", `/_api/document/orders/${key}`)).json.v === 2, FRESH_BOUND_MS);
  assert.ok(performance.now() - began < FRESH_BOUND_MS + 1_000);
});

test("a log of many small writes is read at the next start from a key per 32 writes, every write kept", async () => {
  // keysRead restarts workerd and returns how many keys of the object's
  // storage its start read, from the first answer's Server-Timing.
  const keysRead = async (key) => {
    await stop(worker, "SIGKILL");
    worker = await startWorker({ replicas, env: env() });
    const first = await call(worker.base, "GET", `/_api/document/orders/${key}`);
    assert.equal(first.status, 200);
    const timing = first.headers.get("server-timing") ?? "";
    const read = /storage;dur=[\d.]+;desc="(\d+) keys"/.exec(timing);
    assert.ok(read, `the first answer tells how many keys the start read: ${timing}`);
    return { keys: Number(read[1]), doc: first.json };
  };
  const made = await call(worker.base, "POST", "/_api/document/orders?waitForSync=true", { body: { item: "tea" } });
  assert.equal(made.status, 201, JSON.stringify(made.json));
  const before = await keysRead(made.json._key);
  // 100 writes one at a time, each a frame of its own in the log, and the
  // pushes' acknowledgements, frames too.
  const keys = [];
  for (let i = 0; i < 100; i++) {
    const w = await call(worker.base, "POST", "/_api/document/orders?waitForSync=false", { body: { item: "tea", i } });
    assert.equal(w.status, 202, JSON.stringify(w.json));
    keys.push(w.json._key);
  }
  const after = await keysRead(keys[99]);
  assert.equal(after.doc.i, 99);
  // A key per 32 small appends and at most 31 since the last merge, not
  // one per append (the writes and their acknowledgements: 100 or more).
  assert.ok(after.keys - before.keys <= 45, `the start read ${before.keys} keys before the writes, ${after.keys} after`);
  for (const [i, key] of keys.entries()) {
    const r = await call(worker.base, "GET", `/_api/document/orders/${key}`);
    assert.equal(r.status, 200, `write ${i} (${key}) after the restart`);
    assert.equal(r.json.i, i);
  }
});
