// Processes for the edge tests and benchmark: the real sync server and the
// real workerd, on 127.0.0.1 with free ports, killed if the test run dies.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const edgeDir = dirname(dirname(fileURLToPath(import.meta.url)));
export const repoDir = dirname(edgeDir);
const require = createRequire(import.meta.url);

export const BUILD_TIMEOUT_MS = 240_000; // cold Go build caches on 2 cores
const START_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 5_000;

const children = new Set();

// A child left running would outlive a crashed test run: kill what is left.
process.on("exit", () => {
  for (const child of children) child.kill("SIGKILL");
});

// run runs a command to completion and returns its output, failing with it.
export function run(cmd, args, opts = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...opts, stdio: ["ignore", "pipe", "pipe"] });
    children.add(child);
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeout ?? BUILD_TIMEOUT_MS);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      if (code === 0) resolve(output);
      else reject(new Error(`${cmd} ${args.join(" ")}: exit ${code ?? signal}\n${output}`));
    });
  });
}

// start spawns a long-running process and waits until ready(output,
// control) returns a value, where control is what it wrote to fd 3.
function start(cmd, args, opts, ready) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...opts, stdio: ["ignore", "pipe", "pipe", "pipe"] });
    children.add(child);
    const proc = { child, output: "", control: "", exited: false };
    proc.gone = new Promise((ok) => child.once("exit", ok));
    let settled = false;
    const timer = setTimeout(() => finish(new Error(`${cmd} not ready within ${START_TIMEOUT_MS} ms:\n${proc.output}`)), START_TIMEOUT_MS);
    const finish = (err, value) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) {
        child.kill("SIGKILL");
        reject(err);
      } else resolve(Object.assign(proc, value));
    };
    const check = () => {
      const value = ready(proc.output, proc.control);
      if (value) finish(null, value);
    };
    child.stdout.on("data", (d) => ((proc.output += d), check()));
    child.stderr.on("data", (d) => ((proc.output += d), check()));
    child.stdio[3].on("data", (d) => ((proc.control += d), check()));
    child.on("error", (err) => finish(err));
    child.on("exit", (code, signal) => {
      proc.exited = true;
      children.delete(child);
      finish(new Error(`${cmd} exited (${code ?? signal}) before it was ready:\n${proc.output}`));
    });
  });
}

// stop ends a process: signal (SIGTERM by default), then SIGKILL if it
// has not exited within STOP_TIMEOUT_MS.
export async function stop(proc, signal = "SIGTERM") {
  if (!proc || proc.exited) return;
  proc.child.kill(signal);
  const timer = setTimeout(() => proc.child.kill("SIGKILL"), STOP_TIMEOUT_MS);
  await proc.gone;
  clearTimeout(timer);
}

/** freePort asks the kernel for a port that is free on 127.0.0.1 now. */
export function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.on("error", fail);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

// serverBinary is the sync server the Makefile built (make server), or one
// built here into dir.
export async function serverBinary(dir) {
  const prebuilt = process.env.HILODB_SERVER_BIN;
  if (prebuilt && existsSync(prebuilt)) return prebuilt;
  const bin = join(dir, "hilodb-server");
  await run("go", ["build", "-trimpath", "-o", bin, "./cmd/hilodb-server"], { cwd: repoDir });
  return bin;
}

// startServer runs the sync server on 127.0.0.1:port over dataDir (both
// kept, so a restart finds the same server), with the flags args added. A
// port another process took meanwhile fails the start.
export function startServer(bin, port, dataDir, args = []) {
  return start(bin, ["-addr", `127.0.0.1:${port}`, "-data", dataDir, "-node-tag", "A", ...args], {}, (output) => {
    const m = /addr=http:\/\/(127\.0\.0\.1:\d+)/.exec(output);
    return m && { ws: `ws://${m[1]}/v1/sync`, http: `http://${m[1]}` };
  });
}

function workerdBinary() {
  // The Linux x64 build of workerd, depended on directly: the registry
  // reachable here lacks the other platforms' packages that the "workerd"
  // wrapper lists.
  return require.resolve("@cloudflare/workerd-linux-64/bin/workerd");
}

// startWorker runs workerd with config (config.capnp by default) on free
// ports, its Durable Objects' storage in replicas, and env added to the
// environment (HILODB_URL, HILODB_DB, …). It waits until every socket named
// in sockets listens; base is the first one's URL, urls all of them.
export function startWorker({ config = join(edgeDir, "config.capnp"), replicas, env = {}, sockets = ["http"] }) {
  const e = { ...process.env, ...env };
  for (const name of ["HILODB_TOKEN", "HILODB_EDGE_TOKEN", "HILODB_JWT_SECRET", "HILODB_JWKS", "HILODB_JWKS_URL", "HILODB_JWT_ISSUER", "HILODB_JWT_AUDIENCE"]) {
    if (!(name in env)) delete e[name];
  }
  const args = ["serve", config, "--control-fd", "3"];
  for (const name of sockets) args.push("--socket-addr", `${name}=127.0.0.1:0`);
  if (replicas) args.push("--directory-path", `replicas=${replicas}`);
  return start(workerdBinary(), args, { cwd: edgeDir, env: e }, (_output, control) => {
    // workerd reports {"event":"listen","socket":"http","port":N} on fd 3.
    const urls = {};
    for (const line of control.split("\n")) {
      if (!line.trim()) continue;
      const msg = JSON.parse(line);
      if (msg.event === "listen") urls[msg.socket] = `http://127.0.0.1:${msg.port}`;
    }
    if (!sockets.every((name) => urls[name])) return null;
    return { base: urls[sockets[0]], urls };
  });
}
