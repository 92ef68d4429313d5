//go:build !(js && wasm)

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hilodb/hilodb/database"
	"github.com/hilodb/hilodb/internal/servertest"
	"github.com/hilodb/hilodb/syncserver"
)

// prereadDir is a directory's Storage that read what it holds first, as
// doStorage does in workerd: Load hands over snap and log.
type prereadDir struct {
	*database.Dir
	snap, log []byte
	pause     func() // LoadPause, if set
}

func openPreread(t *testing.T, dir string) *prereadDir {
	t.Helper()
	d, err := database.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	snap, log, err := d.Load()
	if err != nil {
		t.Fatal(err)
	}
	return &prereadDir{Dir: d, snap: snap, log: log}
}

func (p *prereadDir) Load() ([]byte, []byte, error) { return p.snap, p.log, nil }

func (p *prereadDir) LoadPause() {
	if p.pause != nil {
		p.pause()
	}
}

// copyDir copies the files of directory from into a new directory.
func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	names, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(from, n.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, n.Name()), b, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// later holds the functions a starter runs once the answer under way has
// gone out, until the test runs them.
type later struct{ fns []func() }

func (l *later) after(fn func()) { l.fns = append(l.fns, fn) }
func (l *later) run() {
	for _, fn := range l.fns {
		fn()
	}
}

