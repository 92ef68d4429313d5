package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Role is what a token may do in a database; each includes the ones below.
type Role uint8

// The roles.
const (
	None  Role = iota // nothing
	Read              // hello, pull, subscribe, get, query
	Write             // also push, lease ids and identities, define collections and indexes
	Admin             // also seed and lower identities, back up, the dashboard
)

var roleNames = [...]string{"none", "read", "write", "admin"}

// String returns the role's name.
func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return "none"
}

// ParseRole reads a role's name.
func ParseRole(s string) (Role, bool) {
	for i, n := range roleNames {
		if n == s && i > 0 {
			return Role(i), true
		}
	}
	return None, false
}

// Error is why a token was refused. Reason is a stable word for metrics
// and logs: malformed, algorithm, unknown_key, bad_signature, expired,
// not_yet_valid, no_expiry, wrong_issuer, wrong_audience, no_claim.
type Error struct {
	Reason string
	msg    string
}

func (e *Error) Error() string { return e.msg }

// Is makes errors.Is(err, ErrRefused) true for every *Error.
func (e *Error) Is(target error) bool { return target == ErrRefused }

// ErrRefused is what every refusal wraps.
var ErrRefused = errors.New("token refused")

func refuse(reason, format string, args ...any) *Error {
	return &Error{Reason: reason, msg: "token refused: " + fmt.Sprintf(format, args...)}
}

// MaxLeeway is the clock skew tolerated for exp and nbf.
const MaxLeeway = 60 * time.Second

// Config configures a Verifier.
type Config struct {
	// HS256Secret verifies HS256 tokens; empty: none are accepted.
	HS256Secret []byte
	// JWKSFile holds the public keys, re-read when it changes.
	JWKSFile string
	// JWKS is a JWKS document given directly (the edge binds one at
	// deploy); JWKSFile's keys, when both are set.
	JWKS []byte
	// Issuer and Audience, when set, must be the token's iss and among its aud.
	Issuer, Audience string
	// Leeway for exp and nbf; 0 or more than MaxLeeway: MaxLeeway.
	Leeway time.Duration
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

// Verifier checks tokens.
type Verifier struct {
	cfg  Config
	keys atomic.Pointer[keySet]

	mu      sync.Mutex // over the file's reloads
	checked time.Time  // when the file was last looked at
	modTime time.Time
	size    int64
}

// keySet is the public keys of one JWKS document.
type keySet struct {
	keys []jose.JSONWebKey
}

// NewVerifier returns a verifier for cfg. It fails when the JWKS is not
// valid or holds a key of an algorithm it does not take.
func NewVerifier(cfg Config) (*Verifier, error) {
	if cfg.Leeway <= 0 || cfg.Leeway > MaxLeeway {
		cfg.Leeway = MaxLeeway
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	v := &Verifier{cfg: cfg}
	switch {
	case cfg.JWKSFile != "":
		if err := v.reload(true); err != nil {
			return nil, err
		}
	case len(cfg.JWKS) > 0:
		ks, err := parseJWKS(cfg.JWKS)
		if err != nil {
			return nil, err
		}
		v.keys.Store(ks)
	}
	if len(cfg.HS256Secret) == 0 && v.keys.Load() == nil {
		return nil, errors.New("auth: no HS256 secret and no JWKS: nothing verifies a token")
	}
	if n := len(cfg.HS256Secret); n > 0 && n < 32 {
		return nil, fmt.Errorf("auth: the HS256 secret has %d bytes; at least 32", n)
	}
	return v, nil
}

// reload reads the JWKS file again when it changed (looking at most once
// a second unless forced). A file that does not parse keeps the keys
// there were: a rotation caught half-written never drops a key in use.
func (v *Verifier) reload(force bool) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := time.Now()
	if !force && now.Sub(v.checked) < time.Second {
		return nil
	}
	v.checked = now
	fi, err := os.Stat(v.cfg.JWKSFile)
	if err != nil {
		return fmt.Errorf("auth: read JWKS: %w", err)
	}
	if !force && fi.ModTime().Equal(v.modTime) && fi.Size() == v.size {
		return nil
	}
	b, err := os.ReadFile(v.cfg.JWKSFile)
	if err != nil {
		return fmt.Errorf("auth: read JWKS: %w", err)
	}
	ks, err := parseJWKS(b)
	if err != nil {
		return err
	}
	v.keys.Store(ks)
	v.modTime, v.size = fi.ModTime(), fi.Size()
	return nil
}

// parseJWKS reads a JWKS document of public keys of the algorithms taken.
func parseJWKS(b []byte) (*keySet, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("auth: parse JWKS: %w", err)
	}
	if len(set.Keys) == 0 {
		return nil, errors.New("auth: the JWKS holds no keys")
	}
	for i := range set.Keys {
		k := &set.Keys[i]
		alg, err := keyAlgorithm(k)
		if err != nil {
			return nil, err
		}
		k.Algorithm = alg
	}
	return &keySet{keys: set.Keys}, nil
}

// keyAlgorithm is the one algorithm k verifies.
func keyAlgorithm(k *jose.JSONWebKey) (string, error) {
	var byType string
	switch pub := k.Key.(type) {
	case ed25519.PublicKey:
		byType = string(jose.EdDSA)
	case *ecdsa.PublicKey:
		if pub.Curve != elliptic.P256() {
			return "", fmt.Errorf("auth: JWKS key %q: only P-256 (ES256) EC keys are taken", k.KeyID)
		}
		byType = string(jose.ES256)
	case *rsa.PublicKey:
		if pub.N.BitLen() < 2048 {
			return "", fmt.Errorf("auth: JWKS key %q: an RSA key of %d bits; at least 2048", k.KeyID, pub.N.BitLen())
		}
		byType = string(jose.RS256)
	default:
		return "", fmt.Errorf("auth: JWKS key %q: not a public EdDSA, ES256 or RS256 key", k.KeyID)
	}
	if k.Algorithm != "" && k.Algorithm != byType {
		return "", fmt.Errorf("auth: JWKS key %q: alg %s does not fit its key (%s)", k.KeyID, k.Algorithm, byType)
	}
	return byType, nil
}

