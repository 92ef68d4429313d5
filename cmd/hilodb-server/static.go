package main

import (
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// staticFiles serves the files under root (the demo app) and nothing else:
// no symbolic links, no dotfiles or dot-directories, no directory listings,
// and nothing inside the data directory when it lies under root.
type staticFiles struct {
	root string // absolute, symbolic links resolved
	data string // absolute data directory, symbolic links resolved
}

// newStaticFiles checks root and returns its handler.
func newStaticFiles(root, dataDir string) (*staticFiles, error) {
	r, err := resolve(root)
	if err != nil {
		return nil, fmt.Errorf("static root: %w", err)
	}
	if fi, err := os.Stat(r); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("static root %s: not a directory", root)
	}
	d, err := resolve(dataDir)
	if err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	return &staticFiles{root: r, data: d}, nil
}

// resolve makes p absolute and resolves its symbolic links; a p that does
// not exist yet is made absolute only.
func resolve(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	return abs, nil
}

func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

func (s *staticFiles) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	f, fi, ok := s.open(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", cacheControl(fi.Name()))
	// A copy compressed at build (internal/precompress) is served to a
	// client that takes its encoding; the type is the file's own.
	c, cfi, enc, vary := compressed(f.Name(), fi, r.Header.Get("Accept-Encoding"))
	if vary {
		h.Add("Vary", "Accept-Encoding")
	}
	if c == nil {
		http.ServeContent(w, r, fi.Name(), fi.ModTime(), f)
		return
	}
	defer c.Close()
	if ct := mime.TypeByExtension(filepath.Ext(fi.Name())); ct != "" {
		h.Set("Content-Type", ct)
	}
	h.Set("Content-Encoding", enc)
	http.ServeContent(w, r, fi.Name(), cfi.ModTime(), c)
}

// encodings are the compressed copies looked for beside a file, in the
// order preferred, with their suffixes.
var encodings = []struct{ name, suffix string }{{"br", ".br"}, {"gzip", ".gz"}}

// compressed opens the copy of the file at p (fi) in an encoding that
// accept (an Accept-Encoding value) takes, if one lies beside it as a
// regular file no older than it, and names the encoding. vary reports
// whether copies exist at all, so that the answer varies by
// Accept-Encoding even when the file itself is served.
func compressed(p string, fi os.FileInfo, accept string) (f *os.File, cfi os.FileInfo, enc string, vary bool) {
	for _, e := range encodings {
		cfi, err := os.Lstat(p + e.suffix)
		if err != nil || !cfi.Mode().IsRegular() || cfi.ModTime().Before(fi.ModTime()) {
			continue
		}
		vary = true
		if !accepts(accept, e.name) {
			continue
		}
		if c, err := os.Open(p + e.suffix); err == nil {
			return c, cfi, e.name, true
		}
	}
	return nil, nil, "", vary
}

// accepts reports whether the Accept-Encoding value header takes coding:
// named, or "*", with a q above 0.
func accepts(header, coding string) bool {
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(part, ";")
		name = strings.ToLower(strings.TrimSpace(name))
		if name != coding && name != "*" {
			continue
		}
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				}
			}
		}
		return q > 0
	}
	return false
}

// cacheControl is the Cache-Control of a file named name: a name that
// carries a content hash (a bundler's "index-BX3k9aQz.js", "main.3f2a9c1d.js")
// never changes, so it is cached for a year without asking again; any
// other is asked for again each time (answered 304 while unchanged).
func cacheControl(name string) string {
	if hashedName(name) {
		return "public, max-age=31536000, immutable"
	}
	return "no-cache"
}

// hashedName reports whether name's last part before its extension, after
// "-" or ".", looks like a content hash: 8 or more hex digits with a digit
// among them, or 8 to 16 base64url characters with upper and lower case
// letters. A plain word never passes, so a file that changes in place is
// never cached as immutable.
func hashedName(name string) bool {
	stem := strings.TrimSuffix(name, path.Ext(name))
	i := strings.LastIndexAny(stem, "-.")
	if i <= 0 {
		return false
	}
	h := stem[i+1:]
	if len(h) < 8 {
		return false
	}
	var hex, digit, upper, lower, other bool = true, false, false, false, false
	for _, c := range h {
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'f':
			lower = true
		case c >= 'g' && c <= 'z':
			lower, hex = true, false
		case c >= 'A' && c <= 'Z':
			upper, hex = true, false
		case c == '_' || c == '-':
			hex = false
		default:
			other = true
		}
	}
	switch {
	case other:
		return false
	case hex:
		return digit
	}
	return len(h) <= 16 && upper && lower
}

// open finds the regular file for the URL path p (index.html for a
// directory), refusing every path the type's comment names.
func (s *staticFiles) open(p string) (*os.File, os.FileInfo, bool) {
	clean := path.Clean("/" + p)
	cur := s.root
	for _, part := range strings.Split(strings.TrimPrefix(clean, "/"), "/") {
		if part == "" {
			continue
		}
		if strings.HasPrefix(part, ".") || strings.ContainsRune(part, '\\') {
			return nil, nil, false
		}
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			return nil, nil, false
		}
	}
	fi, err := os.Lstat(cur)
	if err != nil {
		return nil, nil, false
	}
	if fi.IsDir() {
		cur = filepath.Join(cur, "index.html")
		if fi, err = os.Lstat(cur); err != nil {
			return nil, nil, false
		}
	}
	if !fi.Mode().IsRegular() || within(s.data, cur) {
		return nil, nil, false
	}
	f, err := os.Open(cur)
	if err != nil {
		return nil, nil, false
	}
	return f, fi, true
}
