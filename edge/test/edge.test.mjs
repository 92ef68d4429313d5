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

const edgeDir = dirname(dirname(fileURLToPath(import.meta.url)));
const repoDir = dirname(edgeDir);
const require = createRequire(import.meta.url);

const BUILD_TIMEOUT_MS = 240_000; // cold Go build caches on 2 cores
const START_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 5_000;
const REQUEST_TIMEOUT_MS = 15_000;

const ID = /^orders\/(\d+)-A$/;

let tmp;
let syncServer; // { child, url, output }
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
    const serverBin = join(tmp, "hilodb-server");
    await run("go", ["build", "-o", serverBin, "./cmd/hilodb-server"], { cwd: repoDir, timeout: BUILD_TIMEOUT_MS });
    assert.ok(existsSync(join(edgeDir, "build", "app.wasm")), "build.sh made build/app.wasm");

    syncServer = await start(
      serverBin,
      ["-addr", "127.0.0.1:0", "-data", join(tmp, "data"), "-node-tag", "A"],
      { cwd: tmp },
      (output) => {
        const m = /addr=http:\/\/(127\.0\.0\.1:\d+)/.exec(output);
        return m && { url: `ws://${m[1]}/v1/sync`, http: `http://${m[1]}` };
      },
    );

    const env = { ...process.env, HILODB_URL: syncServer.url, HILODB_DB: "edgetest" };
    delete env.HILODB_TOKEN;
    worker = await start(
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
  },
  { timeout: 2 * BUILD_TIMEOUT_MS + 2 * START_TIMEOUT_MS },
);

after(
  async () => {
    await stop(worker);
    await stop(syncServer);
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

function assertError(res, status, code, errorNum) {
  assert.equal(res.status, status, JSON.stringify(res.json));
  assert.equal(res.json.error, true);
  assert.equal(res.json.code, code);
  assert.equal(res.json.errorNum, errorNum);
  assert.equal(typeof res.json.errorMessage, "string");
  assert.ok(res.json.errorMessage.length > 0, "errorMessage is not empty");
}

let first; // the document stored by the first test

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
});

test("GET /docs/{id} returns the stored document", async () => {
  assert.ok(first, "the POST test stored a document");
  const res = await call("GET", `/docs/${first._id}`);
  assert.equal(res.status, 200, JSON.stringify(res.json));
  assert.deepEqual(res.json, first);
});

test("two POSTs in a row get consecutive ids from one resident range", async () => {
  const a = await postOrder({ n: 1 });
  const b = await postOrder({ n: 2 });
  assert.equal(idNumber(b._id), idNumber(a._id) + 1, `${a._id} then ${b._id}`);
  assert.deepEqual([a._id, b._id], ["orders/2-A", "orders/3-A"]);
  assert.notEqual(a._rev, b._rev);
  // The first document is still in the resident store.
  assert.deepEqual((await call("GET", `/docs/${first._id}`)).json, first);
});

test("50 concurrent POSTs all get distinct ids", async () => {
  const docs = await Promise.all(Array.from({ length: 50 }, (_, i) => postOrder({ i })));
  const ids = new Set(docs.map((d) => d._id));
  assert.equal(ids.size, 50, `distinct ids: ${[...ids].join(" ")}`);
  for (const d of docs) {
    idNumber(d._id);
  }
  // Each one was stored under its id.
  for (const d of docs.filter((_, i) => i % 10 === 0)) {
    assert.deepEqual((await call("GET", `/docs/${d._id}`)).json, d);
  }
});

test("the sync server leased a few ranges, not one per document", async () => {
  // 53 documents so far; ranges hold 32 ids and more.
  const res = await fetch(`${syncServer.http}/metrics`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  assert.equal(res.status, 200);
  const m = /^hilodb_ranges_leased_total (\d+)$/m.exec(await res.text());
  assert.ok(m, "the sync server reports hilodb_ranges_leased_total");
  const leased = Number(m[1]);
  assert.ok(leased >= 2 && leased <= 3, `ranges leased for 53 documents: ${leased}`);
});

test("100 concurrent POSTs to a new collection outrun its first ranges and still all get ids", async () => {
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
});

test("GET of an unknown id is 404 with errorNum 1202", async () => {
  assertError(await call("GET", "/docs/orders/no-such-key"), 404, "not_found", 1202);
});

test("a malformed JSON body is 400 with errorNum 600", async () => {
  assertError(await call("POST", "/docs/orders", '{"item": "tea"'), 400, "bad_json", 600);
});

test("an illegal key is 400 with errorNum 1221", async () => {
  assertError(await call("POST", "/docs/orders", JSON.stringify({ _key: "has space" })), 400, "illegal_key", 1221);
});

// Last: it stops the sync server.
test("with the sync server gone, ids come from the leased range until it runs out, then 503", async () => {
  const before = await postOrder({ online: true });
  await stop(syncServer);

  let last = idNumber(before._id);
  let offline = 0;
  let failure;
  for (let i = 0; i < 2000; i++) {
    const res = await call("POST", "/docs/orders", JSON.stringify({ offline: i }));
    if (res.status !== 201) {
      failure = res;
      break;
    }
    const n = idNumber(res.json._id);
    assert.equal(n, last + 1, "offline ids continue the range");
    last = n;
    offline++;
  }
  assert.ok(offline > 0, "at least one POST succeeded without the sync server");
  assert.ok(failure, "the range ran out within 2000 POSTs");
  assertError(failure, 503, "needs_server", 1900);

  // The worker is still serving: reads and writes with an id need no lease.
  assert.deepEqual((await call("GET", `/docs/${before._id}`)).json, before);
  const named = await call("POST", "/docs/orders", JSON.stringify({ _key: "named" }));
  assert.equal(named.status, 201, JSON.stringify(named.json));
  assert.equal(named.json._id, "orders/named");
});
