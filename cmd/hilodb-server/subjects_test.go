package main_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/internal/servertest"
)

// hsToken signs an HS256 token for sub, writer of user-{sub}.
func hsToken(t *testing.T, secret []byte, sub string) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: secret}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(map[string]any{"sub": sub, "exp": time.Now().Add(time.Hour).Unix(),
		"hilodb": map[string]any{"db": map[string]string{"user-{sub}": "write"}}}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestPerSubjectLimits: -max-conns-per-subject bounds one subject's
// connections (another subject is not held back, and a closed one frees
// its place); -rate-per-subject bounds its requests over all its
// connections and the HTTP doors.
func TestPerSubjectLimits(t *testing.T) {
	bin := servertest.BuildServer(t)
	secret := []byte(strings.Repeat("per-subject-secret", 2))
	file := filepath.Join(t.TempDir(), "hs256")
	if err := os.WriteFile(file, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := servertest.FreeAddr(t)
	startProc(t, bin, addr, "-data", t.TempDir(), "-jwt-hs256-file", file, "-rate", "-1",
		"-max-conns-per-subject", "2", "-rate-per-subject", "5")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func(sub string) (*client.Client, error) {
		return client.Dial(ctx, wsURL(addr), client.Options{Database: "user-" + sub, Token: hsToken(t, secret, sub)})
	}
	a1, err := dial("ann")
	if err != nil {
		t.Fatal(err)
	}
	a2, err := dial("ann")
	if err != nil {
		t.Fatal(err)
	}
	var we *client.Error
	if _, err := dial("ann"); !errors.As(err, &we) || we.Code != "too_many_connections" {
		t.Fatalf("ann's third connection: %v", err)
	}
	b, err := dial("ben")
	if err != nil {
		t.Fatalf("ben beside ann's two: %v", err)
	}
	defer b.Close()
	a2.Close()
	var a3 *client.Client
	for deadline := time.Now().Add(5 * time.Second); ; {
		if a3, err = dial("ann"); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("ann after closing one: %v", err)
	}
	defer a3.Close()
	defer a1.Close()

	// 5 a second with a burst of 5, over ann's two connections: of 200
	// pings at once most are refused; ben's are not counted with hers.
	limited := 0
	for i := range 200 {
		c := a1
		if i%2 == 1 {
			c = a3
		}
		if err := c.Ping(ctx); errors.As(err, &we) && we.Code == "rate_limited" {
			limited++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if limited < 150 {
		t.Fatalf("%d of 200 pings refused, want most past the burst", limited)
	}
	if err := b.Ping(ctx); err != nil {
		t.Fatalf("ben held back by ann's rate: %v", err)
	}
	// The HTTP doors count against the same subject.
	codes := []int{}
	for range 5 {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s/databases/user-ann/docs?id=x", addr), nil)
		req.Header.Set("Authorization", "Bearer "+hsToken(t, secret, "ann"))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		codes = append(codes, res.StatusCode)
	}
	if !slices.Contains(codes, http.StatusTooManyRequests) {
		t.Fatalf("ann over HTTP right after her burst: %v, want a 429", codes)
	}
}
