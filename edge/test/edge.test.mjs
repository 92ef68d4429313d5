// End-to-end tests of the edge worker in the real workerd runtime, against
// the real sync server, both on 127.0.0.1 with free ports: the replica in a
// Durable Object, its survival of a killed workerd, writes while the sync
// server is down, fresh reads, ArangoDB's document API, and the wrangler
// deployment (dry run).
//
//   cd edge && npm test      (make test-edge builds the server and the worker first)
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "arangojs";
// The npm package: the browser store's code (Go as WebAssembly) in Node,
// a websocket client of the sync server like a browser tab (make wasm).
import { openStore } from "../../js/node.js";
import { edgeDir, freePort, run, serverBinary, startServer, startWorker, stop } from "./procs.mjs";

const REQUEST_TIMEOUT_MS = 15_000;
// FRESH_BOUND_MS is the documented bound (README.md, "Fresh reads") on how
// long a change made on the sync server takes to be visible at the edge.
const FRESH_BOUND_MS = 2_000;
const DB = "edgetest";
const ID = /^orders\/(\d+)-A$/;

let tmp, serverBin, serverPort, dataDir, replicas;
let server; // the sync server
let worker; // workerd

before(
  async () => {
    tmp = await mkdtemp(join(tmpdir(), "hilodb-edge-test-"));
    await run("bash", [join(edgeDir, "build.sh")], { cwd: edgeDir });
    serverBin = await serverBinary(tmp);
    dataDir = join(tmp, "data");
    replicas = join(tmp, "replicas");
    await mkdir(replicas);
    serverPort = await freePort();
    server = await startServer(serverBin, serverPort, dataDir);
    worker = await startWorker({ replicas, env: { HILODB_URL: server.ws, HILODB_DB: DB } });
  },
  { timeout: 600_000 },
);

after(async () => {
  await stop(worker);
  await stop(server);
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

// call sends one request to base (the worker by default) and returns
// status, headers and the parsed JSON body (null for none).
async function call(method, path, body, { base = worker.base, headers = {} } = {}) {
  const res = await fetch(base + path, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  let json = null;
  if (text) {
    try {
      json = JSON.parse(text);
    } catch {
      assert.fail(`${method} ${path}: ${res.status} with a body that is not JSON: ${text}\n${tail(worker.output)}`);
    }
  }
  return { status: res.status, headers: res.headers, json };
}

const onServer = (method, path, body, headers) => call(method, `/_db/${DB}${path}`, body, { base: server.http, headers });

// metric returns a counter from the sync server's /metrics.
async function metric(name) {
  const text = await (await fetch(`${server.http}/metrics`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })).text();
  const m = new RegExp(`^${name} (\\d+)$`, "m").exec(text);
  assert.ok(m, `the sync server reports ${name}`);
  return Number(m[1]);
}

function tail(output, lines = 40) {
  return output.split("\n").slice(-lines).join("\n");
}

function idNumber(id) {
  const m = ID.exec(id);
  assert.ok(m, `id ${id} has the form orders/N-A`);
  return Number(m[1]);
}

// arangoError checks ArangoDB's error body: {error, code (the status),
// errorNum, errorMessage}.
function arangoError(res, status, errorNum) {
  assert.equal(res.status, status, JSON.stringify(res.json));
  assert.equal(res.json.error, true);
  assert.equal(res.json.code, status);
  assert.equal(res.json.errorNum, errorNum);
  assert.ok(typeof res.json.errorMessage === "string" && res.json.errorMessage.length > 0);
}

// eventually polls fn until it returns a truthy value, for at most ms.
async function eventually(fn, ms, what) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) assert.fail(`${what}: not within ${ms} ms\n${tail(worker.output)}`);
    await new Promise((ok) => setTimeout(ok, 25));
  }
}

const ids = new Set(); // every id the edge gave, to catch one given twice
const removed = new Set(); // those removed since
function fresh(id) {
  assert.ok(!ids.has(id), `id ${id} given twice`);
  ids.add(id);
}

