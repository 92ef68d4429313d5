package syncserver_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/hilodb/hilodb/auth"
	"github.com/hilodb/hilodb/syncserver"
)

// issuer signs tokens as an app's backend would.
type issuer struct {
	t      *testing.T
	secret []byte
	ed     ed25519.PrivateKey
	jwks   string
}

func newIssuer(t *testing.T) *issuer {
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: ed.Public(), KeyID: "k1", Algorithm: "EdDSA"}}})
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, set, 0o600); err != nil {
		t.Fatal(err)
	}
	return &issuer{t: t, secret: []byte(strings.Repeat("0123456789abcdef", 3)), ed: ed, jwks: file}
}

func (is *issuer) verifier() *auth.Verifier {
	v, err := auth.NewVerifier(auth.Config{HS256Secret: is.secret, JWKSFile: is.jwks, Audience: "hilodb"})
	if err != nil {
		is.t.Fatal(err)
	}
	return v
}

// token signs claims for sub with dbs, valid for ttl.
func (is *issuer) token(sub string, dbs map[string]string, ttl time.Duration, mod ...func(map[string]any)) string {
	c := map[string]any{"sub": sub, "aud": "hilodb", "exp": time.Now().Add(ttl).Unix(), "hilodb": map[string]any{"db": dbs}}
	for _, m := range mod {
		m(c)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: is.ed}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
	if err != nil {
		is.t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(c).Serialize()
	if err != nil {
		is.t.Fatal(err)
	}
	return tok
}

func helloWith(r *raw, db, token string) map[string]any {
	return r.call(fmt.Sprintf(`{"id":1,"op":"hello","db":%q,"token":%q,"node":""}`, db, token))
}

var users = map[string]string{"user-{sub}": "write", "shared": "read"}

// TestSignedTokensOnTheWebsocket: each user reaches only their own
// database; a shared database is read-only, every push refused item by
// item with nothing stored; bad tokens are refused.
func TestSignedTokensOnTheWebsocket(t *testing.T) {
	is := newIssuer(t)
	ts := startServer(t, syncserver.Config{Verifier: is.verifier()})
	alice, bob := is.token("alice", users, time.Hour), is.token("bob", users, time.Hour)

	a := dialRaw(t, ts)
	if got := helloWith(a, "user-alice", alice); got["ok"] != true {
		t.Fatalf("alice's own database: %v", got)
	}
	if got := a.call(`{"id":2,"op":"push","changes":[{"id":"notes/1","baseRev":"","rev":"` + testRev(1) + `","doc":{"_id":"notes/1","v":1}}]}`); got["ok"] != true || strings.Contains(fmt.Sprint(got), "error") {
		t.Fatalf("alice writes: %v", got)
	}
	if got := helloWith(dialRaw(t, ts), "user-bob", alice); errCode(got) != "unauthorized" {
		t.Fatalf("alice into bob's database: %v", got)
	}
	if got := helloWith(dialRaw(t, ts), "user-alice", bob); errCode(got) != "unauthorized" {
		t.Fatalf("bob into alice's database: %v", got)
	}
	// The shared database: read-only for both.
	sh := dialRaw(t, ts)
	if got := helloWith(sh, "shared", bob); got["ok"] != true {
		t.Fatalf("bob reads shared: %v", got)
	}
	got := sh.call(`{"id":2,"op":"push","changes":[{"id":"n/1","baseRev":"","rev":"` + testRev(1) + `","doc":{"_id":"n/1"}},{"id":"n/2","baseRev":"","rev":"` + testRev(2) + `","doc":{"_id":"n/2"}}]}`)
	results, _ := got["results"].([]any)
	if len(results) != 2 {
		t.Fatalf("push to shared: %v", got)
	}
	for _, r := range results {
		e, _ := r.(map[string]any)["error"].(map[string]any)
		if e["code"] != "forbidden" {
			t.Fatalf("push item from a read token: %v", r)
		}
	}
	if got := sh.call(`{"id":3,"op":"pull","since":0,"limit":10}`); len(got["changes"].([]any)) != 0 {
		t.Fatalf("a refused push stored something: %v", got)
	}
	for _, op := range []string{
		`{"id":4,"op":"hilo.next","tag":"n","lastSize":0,"lastMax":0,"lastRangeAt":""}`,
		`{"id":5,"op":"identity.next","name":"n"}`,
		`{"id":6,"op":"collection.define","name":"n"}`,
		`{"id":7,"op":"index.define","collection":"n","index":{"fields":["a"]}}`,
	} {
		if got := sh.call(op); errCode(got) != "forbidden" {
			t.Errorf("%s with a read token: %v", op, got)
		}
	}
	// Refused tokens, each with its reason counted.
	hdr := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`))
	body := base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf(`{"sub":"alice","aud":"hilodb","exp":%d,"hilodb":{"db":{"*":"admin"}}}`, time.Now().Add(time.Hour).Unix())))
	parts := strings.Split(alice, ".")
	for name, tok := range map[string]string{
		"expired":       is.token("alice", users, -2*time.Minute),
		"not yet valid": is.token("alice", users, time.Hour, func(c map[string]any) { c["nbf"] = time.Now().Add(5 * time.Minute).Unix() }),
		"wrong aud":     is.token("alice", users, time.Hour, func(c map[string]any) { c["aud"] = "other" }),
		"alg none":      hdr + "." + body + ".",
		"tampered":      parts[0] + "." + body + "." + parts[2],
		"static guess":  "letmein",
	} {
		if got := helloWith(dialRaw(t, ts), "user-alice", tok); errCode(got) != "unauthorized" {
			t.Errorf("%s: %v", name, got)
		}
	}
	metrics := httpGet(t, ts.hs.URL+"/metrics", "")
	for _, reason := range []string{"expired", "not_yet_valid", "wrong_audience", "algorithm", "bad_signature", "wrong_token", "no_role"} {
		if !strings.Contains(metrics, `hilodb_auth_refusals_total{reason="`+reason+`"}`) {
			t.Errorf("metrics lack refusals for %s", reason)
		}
	}
}

func httpGet(t *testing.T, url, token string) string {
	t.Helper()
	code, body := httpDo(t, http.MethodGet, url, token, "")
	if code != 200 {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	return body
}

func httpDo(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSignedTokensOnTheHTTPDoors: the same tokens and roles on the
// RavenDB and ArangoDB doors.
func TestSignedTokensOnTheHTTPDoors(t *testing.T) {
	is := newIssuer(t)
	ts := startServer(t, syncserver.Config{Verifier: is.verifier()})
	alice := is.token("alice", users, time.Hour)
	bob := is.token("bob", users, time.Hour)
	base := ts.hs.URL
	// ArangoDB: alice writes her own database; bob cannot; shared is read-only.
	if code, b := httpDo(t, http.MethodPost, base+"/_db/user-alice/_api/collection", alice, `{"name":"notes"}`); code != 200 {
		t.Fatalf("alice creates a collection: %d %s", code, b)
	}
	if code, b := httpDo(t, http.MethodPost, base+"/_db/user-alice/_api/document/notes", alice, `{"_key":"a","v":1}`); code/100 != 2 {
		t.Fatalf("alice inserts: %d %s", code, b)
	}
	if code, _ := httpDo(t, http.MethodGet, base+"/_db/user-alice/_api/document/notes/a", bob, ""); code != 401 {
		t.Fatalf("bob reads alice's document: %d", code)
	}
	if code, _ := httpDo(t, http.MethodGet, base+"/_db/user-alice/_api/document/notes/a", "", ""); code != 401 {
		t.Fatalf("no token: %d", code)
	}
	if code, b := httpDo(t, http.MethodPost, base+"/_db/shared/_api/document/notes", bob, `{"_key":"b"}`); code != 403 {
		t.Fatalf("a read token inserts into shared: %d %s", code, b)
	}
	// RavenDB: the same rules.
	if code, b := httpDo(t, http.MethodPut, base+"/databases/user-alice/docs?id=notes/r1", alice, `{"v":1,"@metadata":{"@collection":"Notes"}}`); code/100 != 2 {
		t.Fatalf("alice puts through the RavenDB door: %d %s", code, b)
	}
	if code, _ := httpDo(t, http.MethodGet, base+"/databases/user-alice/docs?id=notes/r1", bob, ""); code != 401 {
		t.Fatalf("bob through the RavenDB door: %d", code)
	}
	if code, b := httpDo(t, http.MethodPut, base+"/databases/shared/docs?id=notes/r2", bob, `{"v":1}`); code != 403 {
		t.Fatalf("a read token puts into shared: %d %s", code, b)
	}
	expired := is.token("alice", users, -5*time.Minute)
	if code, _ := httpDo(t, http.MethodGet, base+"/_db/user-alice/_api/document/notes/a", expired, ""); code != 401 {
		t.Fatalf("an expired token: %d", code)
	}
}

// TestTokenRefreshOnALiveConnection: a connection is told before its
// token expires, takes a fresh one with the auth op and goes on; one that
// does not is closed at expiry.
func TestTokenRefreshOnALiveConnection(t *testing.T) {
	is := newIssuer(t)
	ts := startServer(t, syncserver.Config{Verifier: is.verifier()})
	r := dialRaw(t, ts)
	// A token that lives 4 s (exp is whole seconds: 3 to 4) is warned of
	// halfway through its life.
	if got := helloWith(r, "user-alice", is.token("alice", users, 4*time.Second)); got["ok"] != true {
		t.Fatal(got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, data, err := r.ws.Read(ctx)
	if err != nil || !strings.Contains(string(data), `"op":"token_expiring"`) {
		t.Fatalf("no warning before expiry: %s %v", data, err)
	}
	if got := r.call(fmt.Sprintf(`{"id":2,"op":"auth","token":%q}`, is.token("bob", users, time.Hour))); errCode(got) != "unauthorized" {
		t.Fatalf("a token for another database: %v", got)
	}
	if got := r.call(fmt.Sprintf(`{"id":3,"op":"auth","token":%q}`, is.token("alice", users, time.Hour))); got["ok"] != true || got["role"] != "write" {
		t.Fatalf("a fresh token: %v", got)
	}
	if got := r.call(`{"id":4,"op":"push","changes":[{"id":"n/1","baseRev":"","rev":"` + testRev(1) + `","doc":{"_id":"n/1"}}]}`); got["ok"] != true || strings.Contains(fmt.Sprint(got), "error") {
		t.Fatalf("push after the refresh: %v", got)
	}
	// A connection that lets its token run out is closed.
	r2 := dialRaw(t, ts)
	if got := helloWith(r2, "user-alice", is.token("alice", users, 2*time.Second)); got["ok"] != true {
		t.Fatal(got)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	sawUnauthorized := false
	for {
		_, data, err := r2.ws.Read(ctx2)
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
				t.Fatalf("closed with %v", err)
			}
			break
		}
		sawUnauthorized = sawUnauthorized || strings.Contains(string(data), `"unauthorized"`)
	}
	if !sawUnauthorized {
		t.Fatal("closed without saying the token expired")
	}
}

// TestDatabasesPerSubject: a subject makes its own databases on first
// use, up to the limit.
func TestDatabasesPerSubject(t *testing.T) {
	is := newIssuer(t)
	ts := startServer(t, syncserver.Config{Verifier: is.verifier(), MaxDatabasesPerSubject: 2})
	tok := is.token("carol", map[string]string{"{sub}-a": "write", "{sub}-b": "write", "{sub}-c": "write"}, time.Hour)
	for i, db := range []string{"carol-a", "carol-b", "carol-a"} {
		if got := helloWith(dialRaw(t, ts), db, tok); got["ok"] != true {
			t.Fatalf("%d %s: %v", i, db, got)
		}
	}
	if got := helloWith(dialRaw(t, ts), "carol-c", tok); errCode(got) != "forbidden" {
		t.Fatalf("a third database: %v", got)
	}
}
