// Who may use the edge worker: the tokens the sync server takes
// (docs/auth.md), checked with Web Crypto in the glue rather than by
// package auth in the Go program, whose go-jose and crypto dependencies
// would add about 750 KB gzip to app.wasm (edge/README.md, "Size").
//
// The rules are the server's (auth/auth.go, syncserver/auth.go):
//
//   - HILODB_EDGE_TOKEN, a static token: its holder is admin of every
//     database;
//   - signed tokens (JWT): HS256 with the secret HILODB_JWT_SECRET; EdDSA,
//     ES256 and RS256 with the public keys of a JWKS, from HILODB_JWKS_URL
//     (fetched once, fetched again for an unknown kid at most once a minute)
//     or HILODB_JWKS (the document itself). The algorithm is pinned per
//     key: alg none, an HS256 token signed with a public key, a token of
//     another algorithm than its key's, an unknown kid and a tampered token
//     are refused. exp is required; exp, nbf and iat are checked with at
//     most 60 s of clock skew; iss and aud when HILODB_JWT_ISSUER and
//     HILODB_JWT_AUDIENCE are set. The claim
//     {"hilodb": {"db": {"user-{sub}": "write", "shared": "read"}}} gives
//     the request's database its role ({sub} is the subject, * every
//     database); a database it does not name is unauthorized.
//
// With none of these bindings set, the worker has no access control of its
// own: every request is admin, as before tokens were checked here.
//
// authorize answers the role; the Go program holds each request to it
// (roles.go: read may read and query, write may also write, admin may also
// see the worker's status). Refusals have the body and numbers of the
// sync server's HTTP doors (errcode): 401/401 unauthorized, 503/503
// unavailable when the JWKS cannot be fetched, 500/4 for keys that are not
// valid.

// LEEWAY_S is the clock skew tolerated for exp, nbf and iat, as the server's.
const LEEWAY_S = 60;
// REFETCH_MS is how often, at most, a token naming an unknown kid fetches
// the JWKS again.
const REFETCH_MS = 60_000;
// RETRY_MS is how often, at most, the JWKS is fetched while none has been.
const RETRY_MS = 1_000;
// FETCH_TIMEOUT_MS bounds one fetch of the JWKS.
const FETCH_TIMEOUT_MS = 5_000;

const UNAUTHORIZED = { status: 401, num: 401 };
const UNAVAILABLE = { status: 503, num: 503 };
const INTERNAL = { status: 500, num: 4 };

// ALGORITHMS are the ones taken, with the Web Crypto parameters that
// import a key for each and verify with it.
const ALGORITHMS = {
  HS256: { importAs: { name: "HMAC", hash: "SHA-256" }, verifyAs: { name: "HMAC" } },
  EdDSA: { importAs: { name: "Ed25519" }, verifyAs: { name: "Ed25519" } },
  ES256: { importAs: { name: "ECDSA", namedCurve: "P-256" }, verifyAs: { name: "ECDSA", hash: "SHA-256" } },
  RS256: { importAs: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, verifyAs: { name: "RSASSA-PKCS1-v1_5" } },
};

const ROLES = ["none", "read", "write", "admin"];

/** Refusal is a request refused: status, num and message for its body. */
export class Refusal extends Error {
  constructor(code, message, reason = "") {
    super(message);
    this.status = code.status;
    this.num = code.num;
    this.reason = reason; // the server's word for metrics: expired, unknown_key, …
  }
}

const refuse = (reason, message) => new Refusal(UNAUTHORIZED, `token refused: ${message}`, reason);

const text = (v) => (typeof v === "string" && v !== "" ? v : "");

// configs caches the verifier of each set of bindings: its imported keys
// and fetched JWKS outlive the request, for the life of the isolate.
const configs = new Map();

