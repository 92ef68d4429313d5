//go:build !(js && wasm)

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
)

// idFunc is a core.IDSource made from a function.
type idFunc func(ctx context.Context, tag string) (string, error)

func (f idFunc) NextID(ctx context.Context, tag string) (string, error) { return f(ctx, tag) }

// counter hands out tag/1-T, tag/2-T, …
func counter() idFunc {
	var n atomic.Int64
	return func(_ context.Context, tag string) (string, error) {
		return fmt.Sprintf("%s/%d-T", tag, n.Add(1)), nil
	}
}

func newTestHandler(t *testing.T, ids core.IDSource) http.Handler {
	t.Helper()
	st, err := core.Open(":memory:", core.Options{IDs: ids})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newHandler(st)
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
}

func do(t *testing.T, h http.Handler, method, path, body string) answer {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("%s %s: body is not a JSON object: %q", method, path, rec.Body.String())
	}
	return answer{rec.Code, rec.Header(), m}
}

func wantError(t *testing.T, a answer, status int, code string, num int) {
	t.Helper()
	if a.status != status {
		t.Errorf("status: got %d, want %d (%v)", a.status, status, a.body)
	}
	if a.body["error"] != true || a.body["code"] != code || a.body["errorNum"] != float64(num) {
		t.Errorf("error body: got %v, want error true, code %q, errorNum %d", a.body, code, num)
	}
	if msg, _ := a.body["errorMessage"].(string); msg == "" {
		t.Errorf("error body %v has no errorMessage", a.body)
	}
}

func TestPostThenGet(t *testing.T) {
	h := newTestHandler(t, counter())
	a := do(t, h, "POST", "/docs/orders", `{"item":"tea"}`)
	if a.status != http.StatusCreated {
		t.Fatalf("POST: got %d %v, want 201", a.status, a.body)
	}
	if a.body["_id"] != "orders/1-T" || a.body["_key"] != "1-T" || a.body["item"] != "tea" {
		t.Errorf("POST: got %v, want _id orders/1-T, _key 1-T, item tea", a.body)
	}
	if rev, _ := a.body["_rev"].(string); rev == "" {
		t.Errorf("POST: no _rev in %v", a.body)
	}
	if got := a.header.Get("Location"); got != "/docs/orders/1-T" {
		t.Errorf("Location: got %q, want /docs/orders/1-T", got)
	}
	if got := a.header.Get("Content-Type"); !strings.HasPrefix(got, "application/json") {
		t.Errorf("Content-Type: got %q, want application/json", got)
	}
	g := do(t, h, "GET", "/docs/orders/1-T", "")
	if g.status != http.StatusOK || fmt.Sprint(g.body) != fmt.Sprint(a.body) {
		t.Errorf("GET: got %d %v, want 200 %v", g.status, g.body, a.body)
	}
	if b := do(t, h, "POST", "/docs/orders", `{}`); b.body["_id"] != "orders/2-T" {
		t.Errorf("second POST: got _id %v, want orders/2-T", b.body["_id"])
	}
}

func TestErrors(t *testing.T) {
	h := newTestHandler(t, counter())
	tests := []struct {
		name, method, path, body string
		status                   int
		code                     string
		num                      int
	}{
		{"malformed JSON", "POST", "/docs/orders", `{"a":`, 400, "bad_json", 600},
		{"empty body", "POST", "/docs/orders", ``, 400, "bad_json", 600},
		{"not an object", "POST", "/docs/orders", `[1,2]`, 400, "bad_json", 600},
		{"illegal key", "POST", "/docs/orders", `{"_key":"a b"}`, 400, "illegal_key", 1221},
		{"illegal collection", "POST", "/docs/1orders", `{}`, 400, "illegal_name", 1208},
		{"too big", "POST", "/docs/orders", `{"a":"` + strings.Repeat("x", maxBodyBytes) + `"}`, 413, "message_too_big", 413},
		{"unknown id", "GET", "/docs/orders/nope", ``, 404, "not_found", 1202},
		{"method not allowed", "PUT", "/docs/orders/1", `{}`, 405, codeMethodNotAllowed, numMethodNotAllowed},
		{"unknown path", "GET", "/elsewhere", ``, 404, codeUnknownPath, numUnknownPath},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, do(t, h, tt.method, tt.path, tt.body), tt.status, tt.code, tt.num)
		})
	}
}

func TestIDSourceFailures(t *testing.T) {
	tests := []struct {
		name   string
		ids    core.IDSource
		status int
		code   string
		num    int
	}{
		{"no sync server configured", nil, 503, "needs_server", core.NumNeedsServer},
		{"sync server unreachable", idFunc(func(context.Context, string) (string, error) {
			return "", fmt.Errorf("lease range: %w", client.ErrDisconnected)
		}), 503, "needs_server", core.NumNeedsServer},
		{"lease timed out", idFunc(func(ctx context.Context, _ string) (string, error) {
			return "", context.DeadlineExceeded
		}), 503, "needs_server", core.NumNeedsServer},
		{"refused by the sync server", idFunc(func(context.Context, string) (string, error) {
			return "", fmt.Errorf("hello: %w", &client.Error{Code: "unauthorized", Num: 401, Message: "bad token"})
		}), 502, "unauthorized", 401},
		{"panic", idFunc(func(context.Context, string) (string, error) {
			panic("boom")
		}), 500, "internal", core.NumInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTestHandler(t, tt.ids)
			wantError(t, do(t, h, "POST", "/docs/orders", `{"a":1}`), tt.status, tt.code, tt.num)
			// A document with its own key needs no id source.
			if a := do(t, h, "POST", "/docs/orders", `{"_key":"k"}`); a.status != http.StatusCreated {
				t.Errorf("POST with _key: got %d %v, want 201", a.status, a.body)
			}
		})
	}
}

func TestOpenStoreWithoutServer(t *testing.T) {
	st, err := openStore(config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	wantError(t, do(t, newHandler(st), "POST", "/docs/orders", `{}`), 503, "needs_server", core.NumNeedsServer)
}
