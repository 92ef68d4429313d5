package main_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/hilodb/hilodb/internal/servertest"
)

// TestStaticCompressionAndCaching serves a web root with copies compressed
// at build beside its files: each client gets the encoding it takes, with
// the file's own type, and a content-hashed name is cached as immutable.
func TestStaticCompressionAndCaching(t *testing.T) {
	bin := servertest.BuildServer(t)
	web := t.TempDir()
	wasm := bytes.Repeat([]byte("\x00asm wasm bytes "), 4096)
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(web, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("app.wasm", wasm)
	write("app.wasm.br", []byte("brotli bytes"))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(wasm)
	zw.Close()
	write("app.wasm.gz", gz.Bytes())
	for _, name := range []string{"index-BX3k9aQz.js", "main.3f2a9c1d.js", "demo.js", "my-component.js", "documentquery.js", "utils.20240101.js"} {
		write(name, []byte("export {};"))
	}
	addr := servertest.FreeAddr(t)
	startProc(t, bin, addr, "-data", t.TempDir(), "-static", web)
	base := "http://" + addr

	tests := []struct {
		accept, wantEncoding string
		wantBody             []byte
	}{
		{"br, gzip", "br", []byte("brotli bytes")},
		{"gzip, deflate, br", "br", []byte("brotli bytes")},
		{"gzip", "gzip", gz.Bytes()},
		{"br;q=0, gzip", "gzip", gz.Bytes()},
		{"identity", "", wasm},
		{"", "", wasm},
	}
	for _, tt := range tests {
		t.Run("Accept-Encoding "+tt.accept, func(t *testing.T) {
			req, _ := http.NewRequest("GET", base+"/app.wasm", nil)
			req.Header.Set("Accept-Encoding", tt.accept) // set, so Go's transport adds none of its own
			res, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				t.Fatalf("status %d", res.StatusCode)
			}
			if got := res.Header.Get("Content-Encoding"); got != tt.wantEncoding {
				t.Errorf("Content-Encoding = %q, want %q", got, tt.wantEncoding)
			}
			if got := res.Header.Get("Content-Type"); got != "application/wasm" {
				t.Errorf("Content-Type = %q, want application/wasm", got)
			}
			if got := res.Header.Get("Vary"); got != "Accept-Encoding" {
				t.Errorf("Vary = %q, want Accept-Encoding", got)
			}
			if !bytes.Equal(body, tt.wantBody) {
				t.Errorf("body: %d bytes, want %d", len(body), len(tt.wantBody))
			}
		})
	}

	for name, want := range map[string]string{
		"app.wasm":          "no-cache",
		"index-BX3k9aQz.js": "public, max-age=31536000, immutable",
		"main.3f2a9c1d.js":  "public, max-age=31536000, immutable",
		"demo.js":           "no-cache",
		"my-component.js":   "no-cache",
		"documentquery.js":  "no-cache",
		"utils.20240101.js": "public, max-age=31536000, immutable",
	} {
		res, err := http.Get(base + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if got := res.Header.Get("Cache-Control"); got != want {
			t.Errorf("%s: Cache-Control = %q, want %q", name, got, want)
		}
	}
}
