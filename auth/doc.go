// Package auth verifies the signed tokens (JWT) an app's own backend
// issues, and turns their claims into what a token may do in each
// database: a Grant of a Role per database name.
//
// Keys: an HS256 secret (a file's bytes), and public keys for EdDSA,
// ES256 and RS256 from a JWKS document, re-read when its file changes, so
// keys rotate without a restart. The algorithm is pinned per key: an HS256
// token is checked only against the secret, never against a public key;
// a JWKS key verifies only tokens of its own algorithm (its "alg", or its
// type's: OKP Ed25519 → EdDSA, EC P-256 → ES256, RSA → RS256) and, when
// the set has more than one key, only tokens that name it by "kid".
// "alg": "none" is never accepted. A token must carry "exp"; "nbf" and
// "exp" are checked with at most a minute of clock skew, "iss" and "aud"
// when the verifier is configured with them.
//
// Claims: one claim, "hilodb", maps database names to roles:
//
//	{"sub": "alice", "exp": 1767225600,
//	 "hilodb": {"db": {"user-{sub}": "write", "shared": "read"}}}
//
// "{sub}" stands for the token's subject, "*" for every database. read
// may connect, pull, subscribe, get and query; write may also push and
// lease ids and identities; admin may also seed and lower identities, back
// up and see the dashboard for that database.
//
// Built on github.com/go-jose/go-jose/v4, which parses JWKS documents and
// refuses any algorithm it is not given.
//
// # Concurrency
//
// A Verifier is safe for concurrent use; a Grant is immutable.
package auth