// configOf is the access control the bindings configure, null for none.
function configOf(env) {
  const b = {
    edgeToken: text(env.HILODB_EDGE_TOKEN),
    secret: text(env.HILODB_JWT_SECRET).replace(/[\r\n]+$/, ""),
    jwks: text(env.HILODB_JWKS),
    jwksURL: text(env.HILODB_JWKS_URL),
    issuer: text(env.HILODB_JWT_ISSUER),
    audience: text(env.HILODB_JWT_AUDIENCE),
  };
  const key = JSON.stringify(b);
  let c = configs.get(key);
  if (c === undefined) {
    const signed = b.secret || b.jwks || b.jwksURL;
    c = b.edgeToken || signed ? { edgeToken: b.edgeToken, verifier: signed ? new Verifier(b) : null } : null;
    configs.set(key, c);
  }
  return c;
}

/**
 * authorize returns the role ("read", "write", "admin") the request's
 * token grants in database, or throws a Refusal.
 */
export async function authorize(request, env, database) {
  const c = configOf(env);
  if (!c) return "admin";
  const token = bearer(request);
  if (c.edgeToken && equal(token, c.edgeToken)) return "admin";
  if (c.verifier && token.split(".").length === 3) {
    const grant = await c.verifier.verify(token);
    const role = grant.role(database);
    if (role === "none") throw new Refusal(UNAUTHORIZED, `the token grants nothing in database ${JSON.stringify(database)}`, "no_role");
    return role;
  }
  throw new Refusal(UNAUTHORIZED, `wrong or missing token for database ${JSON.stringify(database)} (Authorization: Bearer)`, "wrong_token");
}

// bearer is the request's token: Authorization "Bearer T".
function bearer(request) {
  const a = request.headers.get("authorization") ?? "";
  return a.startsWith("Bearer ") ? a.slice("Bearer ".length) : "";
}

