package syncserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/syncserver"
)

// do sends one HTTP request and returns the status and decoded JSON body.
func do(t *testing.T, method, url, body string, h map[string]string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for k, v := range h {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return res.StatusCode, m
}

func TestHTTPDoorsAreGuarded(t *testing.T) {
	ts := startServer(t, syncserver.Config{Tokens: map[string]string{"shop": "s3cret"}, MaxMessageBytes: 4096, MaxBufferedBytes: 1 << 20})
	base := ts.hs.URL
	bearer := map[string]string{"Authorization": "Bearer s3cret"}
	cases := []struct {
		name, method, path, body string
		h                        map[string]string
		status                   int
		num                      float64 // errorNum (arango) or Num (ravendb); 0: success
	}{
		{"arango without a token", "GET", "/_db/shop/_api/version", "", nil, 401, 401},
		{"arango with a wrong token", "GET", "/_db/shop/_api/version", "", map[string]string{"Authorization": "Bearer nope"}, 401, 401},
		{"arango with the token", "GET", "/_db/shop/_api/version", "", bearer, 200, 0},
		{"arango with Basic auth", "GET", "/_db/shop/_api/version", "", map[string]string{"Authorization": "Basic cm9vdDpzM2NyZXQ="}, 200, 0},
		{"arango for a database without a token", "GET", "/_db/other/_api/version", "", bearer, 401, 401},
		{"ravendb without a token", "GET", "/databases/shop/hilo/next?tag=orders", "", nil, 401, 401},
		{"ravendb with the token", "GET", "/databases/shop/hilo/next?tag=orders", "", bearer, 200, 0},
		{"an illegal database name", "GET", "/_db/9lives/_api/version", "", bearer, 400, 1208},
		{"a body over the message limit", "POST", "/_db/shop/_api/document/c", `{"a":"` + strings.Repeat("x", 5000) + `"}`, bearer, 413, 413},
		{"malformed JSON", "POST", "/databases/shop/bulk_docs", `{"Commands":[`, bearer, 400, 400},
		{"an unknown batch command", "POST", "/databases/shop/bulk_docs", `{"Commands":[{"Id":"a","Type":"PATCH"}]}`, bearer, 400, 400},
		{"an unknown RavenDB path", "GET", "/databases/shop/indexes", "", bearer, 404, 1911},
		{"an illegal key", "POST", "/_db/shop/_api/document/c", `{"_key":"a b"}`, bearer, 400, 1221},
		{"a document that is not an object", "POST", "/_db/shop/_api/document/c", `[1]`, bearer, 202, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := do(t, tc.method, base+tc.path, tc.body, tc.h)
			if status != tc.status {
				t.Fatalf("status %d, want %d (%v)", status, tc.status, body)
			}
			num, ok := body["errorNum"].(float64)
			if !ok {
				num, _ = body["Num"].(float64)
			}
			if tc.num != 0 && num != tc.num {
				t.Errorf("error number %v, want %v (%v)", num, tc.num, body)
			}
		})
	}
	// The Host check runs before everything (here: a server with tokens and
	// an allow-list).
	hosted := startServer(t, syncserver.Config{AllowedHosts: []string{"db.example"}})
	if status, _ := do(t, "GET", hosted.hs.URL+"/_api/version", "", map[string]string{"Host": "rebind.attacker.example"}); status != 421 {
		t.Errorf("a foreign Host: %d, want 421", status)
	}
	// Nothing was stored by the refused writes.
	if status, _ := do(t, "GET", base+"/_db/shop/_api/document/c/x", "", bearer); status != 404 {
		t.Errorf("a refused write stored something: %d", status)
	}
	_, metrics := get(t, base+"/metrics", nil)
	if metric(t, metrics, `hilodb_http_requests_total{door="arango"}`) < 8 || metric(t, metrics, `hilodb_errors_total{code="unauthorized"}`) < 4 {
		t.Errorf("HTTP requests and refusals are not counted:\n%s", metrics)
	}
}