test("short forms: POST /docs/{collection} waits for the server, GET /docs/{id} reads the replica", async () => {
  const res = await call("POST", "/docs/orders", { item: "tea", qty: 2 });
  assert.equal(res.status, 201, JSON.stringify(res.json));
  assert.equal(res.headers.get("x-hilodb-sync"), "synced");
  assert.equal(res.json._id, "orders/1-A");
  assert.equal(res.headers.get("location"), "/docs/orders/1-A");
  fresh(res.json._id);
  await eventually(async () => (await call("GET", "/_edge/status")).json.following, 5_000, "the replica follows the feed");
  const got = await call("GET", "/docs/orders/1-A");
  assert.equal(got.status, 200);
  assert.deepEqual(got.json, res.json);
  assert.equal(got.headers.get("x-hilodb-fresh"), "live");
  // The server has it, with the same _rev.
  const there = await onServer("GET", "/_api/document/orders/1-A");
  assert.equal(there.status, 200);
  assert.equal(there.json._rev, res.json._rev);
  arangoError(await call("GET", "/docs/orders/404-A"), 404, 1202);

  // The replica keeps one connection: writes dial none.
  const dials = await metric("hilodb_connections_total");
  for (let i = 0; i < 10; i++) {
    const w = await call("POST", "/docs/orders", { i });
    assert.equal(w.status, 201);
    fresh(w.json._id);
  }
  assert.equal(await metric("hilodb_connections_total"), dials, "no websocket dialled per request");
});

test("ArangoDB's document API: create, read, replace, update, remove, arrays, If-Match", async () => {
  const c = await call("POST", "/_api/document/orders?returnNew=true&waitForSync=true", { item: "cup" });
  assert.equal(c.status, 201, JSON.stringify(c.json));
  assert.match(c.json._id, ID);
  fresh(c.json._id);
  assert.equal(c.json.new.item, "cup");
  assert.equal(c.json.new["@metadata"], undefined, "no @metadata for ArangoDB's clients");
  const key = c.json._key;

  const r = await call("GET", `/_db/${DB}/_api/document/orders/${key}`);
  assert.equal(r.status, 200);
  assert.deepEqual(r.json, c.json.new);
  assert.equal(r.headers.get("etag"), `"${c.json._rev}"`);
  assert.equal((await call("GET", `/_api/document/orders/${key}`, undefined, { headers: { "if-none-match": `"${c.json._rev}"` } })).status, 304);

  // A stale If-Match: 412, errorNum 1200 and the current _rev, as the server answers.
  const stale = await call("PUT", `/_api/document/orders/${key}`, { item: "x" }, { headers: { "if-match": '"nope"' } });
  arangoError(stale, 412, 1200);
  assert.equal(stale.json._rev, c.json._rev);
  const staleThere = await onServer("PUT", `/_api/document/orders/${key}`, { item: "x" }, { "if-match": '"nope"' });
  arangoError(staleThere, 412, 1200);

  const rep = await call("PUT", `/_api/document/orders/${key}?returnOld=true`, { item: "mug" }, { headers: { "if-match": `"${c.json._rev}"` } });
  assert.ok(rep.status === 201 || rep.status === 202, JSON.stringify(rep.json));
  assert.equal(rep.json._oldRev, c.json._rev);
  assert.equal(rep.json.old.item, "cup");
  const upd = await call("PATCH", `/_api/document/orders/${key}?returnNew=true`, { size: "L" });
  assert.deepEqual([upd.json.new.item, upd.json.new.size], ["mug", "L"]);

  // Arrays: per-item errors with x-arango-error-codes.
  const many = await call("POST", "/_api/document/orders", [{ _key: "k1" }, { _key: "k1" }, { n: 3 }]);
  assert.equal(many.status, 202);
  assert.equal(many.json.length, 3);
  assert.equal(many.json[0]._id, "orders/k1");
  assert.equal(many.json[1].errorNum, 1210);
  assert.deepEqual(JSON.parse(many.headers.get("x-arango-error-codes")), { 1210: 1 });
  fresh(many.json[2]._id);
  const got = await call("PUT", "/_api/document/orders?onlyget=true", ["k1", "missing"]);
  assert.equal(got.status, 200);
  assert.equal(got.json[0]._key, "k1");
  assert.equal(got.json[1].errorNum, 1202);

  const del = await call("DELETE", `/_api/document/orders/${key}`);
  removed.add(`orders/${key}`);
  assert.ok(del.status === 201 || del.status === 202);
  const gone = await call("GET", `/_api/document/orders/${key}`);
  arangoError(gone, 404, 1202);
  // The server's body for a missing document has the same shape and number.
  const goneThere = await onServer("GET", "/_api/document/orders/never");
  arangoError(goneThere, 404, 1202);
  arangoError(await call("DELETE", "/_api/document/orders/never"), 404, 1202);
  arangoError(await call("POST", "/_api/document/orders", "not an object"), 400, 600);
  arangoError(await call("GET", "/_api/nothing"), 404, 1911);

  // Every write reaches the server.
  await eventually(async () => (await onServer("GET", "/_api/document/orders/k1")).status === 200, 5_000, "k1 on the server");
  await eventually(async () => (await onServer("GET", `/_api/document/orders/${key}`)).status === 404, 5_000, "the removal on the server");
});

