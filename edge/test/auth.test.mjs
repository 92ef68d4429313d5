// Signed tokens at the edge (auth.mjs, roles.go), in the real workerd
// against the real sync server, which is started with the same HS256
// secret, JWKS, issuer and audience: each user reaches only their own
// database, a read token writes nothing, every bad token is refused with the
// server's status, number and message, and EdDSA, ES256 and RS256 tokens
// verify with keys from a JWKS served over HTTP (fetched once, again for an
// unknown kid at most once a minute) or bound as text.
//
//   cd edge && node --test test/auth.test.mjs   (after make server edge)
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createHmac, generateKeyPairSync, sign } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, serverBinary, startServer, startWorker, stop } from "./procs.mjs";

const REQUEST_TIMEOUT_MS = 15_000;
const SECRET = "an HS256 secret of at least thirty-two bytes, for the edge tests";
const ISS = "https://login.example.com";
const AUD = "hilodb";
const USERS = { "user-{sub}": "write", shared: "read" };

// The JWKS's keys: kid → {alg, privateKey, jwk (public)}.
const keys = {};
for (const [kid, alg, type, opts] of [
  ["k-ed", "EdDSA", "ed25519", {}],
  ["k-es", "ES256", "ec", { namedCurve: "P-256" }],
  ["k-rs", "RS256", "rsa", { modulusLength: 2048 }],
  ["k-new", "EdDSA", "ed25519", {}],
  ["k-later", "ES256", "ec", { namedCurve: "P-256" }],
]) {
  const { privateKey, publicKey } = generateKeyPairSync(type, opts);
  keys[kid] = { alg, privateKey, jwk: { ...publicKey.export({ format: "jwk" }), kid, alg } };
}
const jwksOf = (...kids) => JSON.stringify({ keys: kids.map((kid) => keys[kid].jwk) });

let tmp, server, jwksServer, edge, textEdge;
let served = jwksOf("k-ed", "k-es", "k-rs"); // what jwksServer answers
let jwksFetches = 0;

before(
  async () => {
    tmp = await mkdtemp(join(tmpdir(), "hilodb-edge-auth-"));
    await writeFile(join(tmp, "hs256"), SECRET);
    await writeFile(join(tmp, "jwks.json"), served);
    server = await startServer(await serverBinary(tmp), await freePort(), join(tmp, "data"), [
      "-jwt-hs256-file", join(tmp, "hs256"), "-jwks-file", join(tmp, "jwks.json"),
      "-jwt-issuer", ISS, "-jwt-audience", AUD, "-rate", "-1",
    ]);
    jwksServer = createServer((_req, res) => {
      jwksFetches++;
      res.writeHead(200, { "content-type": "application/json" }).end(served);
    });
    await new Promise((ok) => jwksServer.listen(0, "127.0.0.1", ok));
    // The replicas reach the server with a token of their own, admin of
    // every database, as HILODB_TOKEN would be set at deploy.
    const replicaToken = token({ db: { "*": "admin" }, sub: "edge", exp: now() + 3600 });
    const common = { HILODB_URL: server.ws, HILODB_DB: "user-alice", HILODB_TOKEN: replicaToken, HILODB_JWT_ISSUER: ISS, HILODB_JWT_AUDIENCE: AUD };
    // The ArangoDB door inserts only into collections that exist, at the
    // edge as on the server: each database's notes is defined first.
    for (const db of ["user-alice", "user-bob", "shared", "user-uk-ed", "user-uk-es", "user-uk-rs"]) {
      const made = await call(server.http, "POST", `/_db/${db}/_api/collection`, { bearer: admin(), body: { name: "notes", keyOptions: { type: "hilo" } } });
      assert.equal(made.status, 200, `notes in ${db}: ${JSON.stringify(made.json)}`);
    }
    await mkdir(join(tmp, "r1"));
    edge = await startWorker({
      replicas: join(tmp, "r1"),
      env: { ...common, HILODB_JWT_SECRET: SECRET, HILODB_JWKS_URL: `http://127.0.0.1:${jwksServer.address().port}/jwks.json` },
    });
    await mkdir(join(tmp, "r2"));
    textEdge = await startWorker({ replicas: join(tmp, "r2"), env: { ...common, HILODB_JWKS: served } });
  },
  { timeout: 600_000 },
);