// TestStarterAnswersBeforeTheLoad keeps a replica's documents in a
// snapshot and a log, then starts it as a Durable Object does: first reads
// are answered before the store is loaded (the load has not begun), each
// as the loaded replica answers it, "stale"; a write waits for the load
// and is served by the loaded replica.
func TestStarterAnswersBeforeTheLoad(t *testing.T) {
	addr, _ := servertest.Serve(t, syncserver.Config{DataDir: t.TempDir()}, "127.0.0.1:0")
	cfg := config{URL: "ws://" + addr + "/v1/sync", Database: "starts"}
	defineOnServer(t, addr, "starts", "orders")
	dir := t.TempDir()
	write := func(a *app, method, path, body string) {
		t.Helper()
		res := serve(t, a, &request{method: method, path: path, body: []byte(body)}, nil)
		if res.status >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, res.status, res.body)
		}
	}
	// A snapshot (the first session's Close compacts the log), then a log.
	for session := range 2 {
		a, st := openAppDir(t, cfg, dir)
		if session == 0 {
			write(a, "POST", "/_api/document/orders", `[{"_key":"a","n":1},{"_key":"b","n":2},{"_key":"c","n":3},{"_key":"d","n":4}]`)
			write(a, "PATCH", "/_api/document/orders/a", `{"n":10}`)
		} else {
			write(a, "POST", "/_api/document/orders", `{"_key":"e","n":5}`)
			write(a, "PATCH", "/_api/document/orders/b", `{"n":20}`)
			write(a, "DELETE", "/_api/document/orders/c", ``)
			dir = copyDir(t, dir) // the log as it is, before Close compacts it
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	if fi, err := os.Stat(filepath.Join(dir, "log")); err != nil || fi.Size() == 0 {
		t.Fatalf("no log to read: %v", err)
	}

	// The replica loaded, to compare with.
	refStorage, err := database.OpenDir(copyDir(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	defer refStorage.Close()
	ref, err := openApp(context.Background(), cfg, refStorage)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()

	var l later
	failed := false
	st := openPreread(t, dir)
	s := newStarter(cfg, st, st.snap, st.log, l.after, func(error) { failed = true })
	reads := []*request{
		{method: "GET", path: "/_api/document/orders/a"},
		{method: "GET", path: "/_api/document/orders/b"},
		{method: "GET", path: "/_api/document/orders/c"}, // removed
		{method: "GET", path: "/_api/document/orders/e"},
		{method: "GET", path: "/_db/starts/_api/document/orders/d"},
		{method: "HEAD", path: "/_api/document/orders/d"},
		{method: "GET", path: "/_api/document/orders/zz"},
		{method: "GET", path: "/_api/document/nothing/a"},
		{method: "GET", path: "/docs/orders/a"},
		{method: "GET", path: "/docs/orders/c"},
		{method: "GET", path: "/_api/document/orders/a", ifMatch: `"nope"`},
	}
	for _, r := range reads {
		got, ok := s.quick(r)
		if !ok {
			t.Fatalf("%s %s: not answered before the load", r.method, r.path)
		}
		rt, _ := parseRoute(r.method, r.path)
		want := ref.read(r, rt)
		want.set(freshHeader, "stale")
		if got.status != want.status || !bytes.Equal(got.body, want.body) || !slices.Equal(got.header, want.header) {
			t.Errorf("%s %s: before the load %d %v %s; loaded %d %v %s", r.method, r.path, got.status, got.header, got.body, want.status, want.header, want.body)
		}
		s.begin()
	}
	time.Sleep(100 * time.Millisecond) // time for a load begun too early to end
	if _, _, done := s.opened(); done {
		t.Fatal("the store was loaded before the answers went out")
	}
	for _, r := range []*request{
		{method: "GET", path: "/_api/document/orders/a", noCache: true},
		{method: "POST", path: "/_api/document/orders", body: []byte(`{"n":6}`)},
		{method: "GET", path: "/_edge/status"},
	} {
		if _, ok := s.quick(r); ok {
			t.Errorf("%s %s answered before the load", r.method, r.path)
		}
	}
	l.run() // the answers went out: the load starts
	a, err := s.wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	write(a, "POST", "/_api/document/orders", `{"_key":"f","n":6}`)
	if res := a.read(&request{method: "GET"}, route{kind: "arango", coll: "orders", key: "e"}); res.status != 200 {
		t.Errorf("after the load: %d %s", res.status, res.body)
	}
	if failed {
		t.Error("failed was called")
	}
}

// TestStarterDamagedStore starts a replica whose log is damaged: no read
// is answered from it, the load fails with ErrDamaged as OpenJournal does,
// and failed is told.
func TestStarterDamagedStore(t *testing.T) {
	dir := t.TempDir()
	d, err := database.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := openApp(context.Background(), config{URL: "ws://127.0.0.1:1/v1/sync", Database: "d"}, d)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c"} {
		// The collection is unknown and the server unreachable: stored
		// through the store, as a replica's own writes are.
		if _, err := a.store.Put(context.Background(), "orders", []byte(`{"_key":"`+k+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	dir = copyDir(t, dir)
	a.Close()
	d.Close()
	log, err := os.ReadFile(filepath.Join(dir, "log"))
	if err != nil || len(log) < 10 {
		t.Fatalf("log: %d bytes, %v", len(log), err)
	}
	log[5] ^= 0x20
	if err := os.WriteFile(filepath.Join(dir, "log"), log, 0o640); err != nil {
		t.Fatal(err)
	}
	var told error
	st := openPreread(t, dir)
	s := newStarter(config{URL: "ws://127.0.0.1:1/v1/sync", Database: "d"}, st, st.snap, st.log, nil, func(err error) { told = err })
	if res, ok := s.quick(&request{method: "GET", path: "/_api/document/orders/a"}); ok {
		t.Fatalf("answered from a damaged log: %d %s", res.status, res.body)
	}
	if _, err := s.wait(context.Background()); !errors.Is(err, database.ErrDamaged) {
		t.Fatalf("load: %v, want ErrDamaged", err)
	}
	if !errors.Is(told, database.ErrDamaged) {
		t.Errorf("failed told %v", told)
	}
	if res := openFailure(s.err); res.status != 500 {
		t.Errorf("answer: %d %s", res.status, res.body)
	}
}

// TestStarterAnswersWhileLoading loads a replica of 1,500 documents: where
// the load pauses (as it returns to the event loop under workerd), a read
// that came meanwhile is answered from the stored bytes, as the loaded
// replica answers it.
func TestStarterAnswersWhileLoading(t *testing.T) {
	addr, _ := servertest.Serve(t, syncserver.Config{DataDir: t.TempDir()}, "127.0.0.1:0")
	cfg := config{URL: "ws://" + addr + "/v1/sync", Database: "loads"}
	defineOnServer(t, addr, "loads", "orders")
	dir := t.TempDir()
	d, err := database.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := openApp(context.Background(), cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	var many bytes.Buffer
	many.WriteString("[")
	for i := range 1500 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `{"_key":"k%d","n":%d}`, i, i)
	}
	many.WriteString("]")
	if res := serve(t, a, &request{method: "POST", path: "/_api/document/orders", body: many.Bytes()}, nil); res.status >= 300 {
		t.Fatalf("insert: %d %s", res.status, res.body)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	d.Close()

	read := &request{method: "GET", path: "/_api/document/orders/k7"}
	var s *starter
	var during []*response
	st := openPreread(t, dir)
	st.pause = func() {
		if _, _, done := s.opened(); done {
			t.Error("paused after the load")
		}
		if res, ok := s.quick(read); ok {
			during = append(during, res)
		}
	}
	s = newStarter(cfg, st, st.snap, st.log, nil, nil)
	loaded, err := s.wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer loaded.Close()
	if len(during) == 0 {
		t.Fatal("no read was answered while the store loaded")
	}
	want := loaded.read(read, route{kind: "arango", coll: "orders", key: "k7"})
	for _, got := range during {
		if got.status != 200 || !bytes.Equal(got.body, want.body) {
			t.Errorf("while loading: %d %s; loaded: %d %s", got.status, got.body, want.status, want.body)
		}
	}
}
