// End-to-end test of the edge worker in the real workerd runtime.
//
// It builds the worker (build.sh) and the sync server (cmd/hilodb-server),
// starts the sync server on 127.0.0.1 with a temporary data directory,
// starts workerd with config.capnp on 127.0.0.1, and talks HTTP to the
// worker. Both processes are stopped after the tests, failed or not.
//
//   cd edge && npm test
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { buildServer, startServer } from "../../js/test/server.mjs";

const edgeDir = dirname(dirname(fileURLToPath(import.meta.url)));
const require = createRequire(import.meta.url);

const BUILD_TIMEOUT_MS = 240_000; // cold Go build caches on 2 cores
const START_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 5_000;
const REQUEST_TIMEOUT_MS = 15_000;

const ID = /^orders\/(\d+)-A$/;

let tmp;
let syncServer; // js/test/server.mjs's server: { wsURL, base, stop }
let cleanupBin = async () => {};
let worker; // { child, base, output }
const children = new Set();

// A child left running would outlive a crashed test run: kill what is left.
process.on("exit", () => {
  for (const child of children) {
    child.kill("SIGKILL");
  }
});

// run runs a command to completion, failing with its output.
function run(cmd, args, opts) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...opts, stdio: ["ignore", "pipe", "pipe"] });
    children.add(child);
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeout);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      if (code === 0) {
        resolve(output);
      } else {
        reject(new Error(`${cmd} ${args.join(" ")}: exit ${code ?? signal}\n${output}`));
      }
    });
  });
}

// start spawns a long-running process and waits until ready(output, extra)
// returns a value, where extra is what the process wrote to fd 3.
function start(cmd, args, opts, ready) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...opts, stdio: ["ignore", "pipe", "pipe", "pipe"] });
    children.add(child);
    const proc = { child, output: "", control: "", exited: false };
    let settled = false;
    const timer = setTimeout(() => {
      finish(new Error(`${cmd} not ready within ${START_TIMEOUT_MS} ms:\n${proc.output}`));
    }, START_TIMEOUT_MS);
    const finish = (err, value) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) {
        child.kill("SIGKILL");
        reject(err);
      } else {
        resolve(Object.assign(proc, value));
      }
    };
    const check = () => {
      const value = ready(proc.output, proc.control);
      if (value) finish(null, value);
    };
    child.stdout.on("data", (d) => {
      proc.output += d;
      check();
    });
    child.stderr.on("data", (d) => {
      proc.output += d;
      check();
    });
    child.stdio[3].on("data", (d) => {
      proc.control += d;
      check();
    });
    child.on("error", (err) => finish(err));
    child.on("exit", (code, signal) => {
      proc.exited = true;
      children.delete(child);
      finish(new Error(`${cmd} exited (${code ?? signal}) before it was ready:\n${proc.output}`));
    });
  });
}