after(async () => {
  await stop(edge);
  await stop(textEdge);
  await stop(server);
  await new Promise((ok) => (jwksServer ? jwksServer.close(ok) : ok()));
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

const now = () => Math.floor(Date.now() / 1000);

// jwt signs claims with header's alg: key is the HS256 secret or a private key.
function jwt(header, claims, key) {
  const data = `${b64(JSON.stringify(header))}.${b64(JSON.stringify(claims))}`;
  let sig;
  switch (header.alg) {
    case "HS256":
      sig = createHmac("sha256", key).update(data).digest();
      break;
    case "EdDSA":
      sig = sign(null, Buffer.from(data), key);
      break;
    case "ES256":
      sig = sign("sha256", Buffer.from(data), { key, dsaEncoding: "ieee-p1363" });
      break;
    case "RS256":
      sig = sign("sha256", Buffer.from(data), key);
      break;
    default:
      sig = Buffer.alloc(0);
  }
  return `${data}.${sig.toString("base64url")}`;
}

const b64 = (s) => Buffer.from(s).toString("base64url");

// token signs the claims of sub (alice) with db's roles: HS256 with the
// secret, or with the JWKS key kid; claims overrides any member.
function token({ sub = "alice", db = USERS, kid, exp = now() + 600, ...claims } = {}) {
  const body = { sub, iss: ISS, aud: AUD, exp, hilodb: { db }, ...claims };
  if (!kid) return jwt({ alg: "HS256", typ: "JWT" }, body, SECRET);
  return jwt({ alg: keys[kid].alg, kid, typ: "JWT" }, body, keys[kid].privateKey);
}

// call sends one request to base and returns status, headers and the JSON body.
async function call(base, method, path, { body, bearer, headers = {} } = {}) {
  const res = await fetch(base + path, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }),
      ...headers,
    },
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : null };
}

// onServer reads a document of db from the sync server's ArangoDB door,
// with an admin token.
const admin = () => token({ sub: "ops", db: { "*": "admin" } });
const onServer = (db, coll, key) => call(server.http, "GET", `/_db/${db}/_api/document/${coll}/${key}`, { bearer: admin() });

// refused checks an error body: {error, code (the status), errorNum, errorMessage}.
function refused(res, status, errorNum, message, what = "") {
  assert.equal(res.status, status, `${what} ${JSON.stringify(res.json)}`);
  assert.deepEqual(Object.keys(res.json).sort(), ["code", "error", "errorMessage", "errorNum"]);
  assert.equal(res.json.error, true);
  assert.equal(res.json.code, status);
  assert.equal(res.json.errorNum, errorNum);
  if (message) assert.match(res.json.errorMessage, message);
}

// written checks a write was answered 201 or 202 and returns its body.
function written(res) {
  assert.ok(res.status === 201 || res.status === 202, `${res.status} ${JSON.stringify(res.json)}`);
  return res.json;
}

// onServerEventually waits (the bound is 2 s) until the server has the document.
async function onServerEventually(db, coll, key) {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const res = await onServer(db, coll, key);
    if (res.status === 200) return res.json;
    if (Date.now() > deadline) assert.fail(`${db} ${coll}/${key} is not on the server: ${JSON.stringify(res.json)}`);
    await new Promise((ok) => setTimeout(ok, 50));
  }
}

test("two users each reach only their own database", async () => {
  const alice = token({ sub: "alice" });
  const bob = token({ sub: "bob", kid: "k-ed" });
  // alice's database is the worker's (HILODB_DB), also named by its path.
  const a = written(await call(edge.base, "POST", "/_api/document/notes?waitForSync=true", { bearer: alice, body: { _key: "a1", by: "alice" } }));
  assert.equal(a._key, "a1");
  const b = written(await call(edge.base, "POST", "/_db/user-bob/_api/document/notes?waitForSync=true", { bearer: bob, body: { _key: "b1", by: "bob" } }));
  assert.equal(b._key, "b1");
  assert.equal((await call(edge.base, "GET", "/_db/user-alice/_api/document/notes/a1", { bearer: alice })).json.by, "alice");
  assert.equal((await call(edge.base, "GET", "/_db/user-bob/_api/document/notes/b1", { bearer: bob })).json.by, "bob");

  // Neither reaches the other's: not a read, not a write, by path or as the worker's database.
  const grantsNothing = /^the token grants nothing in database "user-(alice|bob)"$/;
  refused(await call(edge.base, "GET", "/_db/user-bob/_api/document/notes/b1", { bearer: alice }), 401, 401, grantsNothing);
  refused(await call(edge.base, "POST", "/_db/user-bob/_api/document/notes", { bearer: alice, body: { _key: "x", by: "alice" } }), 401, 401, grantsNothing);
  refused(await call(edge.base, "GET", "/_db/user-alice/_api/document/notes/a1", { bearer: bob }), 401, 401, grantsNothing);
  refused(await call(edge.base, "GET", "/_api/document/notes/a1", { bearer: bob }), 401, 401, grantsNothing);
  refused(await call(edge.base, "POST", "/docs/notes", { bearer: bob, body: { by: "bob" } }), 401, 401, grantsNothing);
  // Without a token, nothing.
  refused(await call(edge.base, "GET", "/_api/document/notes/a1"), 401, 401, /wrong or missing token/);
  refused(await call(edge.base, "GET", "/_api/document/notes/a1", { bearer: "not-a-token" }), 401, 401, /wrong or missing token/);

  // The server has each in its own database only.
  assert.equal((await onServerEventually("user-alice", "notes", "a1")).by, "alice");
  assert.equal((await onServerEventually("user-bob", "notes", "b1")).by, "bob");
  assert.equal((await onServer("user-bob", "notes", "x")).status, 404);
  assert.equal((await onServer("user-alice", "notes", "b1")).status, 404);
});

