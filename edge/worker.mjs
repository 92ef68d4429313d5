// Glue between workerd (Cloudflare Workers) and the Go program in app.wasm.
//
// Every database has one Durable Object, Replica, named after the database.
// The worker's fetch handler sends each request to the object of its
// database (the path's /_db/{db}/, else HILODB_DB, else "default"). The
// object runs one Go program for its whole life: a hilodb replica
// (database.DB) whose store, node tag and HiLo ranges are kept in the
// object's storage, replicating live with the sync server.
//
// wasm_exec.js is Go's own loader, copied from $(go env GOROOT)/lib/wasm by
// build.sh; it defines globalThis.Go.
import "./wasm_exec.js";
import wasmModule from "./app.wasm";
import { Refusal, authorize } from "./auth.mjs";

// CHUNK is the largest value the glue stores under one key: Cloudflare
// allows 128 KiB per value in key-value storage. Chunks are copies
// (slice), not views (subarray): storage serialises a view with its whole
// buffer.
const CHUNK = 120 * 1024;
// MERGE and SMALL: an append of at most SMALL bytes that follows MERGE - 1
// such appends, each under a key of its own at the end of the log, is
// stored with them under one new key, in one batch with their deletion (no
// await between: a Durable Object commits it whole), so that the next
// start reads a log of many small writes as a key per MERGE writes, not
// one per write. The merged value is at most MERGE * SMALL bytes.
const MERGE = 32;
const SMALL = 2 * 1024;
// BATCH is the most keys one put or delete call takes.
const BATCH = 128;
// ALARM_MS is how soon the object retries a sync while writes are pending.
const ALARM_MS = 2_000;

const JSON_TYPE = "application/json; charset=utf-8";
// ROLE_HEADER carries what the request's token grants (auth.mjs) from the
// worker to the Durable Object; a client's own is replaced.
const ROLE_HEADER = "x-hilodb-edge-role";

// pad makes numeric keys sort in order.
const pad = (n) => String(n).padStart(12, "0");

// storageAdapter keeps a replica's bytes in a Durable Object's storage:
//
//   log/<n>    frames appended since the snapshot, in order (a long append
//              is split into consecutive keys)
//   snap/<n>   the snapshot, in chunks
//   node       the node tag
//   range/<t>  the HiLo range journal entry of tag t
//   database   the database's name, for the alarm (Replica.open writes it;
//              read here with the rest)
//
// Writes issued without an await between them are one atomic batch in a
// Durable Object, so a compaction (new snapshot, old log and old snapshot
// gone) happens whole or not at all.
//
// The Go side (storage_js.go) calls append, compact, saveNode and saveRange
// with a call number last; each reports its outcome through
// adapter.settled(number, error message or null), which Go sets.
async function storageAdapter(storage) {
  const [snapParts, logParts, kept, rangeEntries] = await Promise.all([
    storage.list({ prefix: "snap/" }),
    storage.list({ prefix: "log/" }),
    storage.get(["node", "database"]),
    storage.list({ prefix: "range/" }),
  ]);
  const node = kept.get("node");
  const found = {
    snapshot: snapParts.size ? concat([...snapParts.values()]) : null,
    log: logParts.size ? concat([...logParts.values()]) : null,
    node: typeof node === "string" ? node : null,
    ranges: {},
  };
  for (const [k, v] of rangeEntries) found.ranges[k.slice("range/".length)] = v;
  let logKeys = [...logParts.keys()];
  let nextLog = logKeys.length ? Number(logKeys[logKeys.length - 1].slice(4)) + 1 : 1;
  let snapCount = snapParts.size;
  // recent are the keys and values of the small appends at the end of the
  // log, since the last merge (MERGE): from the start, the log's last
  // keys of at most SMALL bytes.
  let recent = [];
  for (const [k, v] of [...logParts].reverse()) {
    if (v.byteLength > SMALL || recent.length >= MERGE - 1) break;
    recent.unshift([k, v instanceof Uint8Array ? v : new Uint8Array(v)]);
  }

  const putAll = (entries) => {
    const done = [];
    for (let i = 0; i < entries.length; i += BATCH) {
      done.push(storage.put(Object.fromEntries(entries.slice(i, i + BATCH))));
    }
    return done;
  };
  const deleteAll = (keys) => {
    const done = [];
    for (let i = 0; i < keys.length; i += BATCH) done.push(storage.delete(keys.slice(i, i + BATCH)));
    return done;
  };

  // settle reports the outcome of call n to Go, which sets
  // adapter.settled(n, message or null) when it takes the adapter.
  const settle = (done, n) =>
    done.then(
      () => adapter.settled(n, null),
      (err) => adapter.settled(n, String(err?.message ?? err)),
    );
  const adapter = {
    append(bytes, n) {
      if (bytes.length <= SMALL && recent.length >= MERGE - 1) {
        const key = `log/${pad(nextLog++)}`;
        const merged = recent.map(([k]) => k);
        // One batch: no await between these calls.
        const done = [storage.put(key, concat([...recent.map(([, b]) => b), bytes])), ...deleteAll(merged)];
        const gone = new Set(merged);
        logKeys = logKeys.filter((k) => !gone.has(k));
        logKeys.push(key);
        recent = [];
        settle(Promise.all(done), n);
        return;
      }
      if (bytes.length <= CHUNK) {
        const key = `log/${pad(nextLog++)}`;
        logKeys.push(key);
        if (bytes.length <= SMALL) recent.push([key, bytes]);
        else recent = [];
        settle(storage.put(key, bytes), n);
        return;
      }
      recent = [];
      const entries = [];
      for (let i = 0; i < bytes.length; i += CHUNK) {
        const key = `log/${pad(nextLog++)}`;
        logKeys.push(key);
        entries.push([key, bytes.slice(i, i + CHUNK)]);
      }
      settle(Promise.all(putAll(entries)), n);
    },
    compact(bytes, n) {
      const entries = [];
      let count = 0;
      for (let i = 0; i < bytes.length; i += CHUNK) entries.push([`snap/${pad(count++)}`, bytes.slice(i, i + CHUNK)]);
      const stale = [...logKeys];
      for (let i = count; i < snapCount; i++) stale.push(`snap/${pad(i)}`);
      // One batch: no await between these calls.
      const done = [...deleteAll(stale), ...putAll(entries)];
      logKeys = [];
      recent = [];
      snapCount = count;
      settle(Promise.all(done), n);
    },
    saveNode(tag, n) {
      settle(storage.put("node", tag), n);
    },
    saveRange(tag, text, n) {
      settle(storage.put(`range/${tag}`, text), n);
    },
  };
  const keys = snapParts.size + logParts.size + rangeEntries.size + kept.size;
  return { adapter, found, database: kept.get("database"), keys };
}