// equal compares two texts in time independent of where they differ.
function equal(got, want) {
  const a = new TextEncoder().encode(got);
  const b = new TextEncoder().encode(want);
  if (a.byteLength !== b.byteLength) return false;
  if (crypto.subtle.timingSafeEqual) return crypto.subtle.timingSafeEqual(a, b);
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

/** Verifier checks signed tokens against one set of bindings. */
class Verifier {
  #b;
  #hmac = null; // the HS256 key, once imported
  #keys = null; // [{kid, alg, key}] of the JWKS, once read
  #keysError = null; // why HILODB_JWKS could not be read
  #fetchedAt = -Infinity; // when HILODB_JWKS_URL was last asked for
  #refetchedAt = -Infinity; // when it was last asked again for an unknown kid

  constructor(bindings) {
    this.#b = bindings;
  }

  /** verify checks token and returns its grant, or throws a Refusal. */
  async verify(token) {
    const [h64, p64, s64] = token.split(".");
    const header = decodeJSON(h64);
    if (!header || !isB64(p64) || !isB64(s64)) throw refuse("malformed", "not a signed JWT");
    const alg = header.alg;
    if (typeof alg !== "string" || !Object.hasOwn(ALGORITHMS, alg)) {
      throw refuse("algorithm", "its algorithm is not one taken (HS256, EdDSA, ES256, RS256)");
    }
    const kid = typeof header.kid === "string" ? header.kid : "";
    const key = await this.#keyFor(alg, kid);
    const signed = new TextEncoder().encode(`${h64}.${p64}`);
    let ok = false;
    try {
      ok = await crypto.subtle.verify(ALGORITHMS[alg].verifyAs, key, b64(s64), signed);
    } catch {
      ok = false;
    }
    if (!ok) throw refuse("bad_signature", "its signature does not verify");
    const c = decodeJSON(p64);
    if (!c) throw refuse("malformed", "not a signed JWT");
    return this.#check(c);
  }

  // #check holds the verified claims c to the rules and returns the grant.
  #check(c) {
    const numeric = (v) => v === undefined || (typeof v === "number" && Number.isFinite(v));
    const aud = c.aud === undefined ? [] : typeof c.aud === "string" ? [c.aud] : c.aud;
    if (
      !numeric(c.exp) || !numeric(c.nbf) || !numeric(c.iat) ||
      (c.sub !== undefined && typeof c.sub !== "string") || (c.iss !== undefined && typeof c.iss !== "string") ||
      !Array.isArray(aud) || aud.some((a) => typeof a !== "string")
    ) {
      throw refuse("malformed", "not a signed JWT");
    }
    if (c.exp === undefined) throw refuse("no_expiry", "it has no exp");
    const { issuer, audience } = this.#b;
    if (issuer && c.iss !== issuer) throw refuse("wrong_issuer", `its iss is not ${JSON.stringify(issuer)}`);
    if (audience && !aud.includes(audience)) throw refuse("wrong_audience", `its aud does not name ${JSON.stringify(audience)}`);
    const now = Date.now() / 1000;
    if (c.nbf !== undefined && now + LEEWAY_S < c.nbf) throw refuse("not_yet_valid", "it is not valid yet");
    if (now - LEEWAY_S > c.exp) {
      const at = new Date(Math.trunc(c.exp) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
      throw refuse("expired", `it expired at ${at}`);
    }
    if (c.iat !== undefined && now + LEEWAY_S < c.iat) throw refuse("not_yet_valid", "it is not valid yet");
    const db = c.hilodb?.db;
    if (typeof db !== "object" || db === null || Array.isArray(db) || Object.keys(db).length === 0) {
      throw refuse("no_claim", 'it has no "hilodb": {"db": {...}} claim');
    }
    const sub = c.sub ?? "";
    const rules = [];
    for (const [pattern, name] of Object.entries(db)) {
      const role = ROLES.indexOf(name);
      if (role < 1) throw refuse("no_claim", `role ${JSON.stringify(name)} of ${JSON.stringify(pattern)} is not read, write or admin`);
      rules.push({ pattern: pattern.replaceAll("{sub}", sub), role });
    }
    return {
      subject: sub,
      // role is the highest role of the patterns naming database.
      role(database) {
        let best = 0;
        for (const r of rules) if ((r.pattern === database || r.pattern === "*") && r.role > best) best = r.role;
        return ROLES[best];
      },
    };
  }

  // #keyFor returns the key that verifies alg and kid, as the server's
  // keyFor picks it.
  async #keyFor(alg, kid) {
    if (alg === "HS256") {
      const secret = new TextEncoder().encode(this.#b.secret);
      if (secret.byteLength === 0) throw refuse("algorithm", "HS256 is not taken by this worker");
      if (secret.byteLength < 32) throw new Refusal(INTERNAL, `auth: HILODB_JWT_SECRET has ${secret.byteLength} bytes; at least 32`);
      this.#hmac ??= await crypto.subtle.importKey("raw", secret, ALGORITHMS.HS256.importAs, false, ["verify"]);
      return this.#hmac;
    }
    let keys = await this.#jwks(false);
    if (!keys) throw refuse("algorithm", `${alg} is not taken by this worker (no JWKS)`);
    let found = pick(keys, kid);
    if (found === undefined && kid !== "" && this.#b.jwksURL) {
      // A key added to the JWKS since it was fetched (a rotation).
      keys = await this.#jwks(true);
      found = pick(keys, kid);
    }
    if (found === null) throw refuse("unknown_key", "it names no kid, and the JWKS holds several keys");
    if (found === undefined) throw refuse("unknown_key", `no key has kid ${JSON.stringify(kid)}`);
    if (found.alg !== alg) throw refuse("algorithm", `key ${JSON.stringify(found.kid)} verifies ${found.alg}, not ${alg}`);
    return found.key;
  }

  // #jwks returns the JWKS's keys, null when none is bound. The URL's is
  // fetched once, then again (again true) for an unknown kid at most once a
  // minute; a document that cannot be fetched or read keeps the keys there
  // were, as the server keeps them when its JWKS file is half-written.
  async #jwks(again) {
    const { jwksURL, jwks } = this.#b;
    if (!jwksURL) {
      if (!jwks) return null;
      if (!this.#keys && !this.#keysError) {
        try {
          this.#keys = await readJWKS(jwks);
        } catch (err) {
          this.#keysError = err.message;
        }
      }
      if (this.#keysError) throw new Refusal(INTERNAL, `auth: HILODB_JWKS: ${this.#keysError}`);
      return this.#keys;
    }
    const now = Date.now();
    const due = this.#keys ? again && now - this.#refetchedAt >= REFETCH_MS : now - this.#fetchedAt >= RETRY_MS;
    if (due) {
      this.#fetchedAt = now;
      if (again) this.#refetchedAt = now;
      try {
        const res = await fetch(jwksURL, { headers: { accept: "application/json" }, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
        if (!res.ok) throw new Error(`status ${res.status}`);
        this.#keys = await readJWKS(await res.text());
      } catch (err) {
        console.error(`edge: fetch the JWKS at ${jwksURL}: ${err?.message ?? err}`);
        if (!this.#keys) throw new Refusal(UNAVAILABLE, `auth: the JWKS at HILODB_JWKS_URL cannot be fetched: ${err?.message ?? err}`);
      }
    }
    if (!this.#keys) throw new Refusal(UNAVAILABLE, "auth: the JWKS at HILODB_JWKS_URL cannot be fetched; retry");
    return this.#keys;
  }
}

// pick returns the key of kid; without a kid, the one key of a JWKS of
// one (null when it holds several); undefined when none fits.
function pick(keys, kid) {
  if (kid === "") return keys.length === 1 ? keys[0] : null;
  return keys.find((k) => k.kid === kid);
}

// readJWKS imports the public keys of a JWKS document; each key verifies
// the one algorithm its type fixes (an alg member must agree).
async function readJWKS(doc) {
  let set;
  try {
    set = JSON.parse(doc);
  } catch (err) {
    throw new Error(`parse JWKS: ${err.message}`);
  }
  if (!Array.isArray(set?.keys) || set.keys.length === 0) throw new Error("the JWKS holds no keys");
  const keys = [];
  for (const k of set.keys) {
    const kid = typeof k?.kid === "string" ? k.kid : "";
    const name = JSON.stringify(kid);
    let alg, jwk;
    if (typeof k !== "object" || k === null || "d" in k) {
      throw new Error(`JWKS key ${name}: not a public EdDSA, ES256 or RS256 key`);
    } else if (k.kty === "OKP" && k.crv === "Ed25519") {
      alg = "EdDSA";
      jwk = { kty: k.kty, crv: k.crv, x: k.x };
    } else if (k.kty === "EC") {
      if (k.crv !== "P-256") throw new Error(`JWKS key ${name}: only P-256 (ES256) EC keys are taken`);
      alg = "ES256";
      jwk = { kty: k.kty, crv: k.crv, x: k.x, y: k.y };
    } else if (k.kty === "RSA") {
      const bits = bitLength(typeof k.n === "string" && isB64(k.n) ? b64(k.n) : new Uint8Array());
      if (bits < 2048) throw new Error(`JWKS key ${name}: an RSA key of ${bits} bits; at least 2048`);
      alg = "RS256";
      jwk = { kty: k.kty, n: k.n, e: k.e };
    } else {
      throw new Error(`JWKS key ${name}: not a public EdDSA, ES256 or RS256 key`);
    }
    if (k.alg !== undefined && k.alg !== alg) throw new Error(`JWKS key ${name}: alg ${k.alg} does not fit its key (${alg})`);
    let key;
    try {
      key = await crypto.subtle.importKey("jwk", jwk, ALGORITHMS[alg].importAs, false, ["verify"]);
    } catch (err) {
      throw new Error(`JWKS key ${name}: ${err.message}`);
    }
    keys.push({ kid, alg, key });
  }
  return keys;
}

function bitLength(bytes) {
  let i = 0;
  while (i < bytes.length && bytes[i] === 0) i++;
  if (i === bytes.length) return 0;
  return (bytes.length - i - 1) * 8 + (32 - Math.clz32(bytes[i]));
}

const B64URL = /^[A-Za-z0-9_-]*$/;
const isB64 = (s) => typeof s === "string" && B64URL.test(s) && s.length % 4 !== 1;

// b64 decodes unpadded base64url.
function b64(s) {
  const bin = atob(s.replaceAll("-", "+").replaceAll("_", "/") + "===".slice((s.length + 3) % 4));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

// decodeJSON is the JSON object a token part holds, null for anything else.
function decodeJSON(part) {
  if (!isB64(part) || part === "") return null;
  try {
    const v = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(b64(part)));
    return typeof v === "object" && v !== null && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}