test("an insert into a collection that does not exist is refused at the edge as on the server (404, 1203), until the server defines it", async () => {
  const one = await call("POST", "/_api/document/notyet", { a: 1 });
  const there = await onServer("POST", "/_api/document/notyet", { a: 1 });
  arangoError(one, 404, 1203);
  arangoError(there, 404, 1203);
  assert.equal(one.json.errorMessage, there.json.errorMessage);
  arangoError(await call("POST", "/_api/document/notyet", [{ a: 1 }, { a: 2 }]), 404, 1203);
  const cursor = await call("POST", "/_api/cursor", { query: "FOR d IN notyet RETURN d" });
  arangoError(cursor, 404, 1203);
  // Defined on the server (ArangoDB's default keys, traditional): the
  // edge learns of it at its next insert.
  assert.equal((await onServer("POST", "/_api/collection", { name: "notyet" })).status, 200);
  const made = await call("POST", "/_api/document/notyet?waitForSync=true", { a: 3 });
  assert.equal(made.status, 201, JSON.stringify(made.json));
  assert.match(made.json._key, /^\d+$/);
  assert.equal((await onServer("GET", `/_api/document/notyet/${made.json._key}`)).json.a, 3);
});

test("AQL at the edge: /_api/cursor answers from the replica as the sync server answers", async () => {
  assert.equal((await onServer("POST", "/_api/collection", { name: "people" })).status, 200);
  const people = [];
  for (let i = 1; i <= 12; i++) people.push({ _key: `p${i}`, n: i, team: i % 2 ? "red" : "blue", city: ["Oslo", "Rome", "Lima"][i % 3] });
  const made = await call("POST", "/_api/document/people?waitForSync=true", people);
  assert.equal(made.status, 202, JSON.stringify(made.json));
  const queries = [
    { query: "FOR p IN people FILTER p.n > 3 AND p.team == 'red' SORT p.n DESC LIMIT 1, 3 RETURN {k: p._key, c: p.city}" },
    { query: "FOR p IN @@c FILTER p.city IN @cities OR NOT (p.n <= 10) SORT p.n RETURN p.n", bindVars: { "@c": "people", cities: ["Lima"] } },
    { query: "FOR p IN people FILTER p._key LIKE 'p1%' COLLECT WITH COUNT INTO n RETURN n" },
    { query: "RETURN LENGTH(people)" },
    { query: "FOR i IN 1..5 FILTER i != 3 RETURN i" },
  ];
  for (const q of queries) {
    const here = await call("POST", "/_api/cursor", q);
    const there = await onServer("POST", "/_api/cursor", q);
    assert.equal(here.status, 201, JSON.stringify(here.json));
    assert.deepEqual(here.json.result, there.json.result, q.query);
    assert.ok(here.json.result.length > 0, q.query);
  }
  // Batches, count and fullCount, fetched with PUT and POST, then gone.
  const first = await call("POST", "/_api/cursor", { query: "FOR p IN people SORT p.n LIMIT 10 RETURN p.n", batchSize: 4, count: true, options: { fullCount: true } });
  assert.equal(first.status, 201);
  assert.deepEqual([first.json.result, first.json.hasMore, first.json.count, first.json.extra.stats.fullCount], [[1, 2, 3, 4], true, 10, 12]);
  const second = await call("PUT", `/_api/cursor/${first.json.id}`);
  const third = await call("POST", `/_api/cursor/${first.json.id}`);
  assert.deepEqual([second.json.result, third.json.result, third.json.hasMore], [[5, 6, 7, 8], [9, 10], false]);
  arangoError(await call("PUT", `/_api/cursor/${first.json.id}`), 404, 1600);
  const kept = await call("POST", "/_api/cursor", { query: "FOR p IN people RETURN p._key", batchSize: 2 });
  assert.equal((await call("DELETE", `/_api/cursor/${kept.json.id}`)).status, 202);
  arangoError(await call("PUT", `/_api/cursor/${kept.json.id}`), 404, 1600);
  // A change on the server is in the edge's answer within the fresh bound.
  assert.equal((await onServer("POST", "/_api/document/people", { _key: "p99", n: 99, team: "red" })).status, 201);
  await eventually(async () => {
    const r = await call("POST", "/_api/cursor", { query: "FOR p IN people FILTER p.n == 99 RETURN p._key" });
    return r.json.result[0] === "p99";
  }, FRESH_BOUND_MS + 1_000, "a server write in the edge's query");
  // The same errors as the server's.
  for (const [q, status, num] of [
    ["FOR p IN people RETURN p.n + 1", 400, 1501],
    ["FOR p IN nosuch RETURN p", 404, 1203],
    ["FOR p IN people FILTER p.n == @v RETURN p", 400, 1551],
  ]) {
    arangoError(await call("POST", "/_api/cursor", { query: q }), status, num);
    arangoError(await onServer("POST", "/_api/cursor", { query: q }), status, num);
  }
});