function concat(parts) {
  let n = 0;
  for (const p of parts) n += p.byteLength;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p instanceof Uint8Array ? p : new Uint8Array(p), at);
    at += p.byteLength;
  }
  return out;
}

// errorResponse answers in ArangoDB's error shape, as the Go side does.
function errorResponse(status, errorNum, errorMessage) {
  return new Response(JSON.stringify({ error: true, code: status, errorNum, errorMessage }), {
    status,
    headers: { "content-type": JSON_TYPE },
  });
}

// internalError is a 500 in the shape handle answers.
function internalError(message) {
  const body = new TextEncoder().encode(JSON.stringify({ error: true, code: 500, errorNum: 4, errorMessage: message }));
  return { status: 500, headers: null, body };
}

// databaseOf is the database a request is for.
function databaseOf(url, env) {
  const m = /^\/_db\/([^/]+)\//.exec(url.pathname);
  if (m) return m[1] === "_system" ? "default" : decodeURIComponent(m[1]);
  return typeof env.HILODB_DB === "string" && env.HILODB_DB ? env.HILODB_DB : "default";
}

// Replica is the Durable Object of one database.
export class Replica {
  constructor(state, env) {
    this.state = state;
    this.env = env;
    this.app = null; // the Go program's entry points, once open
    this.database = null;
    this.opening = null;
    this.requests = 0; // numbers requests for done(token, …)
    // What the object's start cost, phase by phase (ms), told once in the
    // Server-Timing header of the first answer after it.
    this.startTiming = null;
  }

