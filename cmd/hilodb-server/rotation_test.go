package main_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/internal/servertest"
)

// edKey is one signing key of a JWKS.
type edKey struct {
	kid  string
	priv ed25519.PrivateKey
}

func newEdKey(t *testing.T, kid string) edKey {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return edKey{kid, priv}
}

// writeJWKS rewrites file in place (not renamed over) with keys' public
// halves.
func writeJWKS(t *testing.T, file string, keys ...edKey) {
	t.Helper()
	var set jose.JSONWebKeySet
	for _, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.kid, Algorithm: "EdDSA"})
	}
	b, _ := json.Marshal(set)
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (k edKey) sign(t *testing.T, sub string) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: k.priv}, (&jose.SignerOptions{}).WithHeader("kid", k.kid))
	if err != nil {
		t.Error(err)
		return ""
	}
	tok, err := jwt.Signed(s).Claims(map[string]any{"sub": sub, "exp": time.Now().Add(time.Hour).Unix(),
		"hilodb": map[string]any{"db": map[string]string{"user-{sub}": "write"}}}).Serialize()
	if err != nil {
		t.Error(err)
	}
	return tok
}

// TestJWKSRotationUnderLoad: the JWKS file is rewritten twice while
// clients lease ids and new clients connect: k1 alone, k1 and k2 (tokens
// are then signed with k2), k2 alone. No accepted connection is dropped,
// every new connection with a current key is accepted, and once k1 is
// gone a token signed with it is refused.
func TestJWKSRotationUnderLoad(t *testing.T) {
	bin := servertest.BuildServer(t)
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	k1, k2 := newEdKey(t, "k1"), newEdKey(t, "k2")
	writeJWKS(t, jwks, k1)
	addr := servertest.FreeAddr(t)
	startProc(t, bin, addr, "-data", t.TempDir(), "-jwks-file", jwks, "-rate", "-1")

	var current atomic.Pointer[edKey]
	current.Store(&k1)
	tokenFunc := func(sub string) func(context.Context) (string, error) {
		return func(context.Context) (string, error) { return current.Load().sign(t, sub), nil }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stop := make(chan struct{})
	var stopped atomic.Bool // the clients' own Close reports them down too
	var drops, calls, dials atomic.Int64
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := client.New(wsURL(addr), client.Options{Database: "user-u" + string(rune('a'+i)), TokenFunc: tokenFunc("u" + string(rune('a'+i))),
				OnStatus: func(up bool) {
					if !up && !stopped.Load() {
						drops.Add(1)
					}
				}})
			defer c.Close()
			var last idgen.Range
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := c.NextRange(ctx, "orders", last)
				if err != nil {
					t.Errorf("a lease during the rotation: %v", err)
					return
				}
				last = r
				calls.Add(1)
			}
		}()
	}
	// New connections throughout, each with a token of the current key.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			c, err := client.Dial(ctx, wsURL(addr), client.Options{Database: "user-new", TokenFunc: tokenFunc("new")})
			if err != nil {
				t.Errorf("dial %d during the rotation: %v", n, err)
				return
			}
			c.Close()
			dials.Add(1)
		}
	}()
	time.Sleep(1500 * time.Millisecond)
	writeJWKS(t, jwks, k1, k2)
	time.Sleep(1500 * time.Millisecond) // the server reads the file at most once a second
	current.Store(&k2)
	time.Sleep(1500 * time.Millisecond)
	writeJWKS(t, jwks, k2)
	time.Sleep(1500 * time.Millisecond)
	stopped.Store(true)
	close(stop)
	wg.Wait()
	if drops.Load() != 0 {
		t.Errorf("%d accepted connections dropped", drops.Load())
	}
	if calls.Load() < 100 || dials.Load() < 20 {
		t.Errorf("too light a load to tell: %d leases, %d dials", calls.Load(), dials.Load())
	}
	_, err := client.Dial(ctx, wsURL(addr), client.Options{Database: "user-old", Token: k1.sign(t, "old")})
	var we *client.Error
	if !errors.As(err, &we) || we.Code != "unauthorized" {
		t.Fatalf("a token of the removed key: %v", err)
	}
	if _, err := client.Dial(ctx, wsURL(addr), client.Options{Database: "user-new", Token: k2.sign(t, "new")}); err != nil {
		t.Fatalf("a token of the new key: %v", err)
	}
}
