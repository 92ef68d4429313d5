// Command precompress writes a brotli (.br) and a gzip (.gz) copy beside
// every file of a web root that compresses well (.wasm, .js, .mjs, .css,
// .html, .json, .svg), for hilodb-server -static to serve by the
// client's Accept-Encoding. js/build-web.sh runs it:
//
//	go run ./internal/precompress DIR
//
// A copy that would not be smaller than the file is not written.
package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/andybalholm/brotli"
)

// brotliLevel trades size for time: at 9 the wasm comes out about 14 %
// larger than at 11 (1.59 against 1.39 MB) in a sixth of the time (5 s
// against 33 s here); js/build-web.sh runs at the start of every browser
// test. BROTLI_LEVEL (0 to 11) sets another, 11 for a release.
const brotliLevel = 9

// level is BROTLI_LEVEL when it names a level, else brotliLevel.
func level() int {
	if n, err := strconv.Atoi(os.Getenv("BROTLI_LEVEL")); err == nil && n >= brotli.BestSpeed && n <= brotli.BestCompression {
		return n
	}
	return brotliLevel
}

// compressible are the extensions worth a compressed copy.
var compressible = map[string]bool{".wasm": true, ".js": true, ".mjs": true, ".css": true, ".html": true, ".json": true, ".svg": true}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: precompress DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "precompress:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !d.Type().IsRegular() || !compressible[strings.ToLower(filepath.Ext(p))] {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		var br, gz bytes.Buffer
		bw := brotli.NewWriterLevel(&br, level())
		gw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		for _, w := range []interface {
			Write([]byte) (int, error)
			Close() error
		}{bw, gw} {
			if _, err := w.Write(b); err != nil {
				return fmt.Errorf("compress %s: %w", p, err)
			}
			if err := w.Close(); err != nil {
				return fmt.Errorf("compress %s: %w", p, err)
			}
		}
		for ext, c := range map[string][]byte{".br": br.Bytes(), ".gz": gz.Bytes()} {
			if len(c) >= len(b) {
				_ = os.Remove(p + ext)
				continue
			}
			if err := os.WriteFile(p+ext, c, 0o644); err != nil {
				return fmt.Errorf("write %s: %w", p+ext, err)
			}
		}
		return nil
	})
}
