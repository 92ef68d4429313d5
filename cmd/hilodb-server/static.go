package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
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
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, fi.Name(), fi.ModTime(), f)
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