test("the doors' rules hold at the edge as on the server: repeated members, lone surrogates, repeated keys, bounded AQL results", async () => {
  const raw = async (base, method, path, text) => {
    const res = await fetch(base + path, {
      method,
      body: text,
      headers: { "content-type": "application/json" },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    return { status: res.status, json: await res.json() };
  };
  const big = "x".repeat(64 << 10);
  assert.equal((await onServer("POST", "/_api/collection", { name: "guards", keyOptions: { type: "hilo" } })).status, 200);
  for (const [where, base, prefix] of [["edge", worker.base, ""], ["server", server.http, `/_db/${DB}`]]) {
    const made = await raw(base, "POST", `${prefix}/_api/document/guards?waitForSync=true`, JSON.stringify({ _key: `g0${where}`, big }));
    assert.ok(made.status === 201 || made.status === 202, `${where}: ${JSON.stringify(made.json)}`);
    for (const [what, method, path, text, status, num] of [
      ["a repeated member", "POST", "/_api/document/guards", '{"_key":"g1","a":1,"a":2}', 400, 1227],
      ["two _keys", "POST", "/_api/document/guards", '{"_key":"g1","_key":"g2"}', 400, 1227],
      ["a repeated member in a replace", "PUT", `/_api/document/guards/g0${where}`, '{"a":1,"\\u0061":2}', 400, 1227],
      ["a lone surrogate in a document", "POST", "/_api/document/guards", '{"_key":"g1","s":"\\ud800"}', 400, 400],
      ["a lone surrogate in a selector", "PUT", "/_api/document/guards?onlyget=true", '["g\\udc00"]', 400, 400],
      ["one key 2,000 times", "PUT", "/_api/document/guards?onlyget=true", JSON.stringify(Array(2000).fill(`g0${where}`)), 400, 400],
      ["a key and its id", "PUT", "/_api/document/guards?onlyget=true", JSON.stringify([`g0${where}`, { _id: `guards/g0${where}` }]), 400, 400],
      ["an AQL DOCUMENT() of one id twice", "POST", "/_api/cursor", JSON.stringify({ query: "RETURN DOCUMENT(@ids)", bindVars: { ids: [`guards/g0${where}`, `guards/g0${where}`] } }), 400, 400],
      ["an AQL RETURN of a document 200 times", "POST", "/_api/cursor", JSON.stringify({ query: `FOR d IN guards LIMIT 1 RETURN [${Array(200).fill("d").join(",")}]` }), 413, 1906],
    ]) {
      const got = await raw(base, method, prefix + path, text);
      assert.equal(got.status, status, `${where}, ${what}: ${JSON.stringify(got.json)}`);
      assert.equal(got.json.errorNum, num, `${where}, ${what}: ${JSON.stringify(got.json)}`);
    }
    assert.equal((await raw(base, "GET", `${prefix}/_api/document/guards/g1`)).status, 404, `${where}: a refused write stored g1`);
    const kept = await raw(base, "GET", `${prefix}/_api/document/guards/g0${where}`);
    assert.equal(kept.json.a, undefined, `${where}: a refused replace changed the document`);
  }
});

test("a key the edge makes never lands on a document that exists, whatever the overwrite mode, as on the server", async () => {
  assert.equal((await onServer("POST", "/_api/collection", { name: "made" })).status, 200);
  const first = await call("POST", "/_api/document/made?waitForSync=true", { v: "edge" });
  assert.equal(first.status, 201, JSON.stringify(first.json));
  // Documents another client wrote, under the keys the edge makes next.
  const taken = [];
  for (let i = 1; i <= 8; i++) {
    const key = String(Number(first.json._key) + i);
    const put = await onServer("POST", "/_api/document/made", { _key: key, v: "server" });
    assert.ok(put.status === 201 || put.status === 202, JSON.stringify(put.json));
    taken.push(key);
  }
  await eventually(async () => (await call("GET", `/_api/document/made/${taken.at(-1)}`)).json?.v === "server", FRESH_BOUND_MS, "the taken keys at the edge");
  for (const mode of ["replace", "update", "ignore", "conflict"]) {
    for (const [what, text] of [["one", '{"v":"made"}'], ["an array", '[{"v":"made"},{"_key":"given' + mode + '","v":"given"}]']]) {
      const res = await fetch(`${worker.base}/_api/document/made?overwriteMode=${mode}`, { method: "POST", body: text, headers: { "content-type": "application/json" }, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      const body = await res.json();
      const made = Array.isArray(body) ? body[0] : body;
      if (made.error) {
        assert.equal(made.errorNum, 1210, `${mode}, ${what}: ${JSON.stringify(body)}`);
      } else {
        assert.ok(!taken.includes(made._key), `${mode}, ${what}: the key the edge made landed on ${made._id}: ${JSON.stringify(body)}`);
      }
      if (Array.isArray(body)) assert.equal(body[1]._key, `given${mode}`, `${mode}: the given key: ${JSON.stringify(body)}`);
    }
  }
  for (const key of taken) {
    assert.equal((await call("GET", `/_api/document/made/${key}`)).json?.v, "server", `made/${key} at the edge`);
  }
  await new Promise((ok) => setTimeout(ok, FRESH_BOUND_MS));
  for (const key of taken) {
    assert.equal((await onServer("GET", `/_api/document/made/${key}`)).json?.v, "server", `made/${key} on the server`);
  }
});

test("the official arangojs client (pinned) against the edge", async () => {
  const db = new Database({ url: worker.base, databaseName: DB });
  const orders = db.collection("orders");
  const a = await orders.save({ item: "pen" }, { returnNew: true });
  assert.match(a._id, ID);
  fresh(a._id);
  assert.equal(a.new.item, "pen");
  assert.deepEqual(await orders.document(a._key), a.new);
  assert.equal(await orders.documentExists(a._key), true);
  assert.equal(await orders.documentExists("nope"), false);
  const u = await orders.update(a._key, { qty: 3 }, { returnNew: true, returnOld: true });
  assert.deepEqual([u.old.qty, u.new.qty, u.new.item], [undefined, 3, "pen"]);
  const r = await orders.replace(a._key, { item: "ink" }, { returnNew: true });
  assert.equal(r.new.qty, undefined);
  await assert.rejects(orders.replace(a._key, { item: "x" }, { ifMatch: u._rev }), (err) => err.errorNum === 1200 && err.code === 412);
  await assert.rejects(orders.document("missing"), (err) => err.errorNum === 1202 && err.code === 404);
  const many = await orders.saveAll([{ n: 1 }, { n: 2 }, { _key: a._key }]);
  fresh(many[0]._id);
  fresh(many[1]._id);
  assert.equal(many[2].errorNum, 1210);
  const got = await orders.documents([many[0]._key, many[1]._key]);
  assert.deepEqual(got.map((d) => d.n), [1, 2]);
  await orders.removeAll([many[0]._key, many[1]._key]);
  await orders.remove(a._key);
  for (const d of [a, many[0], many[1]]) removed.add(d._id);
  assert.equal(await orders.documentExists(a._key), false);
  // All of it reached the server, through its own ArangoDB door.
  await eventually(async () => (await onServer("GET", `/_api/document/orders/${a._key}`)).status === 404, 5_000, "the removal on the server");
});

test("100 concurrent writes get distinct ids, and reads among them see each write", async () => {
  const made = await Promise.all(
    Array.from({ length: 100 }, (_, i) =>
      call("POST", i % 2 ? "/_api/document/orders?returnNew=true" : "/docs/orders?waitForSync=false", { i }),
    ),
  );
  for (const res of made) {
    assert.ok(res.status === 201 || res.status === 202, JSON.stringify(res.json));
    fresh(res.json._id);
  }
  const reads = await Promise.all(made.map((res) => call("GET", `/docs/${res.json._id}`)));
  for (const [i, r] of reads.entries()) {
    assert.equal(r.status, 200);
    assert.equal(r.json.i, made[i].json.i ?? made[i].json.new.i);
  }
});

test("keys follow the collection's keyOptions defined on the server", async () => {
  const made = await onServer("POST", "/_api/collection", { name: "tickets", keyOptions: { type: "autoincrement", increment: 10, offset: 5 } });
  assert.equal(made.status, 200, JSON.stringify(made.json));
  const sealed = await onServer("POST", "/_api/collection", { name: "sealed", keyOptions: { type: "padded", allowUserKeys: false } });
  assert.equal(sealed.status, 200, JSON.stringify(sealed.json));
  const keys = [];
  for (let i = 0; i < 3; i++) {
    const res = await call("POST", "/_api/document/tickets", { i });
    assert.ok(res.status === 201 || res.status === 202, JSON.stringify(res.json));
    keys.push(res.json._key);
  }
  for (const k of keys) {
    assert.match(k, /^\d+$/);
    assert.equal((Number(k) - 5) % 10, 0, `autoincrement key ${k}: offset 5, increment 10`);
  }
  assert.equal(new Set(keys).size, 3);
  const padded = await call("POST", "/_api/document/sealed", { a: 1 });
  assert.match(padded.json._key, /^[0-9a-f]{16}$/);
  arangoError(await call("POST", "/_api/document/sealed", { _key: "mine" }), 400, 1222);
});

test("fresh reads: a change made by another client of the server is visible at the edge within the bound", async () => {
  for (let i = 0; i < 3; i++) {
    const key = `fresh${i}`;
    const t0 = Date.now();
    const made = await onServer("POST", "/_api/document/orders", { _key: key, v: i });
    assert.equal(made.status, 201, JSON.stringify(made.json));
    await eventually(async () => (await call("GET", `/_api/document/orders/${key}`)).status === 200, FRESH_BOUND_MS, `${key} at the edge`);
    const ms = Date.now() - t0;
    assert.ok(ms <= FRESH_BOUND_MS, `visible after ${ms} ms`);
    // And a change to it.
    await onServer("PATCH", `/_api/document/orders/${key}`, { v: i + 100 });
    await eventually(async () => (await call("GET", `/_api/document/orders/${key}`)).json?.v === i + 100, FRESH_BOUND_MS, `${key}'s update at the edge`);
  }
});

// pushRaw sends one push over a bare websocket to the sync server and
// returns its results.
async function pushRaw(changes) {
  const { WebSocket } = await import("ws");
  const ws = new WebSocket(server.ws);
  const replies = [];
  const next = () => new Promise((ok, fail) => {
    if (replies.length) return ok(replies.shift());
    ws.once("message", (m) => ok(JSON.parse(String(m))));
    ws.once("error", fail);
  });
  await new Promise((ok, fail) => { ws.once("open", ok); ws.once("error", fail); });
  try {
    ws.send(JSON.stringify({ id: 1, op: "hello", db: DB, node: "" }));
    assert.equal((await next()).ok, true);
    ws.send(JSON.stringify({ id: 2, op: "push", changes }));
    const reply = await next();
    assert.equal(reply.ok, true, JSON.stringify(reply));
    return reply.results;
  } finally {
    ws.close();
  }
}

test("a pushed rev the edge could not order (zz1-Q) is refused; a hilodb revision is visible at the edge within the bound", async () => {
  const meta = { "@metadata": { "@collection": "orders" } };
  const [refused] = await pushRaw([{ id: "orders/zrev", baseRev: "", rev: "zz1-Q", doc: { v: 1, ...meta } }]);
  assert.equal(refused.ok, false, JSON.stringify(refused));
  assert.equal(refused.error.code, "bad_document");
  const t0 = Date.now();
  const [accepted] = await pushRaw([{ id: "orders/zrev", baseRev: "", rev: "_mAAAAAAAB-Q", doc: { v: 2, ...meta } }]);
  assert.equal(accepted.ok, true, JSON.stringify(accepted));
  await eventually(async () => (await call("GET", "/_api/document/orders/zrev")).json?.v === 2, FRESH_BOUND_MS, "orders/zrev at the edge");
  assert.ok(Date.now() - t0 <= FRESH_BOUND_MS + 500, `visible after ${Date.now() - t0} ms`);
});

test("fresh reads: a change made through the npm package (the browser store) is visible at the edge within the bound, and the edge's reach it", async () => {
  const store = await openStore({ url: server.ws, database: DB, sync: true });
  try {
    for (let i = 0; i < 3; i++) {
      const key = `tab${i}`;
      await store.collection("notes").save({ _key: key, from: "a browser store" });
      await store.sync(); // the server has it now
      const t0 = Date.now();
      await eventually(async () => (await call("GET", `/_api/document/notes/${key}`)).status === 200, FRESH_BOUND_MS, `${key} at the edge`);
      assert.ok(Date.now() - t0 <= FRESH_BOUND_MS);
    }
    const made = await call("POST", "/_api/document/notes", { _key: "fromEdge", from: "the edge" });
    assert.equal(made.status, 202, JSON.stringify(made.json));
    await eventually(async () => (await store.get("notes/fromEdge").catch(() => null))?.from === "the edge", 5_000, "the edge's write in the store");
  } finally {
    await store.close();
  }
});

test("the replica survives workerd killed with SIGKILL: documents, node tag and ranges", async () => {
  const before = [];
  for (let i = 0; i < 5; i++) {
    const res = await call("POST", "/_api/document/orders?returnNew=true", { k: i });
    assert.ok(res.status === 201 || res.status === 202, JSON.stringify(res.json));
    fresh(res.json._id);
    before.push(res.json.new);
  }
  const status = (await call("GET", "/_edge/status")).json;
  await stop(worker, "SIGKILL");
  worker = await startWorker({ replicas, env: { HILODB_URL: server.ws, HILODB_DB: DB } });
  for (const doc of before) {
    const r = await call("GET", `/_api/document/orders/${doc._key}`);
    assert.equal(r.status, 200, `${doc._id} after the restart: ${JSON.stringify(r.json)}`);
    assert.deepEqual(r.json, doc);
  }
  const after = (await call("GET", "/_edge/status")).json;
  assert.equal(after.node, status.node, "the node tag is kept");
  // The kept range goes on where the journal says: above every id given.
  const top = Math.max(...[...ids].filter((id) => ID.test(id)).map(idNumber));
  const next = await call("POST", "/_api/document/orders", { after: "restart" });
  fresh(next.json._id);
  assert.ok(idNumber(next.json._id) > top, `${next.json._id} after ids up to ${top}`);
});

test("large documents: appends split into chunks, the log compacted into a snapshot, all kept through SIGKILL", async () => {
  // 200 KB documents pass the 120 KiB a storage value may hold, and 12 of
  // them pass the 1 MiB log at which the journal compacts.
  const big = [];
  assert.equal((await onServer("POST", "/_api/collection", { name: "blobs", keyOptions: { type: "hilo" } })).status, 200);
  for (let i = 0; i < 12; i++) {
    const res = await call("POST", "/_api/document/blobs?returnNew=true", { i, pad: String(i).repeat(200_000) });
    assert.ok(res.status === 201 || res.status === 202, JSON.stringify(res.json).slice(0, 300));
    fresh(res.json._id);
    big.push(res.json.new);
  }
  await stop(worker, "SIGKILL");
  worker = await startWorker({ replicas, env: { HILODB_URL: server.ws, HILODB_DB: DB } });
  for (const doc of big) {
    const r = await call("GET", `/_api/document/blobs/${doc._key}`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, doc);
  }
});

test("writable offline: the sync server stopped, writes are kept and pushed when it is back", async () => {
  // Writes not waited for are pushed within moments (pushDelay): let them.
  await eventually(async () => (await call("GET", "/_edge/status")).json.pending === 0, 5_000, "nothing pending");
  await stop(server);
  const offline = [];
  for (let i = 0; i < 10; i++) {
    const res = await call("POST", "/_api/document/orders", { offline: i });
    assert.equal(res.status, 202, JSON.stringify(res.json));
    assert.equal(res.headers.get("x-hilodb-sync"), "pending", "answered as stored locally");
    fresh(res.json._id);
    offline.push(res.json);
  }
  // A collection the edge does not know cannot be looked for: said so,
  // nothing stored.
  arangoError(await call("POST", "/_api/document/unheard", { offline: true }), 503, 1900);
  const short = await call("POST", "/docs/orders", { offline: "short" });
  assert.equal(short.status, 202, JSON.stringify(short.json));
  assert.equal(short.headers.get("x-hilodb-sync"), "pending");
  fresh(short.json._id);
  offline.push(short.json);
  // Reads go on, saying they could not be freshened.
  await eventually(async () => !(await call("GET", "/_edge/status")).json.following, 5_000, "the replica notices");
  const r = await call("GET", `/_api/document/orders/${offline[0]._key}`);
  assert.equal(r.status, 200);
  assert.equal(r.headers.get("x-hilodb-fresh"), "stale");
  assert.equal((await call("GET", "/_edge/status")).json.pending, 11);

  // Killed while the writes are pending: they were acknowledged, so they
  // are durable, and the object's alarm pushes them once the server is back
  // without a request to wake it.
  await stop(worker, "SIGKILL");
  worker = await startWorker({ replicas, env: { HILODB_URL: server.ws, HILODB_DB: DB } });
  server = await startServer(serverBin, serverPort, dataDir);
  for (const doc of offline) {
    await eventually(async () => (await onServer("GET", `/_api/document/orders/${doc._key}`)).status === 200, 15_000, `${doc._id} on the server`);
  }
  assert.equal((await call("GET", "/_edge/status")).json.pending, 0);
  const again = await call("POST", "/docs/orders", { online: true });
  assert.equal(again.status, 201, JSON.stringify(again.json));
  fresh(again.json._id);
});

test("an offline write over a document the server changed meanwhile is reconciled by _rev: the server's version wins", async () => {
  const made = await call("POST", "/_api/document/orders?waitForSync=true", { _key: "contested", v: "first" });
  assert.equal(made.status, 201, JSON.stringify(made.json));
  await stop(server);
  const local = await call("PATCH", "/_api/document/orders/contested", { v: "edge" });
  assert.equal(local.status, 202, JSON.stringify(local.json));
  assert.equal((await call("GET", "/_api/document/orders/contested")).json.v, "edge");
  // The edge is down while the server takes another client's change.
  await stop(worker, "SIGKILL");
  server = await startServer(serverBin, serverPort, dataDir);
  const theirs = await onServer("PATCH", "/_api/document/orders/contested", { v: "server" });
  assert.equal(theirs.status, 201, JSON.stringify(theirs.json));
  worker = await startWorker({ replicas, env: { HILODB_URL: server.ws, HILODB_DB: DB } });
  // The alarm pushes the edge's write; the server refuses it (its base _rev
  // is not the server's), and the server's version is kept on both sides.
  await eventually(async () => (await call("GET", "/_edge/status")).json.pending === 0, 15_000, "the write settled");
  const atEdge = await call("GET", "/_api/document/orders/contested");
  assert.equal(atEdge.json.v, "server");
  assert.equal(atEdge.json._rev, theirs.json._rev);
  assert.equal((await onServer("GET", "/_api/document/orders/contested")).json.v, "server");
});

test("no id was given twice, and the server has every document the edge made", async () => {
  // fresh() failed any answer that repeated an id; here the server is asked
  // for all of them (some were removed since).
  const byCollection = {};
  for (const id of ids) {
    const [c, k] = id.split("/");
    (byCollection[c] ??= []).push(k);
  }
  let found = 0;
  for (const [c, keys] of Object.entries(byCollection)) {
    const res = await onServer("PUT", `/_api/document/${c}?onlyget=true`, keys);
    assert.equal(res.status, 200);
    found += res.json.filter((d) => !d.error).length;
  }
  assert.ok(ids.size >= 40, `${ids.size} ids`);
  assert.equal(found, ids.size - removed.size, "every document but those removed is on the server");
});

test("with HILODB_EDGE_TOKEN set, a request needs it as a bearer token", async () => {
  const dir = join(tmp, "replicas-token");
  await mkdir(dir);
  const guarded = await startWorker({ replicas: dir, env: { HILODB_URL: server.ws, HILODB_DB: DB, HILODB_EDGE_TOKEN: "s3cret" } });
  try {
    const as = (headers) => call("GET", "/_api/document/orders/none", undefined, { base: guarded.base, headers });
    arangoError(await as({}), 401, 401);
    arangoError(await as({ authorization: "Bearer wrong" }), 401, 401);
    arangoError(await as({ authorization: "Bearer s3cret" }), 404, 1202);
  } finally {
    await stop(guarded);
  }
});

test("wrangler deploy --dry-run accepts wrangler.toml and the bundle is at most 2.0 MB gzipped", async () => {
  const out = await run("npx", ["wrangler", "deploy", "--dry-run", "--outdir", join(tmp, "dry-run")], {
    cwd: edgeDir,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1" },
    timeout: 120_000,
  });
  const m = /gzip: ([\d.]+) KiB/.exec(out);
  assert.ok(m, `wrangler reports the size:\n${out}`);
  const kib = Number(m[1]);
  assert.ok(kib <= 2000 * 1000 / 1024, `gzip ${kib} KiB`);
  assert.match(out, /env\.REPLICA \(Replica\)\s+Durable Object/);
});
