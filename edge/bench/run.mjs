// make bench-edge: the edge worker beside a plain JavaScript worker that
// answers fixed JSON, in one workerd, in one run, against the real sync
// server on 127.0.0.1.
//
//   node bench/run.mjs [requests]   (from edge/, after make server edge)
//   node bench/run.mjs cold         the cold start only,
//                                   over a replica of about as many documents
//                                   as the full run leaves in it
//
// Warm requests are sent one at a time over one keep-alive connection:
// a read the replica answers locally, a write with a HiLo id (durable in the
// Durable Object, pushed over the live connection), and the same write
// waiting for the server's acknowledgement. Cold start is workerd's start to
// the first answer, for each worker, over fresh processes, the two workers
// taking turns; the edge's first answer carries a Server-Timing header with
// the object's start, phase by phase (worker.mjs), printed as medians.
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { edgeDir, freePort, run, serverBinary, startServer, startWorker, stop } from "../test/procs.mjs";

const COLD_ONLY = process.argv[2] === "cold";
const N = COLD_ONLY ? 0 : Number(process.argv[2] ?? 2000);
const WARMUP = Math.min(200, N);
const COLD_RUNS = Number(process.env.COLD_RUNS ?? 9);
// SEEDED is how many documents the cold-only run's replica is given: about
// as many as the full run's warm writes leave in it.
const SEEDED = 4500;
const config = join(edgeDir, "bench", "bench.capnp");
// AWAY_MS is how far (each way) the far server of the cold start's last
// row is: a TCP proxy on 127.0.0.1 delays every chunk by it, as a server a
// 50 ms round trip from the edge.
const AWAY_MS = 25;
const DB = "bench";

function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { median: at(0.5), p99: at(0.99), min: s[0], max: s[s.length - 1] };
}

// cpuMs is the CPU time workerd (pid) has used, in ms (/proc, 10 ms ticks).
async function cpuMs(pid) {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) * 10; // utime + stime, at 100 ticks a second
}

async function timed(url, init, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const body = typeof init.body === "function" ? init.body(i) : init.body;
    const t0 = performance.now();
    const res = await fetch(url, { ...init, body });
    await res.arrayBuffer();
    out.push(performance.now() - t0);
    if (res.status >= 300 && res.status !== 304) throw new Error(`${init.method ?? "GET"} ${url}: ${res.status}`);
  }
  return out;
}

