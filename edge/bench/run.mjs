// make bench-edge: the edge worker beside a plain JavaScript worker that
// answers fixed JSON, in one workerd, in one run, against the real sync
// server on 127.0.0.1.
//
//   node bench/run.mjs [requests]      (from edge/, after make server edge)
//
// Warm requests are sent one at a time over one keep-alive connection:
// a read the replica answers locally, a write with a HiLo id (durable in the
// Durable Object, pushed over the live connection), and the same write
// waiting for the server's acknowledgement. Cold start is workerd's start to
// the first answer, for each worker, over fresh processes.
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { edgeDir, freePort, run, serverBinary, startServer, startWorker, stop } from "../test/procs.mjs";

const N = Number(process.argv[2] ?? 2000);
const WARMUP = Math.min(200, N);
const COLD_RUNS = 5;
const config = join(edgeDir, "bench", "bench.capnp");
const DB = "bench";

function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { median: at(0.5), p99: at(0.99) };
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

    // A document to read.
    const made = await fetch(`${edge}/_api/document/orders?waitForSync=true`, {
      method: "POST",
      body: JSON.stringify({ item: "tea", qty: 2 }),
    });
    const { _key: key } = await made.json();
    const readPath = `/_api/document/orders/${key}`;
    const readURL = edge + readPath;
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
    await stop(worker);

    // Cold start: a new workerd, its replica on disk already (the object
    // loads it, starts Go and dials the server), to the first answer.
    const cold = { edge: [], plain: [] };
    for (let i = 0; i < COLD_RUNS; i++) {
      for (const which of ["edge", "plain"]) {
        const t0 = performance.now();
        const w = await startWorker({ config, replicas, env, sockets: ["http", "plain"] });
        const t1 = performance.now();
        const res = await fetch(which === "edge" ? w.urls.http + readPath : w.urls.plain);
        await res.arrayBuffer();
        const t2 = performance.now();
        cold[which].push({ start: t1 - t0, first: t2 - t1 });
        await stop(w);
      }
    }

    const p = stats(r.plain);
    const rd = stats(r.read);
    const pw = stats(r.plainW);
    const wr = stats(r.write);
    const sy = stats(r.sync);
    const medianOf = (xs, f) => stats(xs.map(f)).median;
    const lines = [
      `edge benchmark: ${N} warm requests of each kind (${Math.ceil(N / 40) * 10} with waitForSync), one at a time; load average ${(await readFile("/proc/loadavg", "utf8")).split(" ")[0]}`,
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
      `cold start (median of ${COLD_RUNS}): workerd start to listening, then first answer`,
      `| worker | start ms | first answer ms |`,
      `|---|---|---|`,
      `| plain | ${fmt(medianOf(cold.plain, (c) => c.start))} | ${fmt(medianOf(cold.plain, (c) => c.first))} |`,
      `| edge (read; loads the replica, starts Go, dials the server) | ${fmt(medianOf(cold.edge, (c) => c.start))} | ${fmt(medianOf(cold.edge, (c) => c.first))} |`,
    ];
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
