//go:build !js

package client_test

import (
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// signedServer runs the real server binary checking HS256 tokens signed
// with the secret it returns.
func signedServer(t *testing.T) (url string, secret []byte) {
	t.Helper()
	secret = []byte(strings.Repeat("s3cret-for-tests", 3))
	file := filepath.Join(t.TempDir(), "hs256")
	if err := os.WriteFile(file, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := servertest.BuildServer(t)
	addr := servertest.FreeAddr(t)
	servertest.StartProc(t, bin, addr, 30*time.Second, "-data", t.TempDir(), "-jwt-hs256-file", file, "-rate", "-1")
	return "ws://" + addr + "/v1/sync", secret
}

// sign makes a token for sub, writer of user-{sub}, that expires after ttl.
func sign(t *testing.T, secret []byte, sub string, ttl time.Duration) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: secret}, nil)
	if err != nil {
		t.Error(err)
		return ""
	}
	claims := map[string]any{"sub": sub, "exp": time.Now().Add(ttl).Unix(),
		"hilodb": map[string]any{"db": map[string]string{"user-{sub}": "write"}}}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Error(err)
	}
	return tok
}

// TestTokenFuncRefreshesALiveConnection: tokens that live 4 s are
// refreshed on the live connection while calls go on: no call fails, the
// connection is never lost, and no number is handed out twice.
func TestTokenFuncRefreshesALiveConnection(t *testing.T) {
	url, secret := signedServer(t)
	var made, ups, downs atomic.Int64
	c := client.New(url, client.Options{Database: "user-alice",
		TokenFunc: func(ctx context.Context) (string, error) {
			made.Add(1)
			return sign(t, secret, "alice", 4*time.Second), nil
		},
		OnStatus: func(up bool) {
			if up {
				ups.Add(1)
			} else {
				downs.Add(1)
			}
		},
	})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	end := time.Now().Add(9 * time.Second) // past two expiries of an unrefreshed token
	var mu sync.Mutex
	var ranges []idgen.Range
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last idgen.Range
			for time.Now().Before(end) {
				r, err := c.NextRange(ctx, "orders", last)
				if err != nil {
					t.Errorf("a call during the refreshes: %v", err)
					return
				}
				last = r
				mu.Lock()
				ranges = append(ranges, r)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ups.Load() != 1 || downs.Load() != 0 {
		t.Errorf("connections: %d up, %d down; want 1 up, none lost", ups.Load(), downs.Load())
	}
	if made.Load() < 3 {
		t.Errorf("tokens made: %d, want a refresh every ~2 s", made.Load())
	}
	slices.SortFunc(ranges, func(a, b idgen.Range) int { return cmp.Compare(a.Low, b.Low) })
	for i := 1; i < len(ranges); i++ {
		if ranges[i].Low <= ranges[i-1].High {
			t.Fatalf("ranges %d-%d and %d-%d overlap: numbers handed out twice", ranges[i-1].Low, ranges[i-1].High, ranges[i].Low, ranges[i].High)
		}
	}
	if len(ranges) < 100 {
		t.Fatalf("only %d ranges leased: the load was too light to tell", len(ranges))
	}
}

// TestTokenFuncAfterUnauthorized: a hello refused as unauthorized (the
// token expired before it was sent) is tried once more with a fresh
// token; an error from the function fails the call with ErrToken.
func TestTokenFuncAfterUnauthorized(t *testing.T) {
	url, secret := signedServer(t)
	var made atomic.Int64
	c := client.New(url, client.Options{Database: "user-bob",
		TokenFunc: func(ctx context.Context) (string, error) {
			if made.Add(1) == 1 {
				return sign(t, secret, "bob", -2*time.Minute), nil
			}
			return sign(t, secret, "bob", time.Hour), nil
		},
	})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.NextRange(ctx, "orders", idgen.Range{}); err != nil {
		t.Fatalf("after an expired token: %v", err)
	}
	if made.Load() != 2 {
		t.Fatalf("tokens made: %d, want 2", made.Load())
	}

	boom := errors.New("signed out")
	c2 := client.New(url, client.Options{Database: "user-bob",
		TokenFunc: func(ctx context.Context) (string, error) { return "", boom }})
	defer c2.Close()
	if _, err := c2.NextRange(ctx, "orders", idgen.Range{}); !errors.Is(err, client.ErrToken) || !errors.Is(err, boom) {
		t.Fatalf("a failing token function: %v", err)
	}
}