async function metric(base, name) {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\d+)$`, "m").exec(text)?.[1]);
}

const fmt = (ms) => ms.toFixed(3);
const loadAverage = async () => (await readFile("/proc/loadavg", "utf8")).split(" ")[0];

// warmRuns times warm requests to the edge and the plain worker in
// interleaved rounds and returns the lines of its table.
async function warmRuns({ server, worker, edge, plain, readURL }) {
  const write = { method: "POST", body: (i) => JSON.stringify({ item: "tea", n: i }) };
  await timed(plain, {}, WARMUP);
  await timed(readURL, {}, WARMUP);
  await timed(`${edge}/_api/document/orders`, write, WARMUP);
  const dialsBefore = await metric(server.http, "hilodb_connections_total");

  // Interleaved in rounds, so drift in the machine's load hits all alike.
  const rounds = 10;
  const per = Math.ceil(N / rounds);
  const r = { plain: [], read: [], write: [], plainW: [], sync: [] };
  const cpu = { plain: 0, read: 0, write: 0, plainW: 0, sync: 0 };
  const pid = worker.child.pid;
  const phase = async (kind, url, init, n) => {
    const c0 = await cpuMs(pid);
    r[kind].push(...(await timed(url, init, n)));
    // The replica's work for these writes (pushes, acknowledgements)
    // may finish after the last answer: let it, then count.
    if (kind === "write") await new Promise((ok) => setTimeout(ok, 50));
    cpu[kind] += (await cpuMs(pid)) - c0;
  };
  for (let i = 0; i < rounds; i++) {
    await phase("plain", plain, {}, per);
    await phase("read", readURL, {}, per);
    await phase("plainW", plain, write, per);
    await phase("write", `${edge}/_api/document/orders`, write, per);
    await phase("sync", `${edge}/_api/document/orders?waitForSync=true`, write, Math.ceil(per / 4));
  }
  const cpuPer = (kind) => (cpu[kind] / r[kind].length).toFixed(3);
  const dials = (await metric(server.http, "hilodb_connections_total")) - dialsBefore;
  // The writes answered 202 set the object's alarm (worker.mjs, ALARM_MS):
  // let it come and go, or every cold start below would begin with it, the
  // object started by the alarm beside the request timed.
  await new Promise((ok) => setTimeout(ok, 2_500));
  const p = stats(r.plain);
  const rd = stats(r.read);
  const pw = stats(r.plainW);
  const wr = stats(r.write);
  const sy = stats(r.sync);
  return [
    `edge benchmark: ${N} warm requests of each kind (${Math.ceil(N / 40) * 10} with waitForSync), one at a time; load average ${await loadAverage()}`,
    "",
    "| request | median ms | p99 ms | median ratio to plain | workerd CPU ms per request |",
    "|---|---|---|---|---|",
    `| plain worker, GET fixed JSON | ${fmt(p.median)} | ${fmt(p.p99)} | 1.00 | ${cpuPer("plain")} |`,
    `| edge, GET a document (local read) | ${fmt(rd.median)} | ${fmt(rd.p99)} | ${(rd.median / p.median).toFixed(2)} | ${cpuPer("read")} |`,
    `| plain worker, POST (body ignored) | ${fmt(pw.median)} | ${fmt(pw.p99)} | 1.00 | ${cpuPer("plainW")} |`,
    `| edge, POST a document (HiLo id, durable in the object) | ${fmt(wr.median)} | ${fmt(wr.p99)} | ${(wr.median / pw.median).toFixed(2)} | ${cpuPer("write")} |`,
    `| edge, POST ?waitForSync=true (acknowledged by the server) | ${fmt(sy.median)} | ${fmt(sy.p99)} | ${(sy.median / pw.median).toFixed(2)} | ${cpuPer("sync")} |`,
    "",
    `websocket connections the server accepted during the warm requests: ${dials}`,
    "",
  ];
}

// seed gives the cold-only run's replica SEEDED documents, made on the
// server and pulled by the edge.
async function seed({ server, edge }) {
  const docs = Array.from({ length: SEEDED }, (_, i) => ({ _key: `seed-${i}`, item: "tea", n: i }));
  const res = await fetch(`${server.http}/_db/${DB}/_api/document/orders`, { method: "POST", body: JSON.stringify(docs) });
  await res.arrayBuffer();
  if (res.status >= 300) throw new Error(`seed the server: ${res.status}`);
  const deadline = performance.now() + 30_000;
  for (;;) {
    const r = await fetch(`${edge}/_api/document/orders/seed-${SEEDED - 1}`);
    await r.arrayBuffer();
    if (r.status === 200) break;
    if (performance.now() > deadline) throw new Error("the edge did not pull the seeded documents within 30 s");
    await new Promise((ok) => setTimeout(ok, 50));
  }
  return [`edge benchmark, cold start only: a replica of ${SEEDED + 1} documents`, ""];
}

// serverTiming parses a Server-Timing header into {name: ms}.
function serverTiming(header) {
  const out = {};
  for (const part of (header ?? "").split(",")) {
    const m = /^\s*([\w-]+);dur=([\d.]+)/.exec(part);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

// delayProxy forwards connections on 127.0.0.1 to port, each chunk
// delayed by ms in each direction; it returns its port and a closer.
async function delayProxy(port, ms) {
  const srv = createServer((c) => {
    const u = connect(port, "127.0.0.1");
    const pipe = (from, to) => from.on("data", (d) => setTimeout(() => to.write(d), ms));
    pipe(c, u);
    pipe(u, c);
    const end = () => (c.destroy(), u.destroy());
    for (const s of [c, u]) s.on("close", end).on("error", end);
  });
  await new Promise((ok) => srv.listen(0, "127.0.0.1", ok));
  return { port: srv.address().port, close: () => new Promise((ok) => srv.close(ok)) };
}

// coldRuns starts workerd afresh COLD_RUNS times for each worker, taking
// turns, and times its start and first answer; for the edge, the first
// answer's phases (Server-Timing) and freshness too, and its first answer
// with the server AWAY_MS away.
async function coldRuns({ server, replicas, env, readPath }) {
  const cold = { edge: [], plain: [], far: [] };
  const proxy = await delayProxy(Number(new URL(server.http).port), AWAY_MS);
  const farEnv = { ...env, HILODB_URL: `ws://127.0.0.1:${proxy.port}/v1/sync` };
  for (let i = 0; i < COLD_RUNS; i++) {
    for (const which of ["edge", "plain", "far"]) {
      const t0 = performance.now();
      const w = await startWorker({ config, replicas, env: which === "far" ? farEnv : env, sockets: ["http", "plain"] });
      const t1 = performance.now();
      const res = await fetch(which === "plain" ? w.urls.plain : w.urls.http + readPath);
      await res.arrayBuffer();
      const t2 = performance.now();
      if (res.status !== 200) throw new Error(`cold ${which}: ${res.status}`);
      cold[which].push({
        start: t1 - t0,
        first: t2 - t1,
        phases: serverTiming(res.headers.get("server-timing")),
        fresh: res.headers.get("x-hilodb-fresh"),
      });
      await stop(w);
    }
  }
  await proxy.close();
  const medianOf = (xs, f) => stats(xs.map(f)).median;
  const spread = (xs, f) => {
    const s = stats(xs.map(f));
    return `${fmt(s.median)} (${s.min.toFixed(1)}-${s.max.toFixed(1)})`;
  };
  const freshness = {};
  for (const c of [...cold.edge, ...cold.far]) freshness[c.fresh] = (freshness[c.fresh] ?? 0) + 1;
  const names = Object.keys(cold.edge[0].phases);
  return [
    `cold start (median of ${COLD_RUNS}, min-max): workerd start to listening, then first answer; load average ${await loadAverage()}`,
    "",
    "| worker | start ms | first answer ms | first answer, ratio to plain |",
    "|---|---|---|---|",
    `| plain | ${fmt(medianOf(cold.plain, (c) => c.start))} | ${spread(cold.plain, (c) => c.first)} | 1.00 |`,
    `| edge (a read of a document the replica holds) | ${fmt(medianOf(cold.edge, (c) => c.start))} | ${spread(cold.edge, (c) => c.first)} | ${(medianOf(cold.edge, (c) => c.first) / medianOf(cold.plain, (c) => c.first)).toFixed(1)} |`,
    `| edge, the server ${AWAY_MS} ms away each way | ${fmt(medianOf(cold.far, (c) => c.start))} | ${spread(cold.far, (c) => c.first)} | ${(medianOf(cold.far, (c) => c.first) / medianOf(cold.plain, (c) => c.first)).toFixed(1)} |`,
    "",
    `the edge's first answers: X-Hilodb-Fresh ${Object.entries(freshness).map(([k, n]) => `${k} ${n}`).join(", ")}`,
    "",
    "the edge object's start, by phase (its first answer's Server-Timing, medians):",
    "",
    `| ${names.join(" | ")} |`,
    `|${names.map(() => "---").join("|")}|`,
    `| ${names.map((n) => fmt(medianOf(cold.edge, (c) => c.phases[n] ?? 0))).join(" | ")} |`,
  ];
}

