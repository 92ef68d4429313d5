// Failover of the edge worker in the real workerd: HILODB_URL lists an
// unreachable address and three sync servers (A, B, C) over a three-member
// etcd cluster; the server the Durable Object replica uses is killed with
// SIGKILL while requests write through it, and the replica moves on.
//
//   cd edge && npm test      (make test-edge builds the server and the worker first)
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startCluster } from "../../js/test/cluster.mjs";
import { edgeDir, freePort, run, startWorker, stop } from "./procs.mjs";

const DB = "edgefailover";
const REQUEST_TIMEOUT_MS = 20_000;
const WRITERS = 8;
const WRITES_PER_WRITER = 40;

let tmp, cluster, worker;

before(
  async () => {
    tmp = await mkdtemp(join(tmpdir(), "hilodb-edge-failover-"));
    await run("bash", [join(edgeDir, "build.sh")], { cwd: edgeDir });
    cluster = await startCluster({ servers: 3 });
    const replicas = join(tmp, "replicas");
    await mkdir(replicas);
    // Nothing listens on the first address: the replica starts by moving on.
    const dead = `ws://127.0.0.1:${await freePort()}/v1/sync`;
    const urls = [dead, ...cluster.servers.map((s) => s.ws)].join(",");
    worker = await startWorker({ replicas, env: { HILODB_URL: urls, HILODB_DB: DB } });
  },
  { timeout: 600_000 },
);

after(async () => {
  await stop(worker);
  await cluster?.stop();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

async function call(method, base, path, body) {
  const res = await fetch(base + path, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: body === undefined ? {} : { "content-type": "application/json" },
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : null };
}

const atEdge = (method, path, body) => call(method, worker.base, path, body);
const onServer = (server, method, path, body) => call(method, server.http, `/_db/${DB}${path}`, body);
const status = async () => (await atEdge("GET", "/_edge/status")).json;

// eventually polls fn until it returns a truthy value, for at most ms.
async function eventually(fn, ms, what) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) assert.fail(`${what}: not within ${ms} ms\n${worker.output.split("\n").slice(-40).join("\n")}`);
    await new Promise((ok) => setTimeout(ok, 50));
  }
}

test("the replica moves to the next server when the one in use is killed mid-write: every acknowledged write kept, no id twice, If-Match holds", { timeout: 300_000 }, async (t) => {
  // First contact: past the unreachable address, on to A.
  const first = await atEdge("POST", "/docs/orders", { n: "first" });
  assert.equal(first.status, 201, JSON.stringify(first.json));
  assert.equal(first.headers.get("x-hilodb-sync"), "synced");
  let st = await status();
  assert.equal(st.serverTag, "A", JSON.stringify(st));
  const onA = st.server;

  const acked = [first.json]; // every write answered 201 or 202 (durable at the edge)
  const synced = new Set([first.json._id]); // those answered 201: the cluster had them
  let killed = false;
  let afterKill = 0; // writes answered after the kill
  let killedAt = 0;
  let firstSynced = 0; // ms from the kill to the first write the cluster acknowledged after it
  const writer = async (w) => {
    for (let i = 0; i < WRITES_PER_WRITER; i++) {
      // The short form waits for the server (201) or answers 202 after
      // 3 s; the ArangoDB form with waitForSync=false answers at once.
      const res = i % 2
        ? await atEdge("POST", "/docs/orders", { w, i })
        : await atEdge("POST", "/_api/document/orders?waitForSync=false&returnNew=true", { w, i });
      assert.ok(res.status === 201 || res.status === 202, JSON.stringify(res.json));
      const doc = res.json.new ?? res.json;
      acked.push(doc);
      if (res.status === 201 && res.headers.get("x-hilodb-sync") === "synced") {
        synced.add(doc._id);
        if (killed && !firstSynced) firstSynced = Date.now() - killedAt;
      }
      if (killed) afterKill++;
      if (w === 0 && i === 10) {
        await cluster.kill("A");
        killedAt = Date.now();
        killed = true;
      }
    }
  };
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
  assert.ok(afterKill > 0, "writes were answered after the kill");

  // The replica moved on and pushed everything it held.
  await eventually(async () => {
    st = await status();
    return st.pending === 0 && st.connected && st.server !== onA;
  }, 30_000, "the replica on another server with nothing pending");
  assert.ok(st.serverTag === "B" || st.serverTag === "C", JSON.stringify(st));
  t.diagnostic(`${acked.length} writes answered (${synced.size} synced), ${afterKill} after the kill, the first synced one ${firstSynced} ms after it; the replica moved to ${st.serverTag}`);

  // No id twice.
  const ids = acked.map((d) => d._id);
  assert.equal(new Set(ids).size, ids.length, "an id was given twice");
  assert.equal(ids.length, 1 + WRITERS * WRITES_PER_WRITER);

  // Every acknowledged write is on the cluster, read through C with the
  // edge's _rev and body.
  const [, , C] = cluster.servers;
  const keys = acked.map((d) => d._key);
  const got = await onServer(C, "PUT", "/_api/document/orders?onlyget=true", keys);
  assert.equal(got.status, 200, JSON.stringify(got.json));
  const byId = new Map(got.json.filter((d) => !d.error).map((d) => [d._id, d]));
  for (const doc of acked) {
    const there = byId.get(doc._id);
    assert.ok(there, `${doc._id} (${synced.has(doc._id) ? "synced" : "pending"} when answered) is not on the cluster`);
    assert.equal(there._rev, doc._rev, doc._id);
    assert.equal(there.w, doc.w);
    assert.equal(there.i, doc.i);
  }

  // A write after the move gets an id no write before it had.
  const later = await atEdge("POST", "/docs/orders", { n: "later" });
  assert.equal(later.status, 201, JSON.stringify(later.json));
  assert.ok(!ids.includes(later.json._id), later.json._id);

  // If-Match after the move: another client changes a document through C;
  // once the edge has that change, a write on the old _rev is refused and
  // changes nothing.
  const [, B] = cluster.servers;
  const target = acked[1];
  const theirs = await onServer(B, "PATCH", `/_api/document/${target._id}`, { by: "B" });
  assert.equal(theirs.status, 201, JSON.stringify(theirs.json));
  await eventually(async () => (await atEdge("GET", `/_api/document/${target._id}`)).json._rev === theirs.json._rev, 5_000, "B's change at the edge");
  const stale = await fetch(`${worker.base}/_api/document/${target._id}`, {
    method: "PATCH",
    body: JSON.stringify({ by: "edge" }),
    headers: { "content-type": "application/json", "if-match": target._rev },
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  assert.equal(stale.status, 412, await stale.text());
  assert.equal((await onServer(C, "GET", `/_api/document/${target._id}`)).json.by, "B");
  assert.equal((await atEdge("GET", `/_api/document/${target._id}`)).json.by, "B");
});