var algorithms = []jose.SignatureAlgorithm{jose.HS256, jose.EdDSA, jose.ES256, jose.RS256}

// hilodbClaim is the claim that maps databases to roles.
type hilodbClaim struct {
	DB map[string]string `json:"db"`
}

type claims struct {
	jwt.Claims
	Hilodb *hilodbClaim `json:"hilodb"`
}

// Verify checks token and returns what it grants. Every refusal is an
// *Error wrapping ErrRefused.
func (v *Verifier) Verify(token string) (*Grant, error) {
	if v.cfg.JWKSFile != "" {
		_ = v.reload(false) // a failed reread keeps the keys there were
	}
	tok, err := jwt.ParseSigned(token, algorithms)
	if err != nil {
		if strings.Contains(err.Error(), "algorithm") {
			return nil, refuse("algorithm", "its algorithm is not one taken (HS256, EdDSA, ES256, RS256)")
		}
		return nil, refuse("malformed", "not a signed JWT")
	}
	if len(tok.Headers) != 1 {
		return nil, refuse("malformed", "one signature expected")
	}
	h := tok.Headers[0]
	key, rerr := v.keyFor(h.Algorithm, h.KeyID)
	if rerr != nil {
		return nil, rerr
	}
	var c claims
	if err := tok.Claims(key, &c); err != nil {
		return nil, refuse("bad_signature", "its signature does not verify")
	}
	if c.Expiry == nil {
		return nil, refuse("no_expiry", "it has no exp")
	}
	exp := jwt.Expected{Time: v.cfg.Now()}
	if v.cfg.Issuer != "" {
		exp.Issuer = v.cfg.Issuer
	}
	if v.cfg.Audience != "" {
		exp.AnyAudience = jwt.Audience{v.cfg.Audience}
	}
	if err := c.Claims.ValidateWithLeeway(exp, v.cfg.Leeway); err != nil {
		switch {
		case errors.Is(err, jwt.ErrExpired):
			return nil, refuse("expired", "it expired at %s", c.Expiry.Time().UTC().Format(time.RFC3339))
		case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
			return nil, refuse("not_yet_valid", "it is not valid yet")
		case errors.Is(err, jwt.ErrInvalidIssuer):
			return nil, refuse("wrong_issuer", "its iss is not %q", v.cfg.Issuer)
		case errors.Is(err, jwt.ErrInvalidAudience):
			return nil, refuse("wrong_audience", "its aud does not name %q", v.cfg.Audience)
		}
		return nil, refuse("malformed", "%v", err)
	}
	if c.Hilodb == nil || len(c.Hilodb.DB) == 0 {
		return nil, refuse("no_claim", `it has no "hilodb": {"db": {...}} claim`)
	}
	g := &Grant{Subject: c.Subject, Expiry: c.Expiry.Time()}
	for pattern, role := range c.Hilodb.DB {
		r, ok := ParseRole(role)
		if !ok {
			return nil, refuse("no_claim", "role %q of %q is not read, write or admin", role, pattern)
		}
		g.rules = append(g.rules, rule{pattern: strings.ReplaceAll(pattern, "{sub}", c.Subject), role: r, subject: strings.Contains(pattern, "{sub}")})
	}
	return g, nil
}

// keyFor returns the key that verifies alg and kid.
func (v *Verifier) keyFor(alg, kid string) (any, *Error) {
	if alg == string(jose.HS256) {
		if len(v.cfg.HS256Secret) == 0 {
			return nil, refuse("algorithm", "HS256 is not taken by this server")
		}
		return v.cfg.HS256Secret, nil
	}
	ks := v.keys.Load()
	if ks == nil {
		return nil, refuse("algorithm", "%s is not taken by this server (no JWKS)", alg)
	}
	var found *jose.JSONWebKey
	for i := range ks.keys {
		k := &ks.keys[i]
		if kid != "" && k.KeyID != kid {
			continue
		}
		if kid == "" && len(ks.keys) > 1 {
			return nil, refuse("unknown_key", "it names no kid, and the JWKS holds several keys")
		}
		found = k
		break
	}
	if found == nil {
		return nil, refuse("unknown_key", "no key has kid %q", kid)
	}
	if found.Algorithm != alg {
		return nil, refuse("algorithm", "key %q verifies %s, not %s", found.KeyID, found.Algorithm, alg)
	}
	return found.Key, nil
}

// Grant is what a verified token may do.
type Grant struct {
	Subject string
	Expiry  time.Time
	rules   []rule
}

type rule struct {
	pattern string // {sub} replaced
	role    Role
	subject bool // the pattern named {sub}: a database it makes on first use counts against the subject
}

// Role returns what the grant may do in db: the highest role of the
// patterns that name it ("*" names every database).
func (g *Grant) Role(db string) Role {
	best := None
	for _, r := range g.rules {
		if (r.pattern == db || r.pattern == "*") && r.role > best {
			best = r.role
		}
	}
	return best
}

// Owns reports whether db is named by one of the grant's {sub} patterns:
// a database its subject may make on first use.
func (g *Grant) Owns(db string) bool {
	for _, r := range g.rules {
		if r.subject && r.pattern == db {
			return true
		}
	}
	return false
}