  // open starts the Go program and opens the replica, once; requests wait
  // for it.
  open(database) {
    if (this.app) return null;
    if (!this.opening) {
      this.opening = this.state
        .blockConcurrencyWhile(async () => {
          const t0 = performance.now();
          // The storage is read while the Go program starts.
          const reading = storageAdapter(this.state.storage);
          reading.catch(() => {}); // awaited below, unless the program fails to start first
          // done settles the request waiting for token; an answer may come
          // before handle has returned, and then waits in early. failed
          // says the store did not load (after the first answer; the
          // requests waiting are answered 500): the next request starts
          // the program again.
          const waiters = new Map();
          const early = new Map();
          const boot = {
            done(token, r) {
              const w = waiters.get(token);
              if (w) {
                waiters.delete(token);
                w(r);
              } else early.set(token, r);
            },
            failed: (message) => {
              console.error(`edge: open the replica: ${message}; the next request starts the program again`);
              if (this.app === boot) {
                this.app = null;
                this.opening = null;
              }
            },
          };
          this.waiters = waiters;
          this.early = early;
          globalThis.__hilodbBoot = boot;
          const go = new Go();
          const instance = new WebAssembly.Instance(wasmModule, go.importObject);
          const tInstance = performance.now();
          // Should the program end, the requests it holds are answered 500
          // and the next request starts it again over the same storage.
          const ended = (how) => {
            console.error(`edge: the Go program ${how}; the next request starts it again`);
            if (this.app === boot) {
              this.app = null;
              this.opening = null;
            }
            for (const answer of waiters.values()) answer(internalError(`the Go program ${how}`));
            waiters.clear();
          };
          go.run(instance).then(
            () => ended("exited"),
            (err) => ended(`failed: ${err?.message ?? err}`),
          );
          delete globalThis.__hilodbBoot;
          if (typeof boot.handle !== "function") throw new Error("the Go program did not start");
          const tGo = performance.now();
          const { adapter, found, database: kept, keys } = await reading;
          const tStorage = performance.now();
          const url = typeof this.env.HILODB_URL === "string" ? this.env.HILODB_URL : "";
          const token = typeof this.env.HILODB_TOKEN === "string" ? this.env.HILODB_TOKEN : "";
          await boot.open({ url, database, token }, adapter, found);
          const tOpen = performance.now();
          // The alarm, which may start the object without a request, needs it.
          if (kept !== database) await this.state.storage.put("database", database);
          const tPut = performance.now();
          this.startTiming = [
            ["instantiate", tInstance - t0],
            ["go", tGo - tInstance],
            ["storage", tStorage - tGo, `${keys} keys`],
            ["open", tOpen - tStorage],
            ["put", tPut - tOpen],
          ];
          this.database = database;
          this.app = boot;
        })
        .catch((err) => {
          this.opening = null;
          throw err;
        });
    }
    return this.opening;
  }

  async fetch(request) {
    const t0 = performance.now();
    const url = new URL(request.url);
    if (!this.app) {
      try {
        await this.open(databaseOf(url, this.env));
      } catch (err) {
        return errorResponse(500, 4, `open the replica: ${err?.message ?? err}`);
      }
    }
    const method = request.method;
    let body = null;
    if (method !== "GET" && method !== "HEAD") {
      body = new Uint8Array(await request.arrayBuffer());
    }
    if (!this.app) return errorResponse(503, 1902, "the replica closed while the request was read; retry");
    const tReady = performance.now();
    const token = ++this.requests;
    let r = this.app.handle(
      token,
      method,
      url.pathname,
      url.search.slice(1),
      request.headers.get("if-match") ?? "",
      request.headers.get("if-none-match") ?? "",
      body,
      request.headers.get(ROLE_HEADER) ?? "none",
      request.headers.get("cache-control") ?? "",
    );
    if (r === undefined || r === null) {
      r = this.early.get(token);
      if (r) this.early.delete(token);
      else r = await new Promise((resolve) => this.waiters.set(token, resolve));
      if (r.headers?.includes("pending")) this.armAlarm();
    }
    const headers = r.body ? { "content-type": JSON_TYPE } : {};
    if (r.headers) for (let i = 0; i < r.headers.length; i += 2) headers[r.headers[i]] = r.headers[i + 1];
    if (this.startTiming) {
      const now = performance.now();
      const phases = [...this.startTiming, ["answer", now - tReady], ["total", now - t0]];
      this.startTiming = null;
      headers["server-timing"] = phases
        .map(([name, ms, desc]) => `${name};dur=${ms.toFixed(1)}${desc ? `;desc="${desc}"` : ""}`)
        .join(", ");
    }
    return new Response(method === "HEAD" ? null : r.body ?? null, { status: r.status, headers });
  }

  // armAlarm makes sure pending writes are retried even if no request
  // comes: the alarm wakes the object (starting it again if it was
  // evicted) and syncs.
  armAlarm() {
    if (this.alarmSet) return;
    this.alarmSet = true;
    this.state.storage.setAlarm(Date.now() + ALARM_MS).catch(() => (this.alarmSet = false));
  }

  async alarm() {
    this.alarmSet = false;
    if (!this.app) {
      const database = await this.state.storage.get("database");
      await this.open(typeof database === "string" ? database : "default");
      // A start no request waited for is not told.
      this.startTiming = null;
    }
    if (await this.app.tick()) this.armAlarm();
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const database = databaseOf(url, env);
    let role;
    try {
      role = await authorize(request, env, database);
    } catch (err) {
      if (err instanceof Refusal) return errorResponse(err.status, err.num, err.message);
      throw err;
    }
    if (!/^[A-Za-z][A-Za-z0-9_-]{0,63}$/.test(database)) {
      return errorResponse(400, 1208, `illegal database name ${JSON.stringify(database)}`);
    }
    // The role rides to the object on a header only this worker sets.
    const headers = new Headers(request.headers);
    headers.set(ROLE_HEADER, role);
    const ns = env.REPLICA;
    return ns.get(ns.idFromName(database)).fetch(new Request(request, { headers }));
  },
};