// stop ends a process started by start: SIGTERM, then SIGKILL if it has not
// exited within STOP_TIMEOUT_MS.
async function stop(proc) {
  if (!proc || proc.exited) return;
  const exited = new Promise((resolve) => proc.child.once("exit", resolve));
  proc.child.kill("SIGTERM");
  const timer = setTimeout(() => proc.child.kill("SIGKILL"), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

function workerdBinary() {
  // The Linux x64 build of workerd, depended on directly: the registry
  // reachable here lacks the other platforms' packages that the "workerd"
  // wrapper lists, so its lock file could not satisfy npm ci.
  return require.resolve("@cloudflare/workerd-linux-64/bin/workerd");
}

before(
  async () => {
    tmp = await mkdtemp(join(tmpdir(), "hilodb-edge-test-"));
    await run("bash", [join(edgeDir, "build.sh")], { cwd: edgeDir, timeout: BUILD_TIMEOUT_MS });
    assert.ok(existsSync(join(edgeDir, "build", "app.wasm")), "build.sh made build/app.wasm");
    const built = await buildServer();
    cleanupBin = built.cleanup;
    syncServer = await startServer(built.bin, ["-node-tag", "A"]);

    worker = await startWorker();
  },
  { timeout: 2 * BUILD_TIMEOUT_MS + 2 * START_TIMEOUT_MS },
);

// startWorker starts workerd with the worker, configured for the sync
// server, and waits until it listens.
function startWorker() {
  const env = { ...process.env, HILODB_URL: syncServer.wsURL, HILODB_DB: "edgetest" };
  delete env.HILODB_TOKEN;
  return start(
    workerdBinary(),
    ["serve", join(edgeDir, "config.capnp"), "--socket-addr", "http=127.0.0.1:0", "--control-fd", "3"],
    { cwd: edgeDir, env },
    (_output, control) => {
      // workerd reports {"event":"listen","socket":"http","port":N} on fd 3.
      for (const line of control.split("\n")) {
        if (!line.trim()) continue;
        const msg = JSON.parse(line);
        if (msg.event === "listen" && msg.socket === "http") {
          return { base: `http://127.0.0.1:${msg.port}` };
        }
      }
      return null;
    },
  );
}

after(
  async () => {
    await stop(worker);
    await syncServer?.stop();
    await cleanupBin();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  },
  { timeout: 3 * STOP_TIMEOUT_MS },
);

// call sends one request to the worker and returns status, headers and the
// parsed JSON body.
async function call(method, path, body) {
  const res = await fetch(worker.base + path, {
    method,
    body,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    assert.fail(`${method} ${path}: ${res.status} with a body that is not JSON: ${text}\nworkerd output:\n${tail(worker.output)}`);
  }
  return { status: res.status, headers: res.headers, json };
}

// tail returns the end of a process's output for a failure message.
function tail(output, lines = 40) {
  return output.split("\n").slice(-lines).join("\n");
}

// metric returns a counter from the sync server's /metrics.
async function metric(name) {
  const res = await fetch(`${syncServer.base}/metrics`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  assert.equal(res.status, 200);
  const m = new RegExp(`^${name} (\\d+)$`, "m").exec(await res.text());
  assert.ok(m, `the sync server reports ${name}`);
  return Number(m[1]);
}

async function postOrder(fields) {
  const res = await call("POST", "/docs/orders", JSON.stringify(fields));
  assert.equal(res.status, 201, `POST /docs/orders: ${JSON.stringify(res.json)}`);
  return res.json;
}

// idNumber returns N of orders/N-A.
function idNumber(id) {
  const m = ID.exec(id);
  assert.ok(m, `id ${id} has the form orders/N-A`);
  return Number(m[1]);
}

// assertCleanLog fails if workerd reported I/O across requests or a
// request it cancelled as hung: the failures the per-request turns and the
// deadline timer exist to prevent (README).
function assertCleanLog(proc) {
  for (const bad of ["on behalf of a different request", "would never generate a response", "can never settle"]) {
    assert.ok(!proc.output.includes(bad), `workerd reported "${bad}":\n${tail(proc.output)}`);
  }
}

function assertError(res, status, code, errorNum) {
  assert.equal(res.status, status, JSON.stringify(res.json));
  assert.equal(res.json.error, true);
  assert.equal(res.json.code, code);
  assert.equal(res.json.errorNum, errorNum);
  assert.equal(typeof res.json.errorMessage, "string");
  assert.ok(res.json.errorMessage.length > 0, "errorMessage is not empty");
}

let first; // the document stored by the first test
const stored = []; // every document stored while the sync server is up

test("POST /docs/orders stores the body with a HiLo id", async () => {
  const res = await call("POST", "/docs/orders", JSON.stringify({ item: "tea", qty: 2 }));
  assert.equal(res.status, 201, JSON.stringify(res.json));
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  const doc = res.json;
  assert.match(doc._id, ID);
  // A fresh database: the first range starts at 1.
  assert.equal(doc._id, "orders/1-A");
  assert.equal(doc._key, doc._id.slice("orders/".length));
  assert.equal(typeof doc._rev, "string");
  assert.ok(doc._rev.length > 0, "_rev is set");
  assert.equal(doc.item, "tea");
  assert.equal(doc.qty, 2);
  assert.equal(res.headers.get("location"), `/docs/${doc._id}`);
  first = doc;
  stored.push(doc);
});

test("GET /docs/{id} returns the stored document from the cache", async () => {
  assert.ok(first, "the POST test stored a document");
  const res = await call("GET", `/docs/${first._id}`);
  assert.equal(res.status, 200, JSON.stringify(res.json));
  assert.equal(res.headers.get("x-hilodb-cache"), "hit");
  assert.deepEqual(res.json, first);
});

test("two POSTs in a row get consecutive ids from one resident range", async () => {
  const a = await postOrder({ n: 1 });
  const b = await postOrder({ n: 2 });
  assert.equal(idNumber(b._id), idNumber(a._id) + 1, `${a._id} then ${b._id}`);
  assert.deepEqual([a._id, b._id], ["orders/2-A", "orders/3-A"]);
  stored.push(a, b);
  assert.notEqual(a._rev, b._rev);
  // The first document is still in the resident store.
  assert.deepEqual((await call("GET", `/docs/${first._id}`)).json, first);
});

test("50 concurrent POSTs all get distinct ids", async () => {
  const docs = await Promise.all(Array.from({ length: 50 }, (_, i) => postOrder({ i })));
  const ids = new Set(docs.map((d) => d._id));
  assert.equal(ids.size, 50, `distinct ids: ${[...ids].join(" ")}`);
  stored.push(...docs);
  for (const d of docs) {
    idNumber(d._id);
  }
  // Each one was stored under its id.
  for (const d of docs.filter((_, i) => i % 10 === 0)) {
    assert.deepEqual((await call("GET", `/docs/${d._id}`)).json, d);
  }
});

test("the sync server has every document and leased a few ranges, not one per document", async () => {
  // 53 documents so far; ranges hold 32 ids and more. Each document was
  // pushed on its own, within its request.
  const leased = await metric("hilodb_ranges_leased_total");
  assert.ok(leased >= 2 && leased <= 3, `ranges leased for 53 documents: ${leased}`);
  assert.equal(await metric("hilodb_docs_pushed_total"), 53);
  // The isolate was given one node tag, however many connections it made.
  assert.equal(await metric("hilodb_nodes_assigned_total"), 1);
});

test("100 concurrent POSTs to a new collection outrun its first ranges and still all get ids", async () => {
  const pushedBefore = await metric("hilodb_docs_pushed_total");
  // The first request leases; the others wait on that lease and wake up in
  // its turn, and those that find the new range spent lease again. Each lease
  // must run in the turn of a request that waits for it.
  const results = await Promise.all(
    Array.from({ length: 100 }, (_, i) => call("POST", "/docs/invoices", JSON.stringify({ i }))),
  );
  const failed = results.filter((r) => r.status !== 201);
  assert.equal(failed.length, 0, `failed: ${JSON.stringify(failed.slice(0, 3).map((r) => r.json))}`);
  const numbers = results.map((r) => {
    const m = /^invoices\/(\d+)-A$/.exec(r.json._id);
    assert.ok(m, `id ${r.json._id} has the form invoices/N-A`);
    return Number(m[1]);
  });
  assert.equal(new Set(numbers).size, 100, "distinct ids");
  assert.ok(Math.max(...numbers) > 32, "more than the first range was used");
  assert.equal(await metric("hilodb_docs_pushed_total"), pushedBefore + 100, "every one is on the sync server");
});

test("GET of an unknown id is read through and is 404 with errorNum 1202", async () => {
  const res = await call("GET", "/docs/orders/no-such-key");
  assertError(res, 404, "not_found", 1202);
  assert.equal(res.headers.get("x-hilodb-cache"), "miss");
});

test("a malformed JSON body is 400 with errorNum 600", async () => {
  assertError(await call("POST", "/docs/orders", '{"item": "tea"'), 400, "bad_json", 600);
});

test("an illegal key is 400 with errorNum 1221", async () => {
  assertError(await call("POST", "/docs/orders", JSON.stringify({ _key: "has space" })), 400, "illegal_key", 1221);
});

test("a new workerd reads the documents through from the sync server, then has them cached", async () => {
  // A new process, so a new isolate with an empty cache: what it serves can
  // only come from the sync server.
  assertCleanLog(worker);
  await stop(worker);
  worker = await startWorker();

  const miss = await call("GET", `/docs/${first._id}`);
  assert.equal(miss.status, 200, JSON.stringify(miss.json));
  assert.equal(miss.headers.get("x-hilodb-cache"), "miss");
  assert.deepEqual(miss.json, first);
  const hit = await call("GET", `/docs/${first._id}`);
  assert.equal(hit.status, 200, JSON.stringify(hit.json));
  assert.equal(hit.headers.get("x-hilodb-cache"), "hit");
  assert.deepEqual(hit.json, first);

  // Every document written through the first workerd, the 50 concurrent
  // ones among them, read concurrently.
  assert.equal(stored.length, 53);
  const reads = await Promise.all(stored.map((d) => call("GET", `/docs/${d._id}`)));
  reads.forEach((res, i) => {
    assert.equal(res.status, 200, `${stored[i]._id}: ${JSON.stringify(res.json)}`);
    assert.deepEqual(res.json, stored[i]);
  });
  assert.equal(await metric("hilodb_docs_pushed_total"), 153, "reads push nothing");

  // The new isolate leases a range of its own for new ids.
  const next = await postOrder({ after: "restart" });
  assert.ok(idNumber(next._id) > Math.max(...stored.map((d) => idNumber(d._id))), `${next._id} is a new number`);
});

// Last: it stops the sync server.
test("with the sync server gone, writes are refused with 503 while cached documents are still served", async () => {
  const before = await postOrder({ online: true });
  await syncServer.stop();

  // The range is still resident, but a write cannot be made durable: no 201.
  for (const body of [{ offline: 1 }, { offline: 2 }, { _key: "named" }]) {
    const res = await call("POST", "/docs/orders", JSON.stringify(body));
    assertError(res, 503, "needs_server", 1900);
  }

  // The worker is still serving: cached documents are answered, misses
  // cannot be. The refused writes were not kept: the first of them took the
  // number after before's, and its id is a miss.
  const cached = await call("GET", `/docs/${before._id}`);
  assert.equal(cached.status, 200, JSON.stringify(cached.json));
  assert.equal(cached.headers.get("x-hilodb-cache"), "hit");
  assert.deepEqual(cached.json, before);
  for (const id of ["orders/named", `orders/${idNumber(before._id) + 1}-A`]) {
    const res = await call("GET", `/docs/${id}`);
    assertError(res, 503, "needs_server", 1900);
    assert.equal(res.headers.get("x-hilodb-cache"), "miss");
  }
  assertCleanLog(worker);
});