async function main() {
  const tmp = await mkdtemp(join(tmpdir(), "hilodb-bench-edge-"));
  const procs = [];
  try {
    await run("bash", [join(edgeDir, "build.sh")], { cwd: edgeDir });
    const bin = await serverBinary(tmp);
    const server = await startServer(bin, await freePort(), join(tmp, "data"));
    procs.push(server);
    const replicas = join(tmp, "replicas");
    await mkdir(replicas);
    const env = { HILODB_URL: server.ws, HILODB_DB: DB };
    const worker = await startWorker({ config, replicas, env, sockets: ["http", "plain"] });
    procs.push(worker);
    const edge = worker.urls.http;
    const plain = worker.urls.plain;

    // The collection, defined on the server: the edge stores only into a
    // collection that exists there.
    const defined = await fetch(`${server.http}/_db/${DB}/_api/collection`, { method: "POST", body: JSON.stringify({ name: "orders" }) });
    await defined.arrayBuffer();
    if (defined.status !== 200) throw new Error(`define orders on the server: ${defined.status}`);

    // A document to read.
    const made = await fetch(`${edge}/_api/document/orders?waitForSync=true`, {
      method: "POST",
      body: JSON.stringify({ item: "tea", qty: 2 }),
    });
    const { _key: key } = await made.json();
    const readPath = `/_api/document/orders/${key}`;
    const ctx = { server, worker, edge, plain, readURL: edge + readPath, replicas, env, readPath };

    const lines = COLD_ONLY ? await seed(ctx) : await warmRuns(ctx);
    await stop(worker);
    // Cold start: a new workerd, its replica on disk already, to the first
    // answer.
    lines.push(...(await coldRuns(ctx)));
    console.log(lines.join("\n"));
  } finally {
    for (const p of procs.reverse()) await stop(p);
    await rm(tmp, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
