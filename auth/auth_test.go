package auth_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/hilodb/hilodb/auth"
)

type keys struct {
	secret []byte
	ed     ed25519.PrivateKey
	ec     *ecdsa.PrivateKey
	rsa    *rsa.PrivateKey
}

func newKeys(t *testing.T) keys {
	t.Helper()
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return keys{secret: []byte(strings.Repeat("s3cret-", 6)), ed: ed, ec: ec, rsa: rk}
}

func (k keys) jwks(t *testing.T) []byte {
	t.Helper()
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: k.ed.Public(), KeyID: "ed", Algorithm: "EdDSA"},
		{Key: &k.ec.PublicKey, KeyID: "ec", Algorithm: "ES256"},
		{Key: &k.rsa.PublicKey, KeyID: "rsa"}, // its alg from its type
	}}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sign(t *testing.T, alg jose.SignatureAlgorithm, key any, kid string, claims any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

var now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func claims(mod ...func(map[string]any)) map[string]any {
	c := map[string]any{
		"sub": "alice", "iss": "https://auth.example", "aud": "hilodb",
		"exp": now.Add(time.Hour).Unix(), "nbf": now.Add(-time.Minute).Unix(),
		"hilodb": map[string]any{"db": map[string]any{"user-{sub}": "write", "shared": "read"}},
	}
	for _, m := range mod {
		m(c)
	}
	return c
}

func newVerifier(t *testing.T, k keys) (*auth.Verifier, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, k.jwks(t), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewVerifier(auth.Config{HS256Secret: k.secret, JWKSFile: file, Issuer: "https://auth.example", Audience: "hilodb", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return v, file
}

func TestVerifyAccepts(t *testing.T) {
	k := newKeys(t)
	v, _ := newVerifier(t, k)
	for name, tok := range map[string]string{
		"HS256": sign(t, jose.HS256, k.secret, "", claims()),
		"EdDSA": sign(t, jose.EdDSA, k.ed, "ed", claims()),
		"ES256": sign(t, jose.ES256, k.ec, "ec", claims()),
		"RS256": sign(t, jose.RS256, k.rsa, "rsa", claims()),
	} {
		g, err := v.Verify(tok)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if g.Subject != "alice" || g.Role("user-alice") != auth.Write || g.Role("shared") != auth.Read || g.Role("user-bob") != auth.None {
			t.Fatalf("%s: grant %+v", name, g)
		}
		if !g.Owns("user-alice") || g.Owns("shared") {
			t.Fatalf("%s: ownership wrong", name)
		}
	}
}

func TestVerifyRefuses(t *testing.T) {
	k := newKeys(t)
	v, _ := newVerifier(t, k)
	good := sign(t, jose.EdDSA, k.ed, "ed", claims())
	parts := strings.Split(good, ".")
	enc := base64.RawURLEncoding.EncodeToString
	// A payload changed after signing.
	payload, _ := json.Marshal(claims(func(c map[string]any) { c["sub"] = "mallory" }))
	tampered := parts[0] + "." + enc(payload) + "." + parts[2]
	// alg none, no signature.
	none := enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	// HS256 keyed with the public key's bytes, the classic confusion.
	pubAsSecret := sign(t, jose.HS256, []byte(k.ed.Public().(ed25519.PublicKey)), "ed", claims())
	// The same with an HS256 secret of the attacker's own.
	otherSecret := sign(t, jose.HS256, []byte(strings.Repeat("x", 40)), "", claims())
	_, otherEd, _ := ed25519.GenerateKey(rand.Reader)
	tests := []struct {
		name, token, reason string
	}{
		{"expired", sign(t, jose.EdDSA, k.ed, "ed", claims(func(c map[string]any) { c["exp"] = now.Add(-2 * time.Minute).Unix() })), "expired"},
		{"not yet valid", sign(t, jose.EdDSA, k.ed, "ed", claims(func(c map[string]any) { c["nbf"] = now.Add(2 * time.Minute).Unix() })), "not_yet_valid"},
		{"no exp", sign(t, jose.EdDSA, k.ed, "ed", claims(func(c map[string]any) { delete(c, "exp") })), "no_expiry"},
		{"wrong aud", sign(t, jose.EdDSA, k.ed, "ed", claims(func(c map[string]any) { c["aud"] = "other" })), "wrong_audience"},
		{"wrong iss", sign(t, jose.EdDSA, k.ed, "ed", claims(func(c map[string]any) { c["iss"] = "https://evil" })), "wrong_issuer"},
		{"unknown kid", sign(t, jose.EdDSA, otherEd, "other", claims()), "unknown_key"},
		{"other key, known kid", sign(t, jose.EdDSA, otherEd, "ed", claims()), "bad_signature"},
		{"kid of another algorithm", sign(t, jose.ES256, k.ec, "ed", claims()), "algorithm"},
		{"no kid with several keys", sign(t, jose.EdDSA, k.ed, "", claims()), "unknown_key"},
		{"tampered", tampered, "bad_signature"},
		{"alg none", none, "algorithm"},
		{"HS256 with the public key", pubAsSecret, "bad_signature"},
		{"HS256 with another secret", otherSecret, "bad_signature"},
		{"no claim", sign(t, jose.EdDSA, k.ed, "ed", claims(func(c map[string]any) { delete(c, "hilodb") })), "no_claim"},
		{"bad role", sign(t, jose.EdDSA, k.ed, "ed", claims(func(c map[string]any) {
			c["hilodb"] = map[string]any{"db": map[string]any{"x": "owner"}}
		})), "no_claim"},
		{"garbage", "not.a.jwt", "malformed"},
	}
	for _, tt := range tests {
		_, err := v.Verify(tt.token)
		var ae *auth.Error
		if !errors.As(err, &ae) || ae.Reason != tt.reason || !errors.Is(err, auth.ErrRefused) {
			t.Errorf("%s: %v, want reason %s", tt.name, err, tt.reason)
		}
	}
}

// TestJWKSRotates: a rewritten file's keys verify at once; a file caught
// half-written keeps the keys there were.
func TestJWKSRotates(t *testing.T) {
	k := newKeys(t)
	v, file := newVerifier(t, k)
	old := sign(t, jose.EdDSA, k.ed, "ed", claims())
	_, ed2, _ := ed25519.GenerateKey(rand.Reader)
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: ed2.Public(), KeyID: "ed2", Algorithm: "EdDSA"}}})
	if err := os.WriteFile(file, set[:len(set)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if _, err := v.Verify(old); err != nil {
		t.Fatalf("a half-written JWKS dropped the keys: %v", err)
	}
	if err := os.WriteFile(file, set, 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if _, err := v.Verify(sign(t, jose.EdDSA, ed2, "ed2", claims())); err != nil {
		t.Fatalf("the new key: %v", err)
	}
	if _, err := v.Verify(old); err == nil {
		t.Fatal("a key taken out of the JWKS still verifies")
	}
}

func TestNewVerifierRefusesWeakSetups(t *testing.T) {
	if _, err := auth.NewVerifier(auth.Config{}); err == nil {
		t.Error("no keys at all accepted")
	}
	if _, err := auth.NewVerifier(auth.Config{HS256Secret: []byte("short")}); err == nil {
		t.Error("a 5-byte HS256 secret accepted")
	}
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	b, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &small.PublicKey, KeyID: "r"}}})
	if _, err := auth.NewVerifier(auth.Config{JWKS: b}); err == nil {
		t.Error("a 1024-bit RSA key accepted")
	}
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	b, _ = json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &ec.PublicKey, KeyID: "e", Algorithm: "RS256"}}})
	if _, err := auth.NewVerifier(auth.Config{JWKS: b}); err == nil {
		t.Error("an EC key claiming RS256 accepted")
	}
}

func TestWildcardAndHighestRole(t *testing.T) {
	k := newKeys(t)
	v, _ := newVerifier(t, k)
	g, err := v.Verify(sign(t, jose.HS256, k.secret, "", claims(func(c map[string]any) {
		c["hilodb"] = map[string]any{"db": map[string]any{"*": "read", "ops": "admin"}}
	})))
	if err != nil {
		t.Fatal(err)
	}
	if g.Role("anything") != auth.Read || g.Role("ops") != auth.Admin {
		t.Fatalf("roles: %v %v", g.Role("anything"), g.Role("ops"))
	}
}