test("a read token reads and queries, and its writes are refused with nothing stored", async () => {
  const writer = token({ sub: "ann", db: { shared: "write" } });
  const reader = token({ sub: "alice", kid: "k-es" }); // shared: read
  written(await call(edge.base, "POST", "/_db/shared/_api/document/notes?waitForSync=true", { bearer: writer, body: { _key: "s1", v: 1 } }));

  const forbidden = /^a write needs a write role; this token's is read$/;
  const tries = [
    ["POST", "/_db/shared/_api/document/notes", { _key: "r1", v: 1 }],
    ["POST", "/_db/shared/_api/document/notes", [{ _key: "r2" }, { _key: "r3" }]],
    ["PUT", "/_db/shared/_api/document/notes/s1", { v: 2 }],
    ["PATCH", "/_db/shared/_api/document/notes/s1", { v: 3 }],
    ["PATCH", "/_db/shared/_api/document/notes", [{ _key: "s1", v: 4 }]],
    ["DELETE", "/_db/shared/_api/document/notes/s1", undefined],
    ["DELETE", "/_db/shared/_api/document/notes", ["s1"]],
    ["PUT", "/_db/shared/_api/document/notes?onlyget=false", [{ _key: "s1", v: 5 }]],
  ];
  for (const [method, path, body] of tries) {
    refused(await call(edge.base, method, path, { bearer: reader, body }), 403, 1907, forbidden);
  }
  // The short form's path is /docs/… (no /_db/): the worker's database,
  // where alice writes; the read token of another user is refused there.
  refused(await call(edge.base, "POST", "/docs/notes", { bearer: token({ sub: "alice", db: { "user-alice": "read" } }), body: { v: 1 } }), 403, 1907, forbidden);

  // Reads, reads of many and queries are served.
  const got = await call(edge.base, "GET", "/_db/shared/_api/document/notes/s1", { bearer: reader });
  assert.equal(got.status, 200);
  assert.equal(got.json.v, 1);
  const many = await call(edge.base, "PUT", "/_db/shared/_api/document/notes?onlyget=true", { bearer: reader, body: ["s1"] });
  assert.equal(many.status, 200, JSON.stringify(many.json));
  assert.equal(many.json[0].v, 1);
  const q = await call(edge.base, "POST", "/_db/shared/_api/cursor", { bearer: reader, body: { query: "FOR d IN notes RETURN d" } });
  assert.equal(q.status, 201, JSON.stringify(q.json));
  assert.deepEqual(q.json.result.map((d) => [d._key, d.v]), [["s1", 1]]);
  // The worker's status is an admin's.
  refused(await call(edge.base, "GET", "/_edge/status", { bearer: token({ sub: "alice" }) }), 403, 1907, /needs a admin role; this token's is write/);
  assert.equal((await call(edge.base, "GET", "/_edge/status", { bearer: token({ sub: "ops", db: { "user-alice": "admin" } }) })).status, 200);

  // Nothing changed, at the edge or on the server.
  await new Promise((ok) => setTimeout(ok, 300));
  for (const key of ["r1", "r2", "r3"]) {
    assert.equal((await call(edge.base, "GET", `/_db/shared/_api/document/notes/${key}`, { bearer: writer })).status, 404);
    assert.equal((await onServer("shared", "notes", key)).status, 404);
  }
  const s1 = await onServer("shared", "notes", "s1");
  assert.equal(s1.json.v, 1);
  assert.equal(s1.json._rev, got.json._rev);
  const all = await call(edge.base, "POST", "/_db/shared/_api/cursor", { bearer: writer, body: { query: "FOR d IN notes RETURN d._key" } });
  assert.deepEqual(all.json.result, ["s1"]);
  const count = await call(server.http, "POST", "/_db/shared/_api/cursor", { bearer: admin(), body: { query: "FOR d IN notes RETURN d._key" } });
  assert.deepEqual(count.json.result, ["s1"]);
});

test("the JWKS URL is fetched once, and again for an unknown kid at most once a minute", async () => {
  const before = jwksFetches;
  assert.equal(before, 1, "the worker fetched the JWKS once");
  for (let i = 0; i < 3; i++) {
    assert.equal((await call(edge.base, "GET", "/_api/document/notes/a1", { bearer: token({ kid: "k-ed" }) })).status, 200);
  }
  assert.equal(jwksFetches, before, "known keys are not fetched again");
  // A key added to the JWKS (a rotation): the first token naming it makes
  // the worker fetch the document again.
  served = jwksOf("k-ed", "k-es", "k-rs", "k-new");
  assert.equal((await call(edge.base, "GET", "/_api/document/notes/a1", { bearer: token({ kid: "k-new" }) })).status, 200);
  assert.equal(jwksFetches, before + 1);
  // Within the minute, an unknown kid is refused without a fetch, even one
  // the served JWKS now has.
  served = jwksOf("k-ed", "k-es", "k-rs", "k-new", "k-later");
  refused(await call(edge.base, "GET", "/_api/document/notes/a1", { bearer: token({ kid: "k-later" }) }), 401, 401, /no key has kid "k-later"/);
  refused(await call(edge.base, "GET", "/_api/document/notes/a1", { bearer: jwt({ alg: "EdDSA", kid: "nope" }, { sub: "alice", iss: ISS, aud: AUD, exp: now() + 600, hilodb: { db: USERS } }, keys["k-ed"].privateKey) }), 401, 401, /no key has kid "nope"/);
  assert.equal(jwksFetches, before + 1);
  assert.equal((await call(edge.base, "GET", "/_api/document/notes/a1", { bearer: token({ kid: "k-new" }) })).status, 200);
});

test("bad tokens are refused as the sync server refuses them: 401/401 and its message", async () => {
  const t = now();
  const good = token({ kid: "k-ed" });
  const [h, p, s] = good.split(".");
  const claims = JSON.parse(Buffer.from(p, "base64url"));
  const cases = [
    ["expired", token({ exp: t - 120 }), /^token refused: it expired at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/],
    ["not yet valid", token({ nbf: t + 120 }), /^token refused: it is not valid yet$/],
    ["issued in the future", token({ kid: "k-rs", iat: t + 300 }), /^token refused: it is not valid yet$/],
    ["no exp", jwt({ alg: "HS256" }, { ...claims, exp: undefined }, SECRET), /^token refused: it has no exp$/],
    ["alg none", jwt({ alg: "none", typ: "JWT" }, { ...claims }, null), /^token refused: its algorithm is not one taken/],
    ["alg none, kid named", jwt({ alg: "none", kid: "k-ed" }, { ...claims }, null), /^token refused: its algorithm is not one taken/],
    ["HS256 signed with the JWKS's public key (JSON)", jwt({ alg: "HS256", kid: "k-ed" }, claims, JSON.stringify(keys["k-ed"].jwk)), /^token refused: its signature does not verify$/],
    ["HS256 signed with the public key (x)", jwt({ alg: "HS256", kid: "k-ed" }, claims, Buffer.from(keys["k-ed"].jwk.x, "base64url")), /^token refused: its signature does not verify$/],
    ["a key of another algorithm", jwt({ alg: "RS256", kid: "k-es" }, claims, keys["k-rs"].privateKey), /^token refused: key "k-es" verifies ES256, not RS256$/],
    ["wrong aud", token({ kid: "k-es", aud: "another" }), /^token refused: its aud does not name "hilodb"$/],
    ["no aud", token({ aud: undefined }), /^token refused: its aud does not name "hilodb"$/],
    ["wrong iss", token({ kid: "k-rs", iss: "https://evil.example.com" }), /^token refused: its iss is not "https:\/\/login\.example\.com"$/],
    ["unknown kid", jwt({ alg: "EdDSA", kid: "k-unknown" }, claims, keys["k-ed"].privateKey), /^token refused: no key has kid "k-unknown"$/],
    ["no kid, several keys", jwt({ alg: "EdDSA" }, claims, keys["k-ed"].privateKey), /^token refused: it names no kid, and the JWKS holds several keys$/],
    ["tampered payload", `${h}.${b64(JSON.stringify({ ...claims, hilodb: { db: { "*": "admin" } } }))}.${s}`, /^token refused: its signature does not verify$/],
    ["tampered signature", `${h}.${p}.${s.slice(0, -4)}AAAA`, /^token refused: its signature does not verify$/],
    ["no hilodb claim", jwt({ alg: "HS256" }, { ...claims, hilodb: undefined }, SECRET), /^token refused: it has no "hilodb": \{"db": \{\.\.\.\}\} claim$/],
    ["a role that is none", token({ db: { "user-{sub}": "owner" } }), /^token refused: role "owner" of "user-\{sub\}" is not read, write or admin$/],
    ["no role in the database", token({ db: { "user-{sub}x": "admin", shared: "write" } }), /^the token grants nothing in database "user-alice"$/],
    ["a role in an empty claim", token({ db: {} }), /^token refused: it has no "hilodb"/],
    ["not JSON", "eyJub3QiOg.eyJ9.c2ln", /^token refused: not a signed JWT$/],
  ];
  for (const [what, tok, message] of cases) {
    for (const base of [edge.base, server.http]) {
      const res = await call(base, "GET", "/_db/user-alice/_api/document/notes/a1", { bearer: tok });
      refused(res, 401, 401, undefined, `${what} at ${base === edge.base ? "the edge" : "the server"}`);
      assert.match(res.json.errorMessage, message, `${what} at ${base === edge.base ? "the edge" : "the server"}`);
    }
    const edgeRes = await call(edge.base, "POST", "/_db/user-alice/_api/document/notes", { bearer: tok, body: { _key: "bad" } });
    const serverRes = await call(server.http, "POST", "/_db/user-alice/_api/document/notes", { bearer: tok, body: { _key: "bad" } });
    assert.deepEqual(edgeRes.json, serverRes.json, `${what}: the edge answers as the server`);
    assert.equal(edgeRes.status, serverRes.status);
  }
  // Within the 60 s of clock skew, a token is still taken, on both.
  for (const tok of [token({ exp: t - 20 }), token({ kid: "k-es", nbf: t + 20 })]) {
    assert.equal((await call(edge.base, "GET", "/_db/user-alice/_api/document/notes/a1", { bearer: tok })).status, 200);
    assert.equal((await call(server.http, "GET", "/_db/user-alice/_api/document/notes/a1", { bearer: tok })).status, 200);
  }
  assert.equal((await onServer("user-alice", "notes", "bad")).status, 404);
});

test("EdDSA, ES256 and RS256 tokens verify with keys from a JWKS URL and from a JWKS binding", async () => {
  for (const [base, where, n] of [[edge.base, "JWKS URL", "n1"], [textEdge.base, "JWKS binding", "n2"]]) {
    for (const kid of ["k-ed", "k-es", "k-rs"]) {
      const tok = token({ sub: `u${kid}`, kid });
      const doc = written(await call(base, "POST", `/_db/user-u${kid}/_api/document/notes?waitForSync=true`, { bearer: tok, body: { _key: n, kid } }));
      assert.equal(doc._key, n, `${kid} by ${where}`);
      assert.equal((await call(base, "GET", `/_db/user-u${kid}/_api/document/notes/${n}`, { bearer: tok })).json.kid, kid);
      assert.equal((await onServerEventually(`user-u${kid}`, "notes", n)).kid, kid);
      // The same request, its token tampered with or missing, is refused.
      const [h, p] = tok.split(".");
      const other = token({ sub: `u${kid}`, kid, exp: now() + 601 }).split(".")[2];
      refused(await call(base, "GET", `/_db/user-u${kid}/_api/document/notes/${n}`, { bearer: `${h}.${p}.${other}` }), 401, 401, /signature does not verify/);
      refused(await call(base, "GET", `/_db/user-u${kid}/_api/document/notes/${n}`), 401, 401);
    }
  }
  // The text binding has no HS256 secret: an HS256 token is refused there,
  // signed with the secret or with a public key.
  refused(await call(textEdge.base, "GET", "/_api/document/notes/a1", { bearer: token() }), 401, 401, /^token refused: HS256 is not taken by this worker$/);
  const claims = { sub: "alice", iss: ISS, aud: AUD, exp: now() + 600, hilodb: { db: USERS } };
  refused(await call(textEdge.base, "GET", "/_api/document/notes/a1", { bearer: jwt({ alg: "HS256", kid: "k-ed" }, claims, JSON.stringify(keys["k-ed"].jwk)) }), 401, 401, /HS256 is not taken/);
});
