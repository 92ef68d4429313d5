//go:build !(js && wasm)

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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

// fakeOrigin is an origin made from func fields.
type fakeOrigin struct {
	PushFunc func(ctx context.Context, items []client.PushItem) (client.PushOutcome, error)
	GetFunc  func(ctx context.Context, ids []string) ([]client.Change, error)
}

var _ origin = (*fakeOrigin)(nil)

func (o *fakeOrigin) Push(ctx context.Context, items []client.PushItem) (client.PushOutcome, error) {
	return o.PushFunc(ctx, items)
}

func (o *fakeOrigin) Get(ctx context.Context, ids []string) ([]client.Change, error) {
	return o.GetFunc(ctx, ids)
}

// memServer keeps documents as the sync server does: a push item is taken
// when its base is the current revision, else it is a conflict.
type memServer struct {
	mu     sync.Mutex
	docs   map[string]client.Change
	seq    int64
	pushed []client.PushItem
	gets   int
}

func newMemServer() *memServer { return &memServer{docs: make(map[string]client.Change)} }

func (s *memServer) Push(_ context.Context, items []client.PushItem) (client.PushOutcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := client.PushOutcome{PrevSeq: s.seq}
	for _, it := range items {
		s.pushed = append(s.pushed, it)
		cur := s.docs[it.ID]
		if cur.Rev != it.BaseRev && cur.Rev != it.Rev {
			out.Results = append(out.Results, client.PushResult{ID: it.ID, Seq: cur.Seq, Current: cur.Doc,
				Error: &client.Error{Code: "conflict", Num: 1200, Message: "conflict"}})
			continue
		}
		s.seq++
		s.docs[it.ID] = client.Change{Seq: s.seq, ID: it.ID, Rev: it.Rev, Doc: it.Doc, Deleted: it.Deleted}
		out.Results = append(out.Results, client.PushResult{ID: it.ID, OK: true, Seq: s.seq})
	}
	out.Last = s.seq
	return out, nil
}

func (s *memServer) Get(_ context.Context, ids []string) ([]client.Change, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	out := make([]client.Change, len(ids))
	for i, id := range ids {
		out[i] = s.docs[id]
		out[i].ID = id
	}
	return out, nil
}

// put stores a document on the server, as another client would.
func (s *memServer) put(id, rev, fields string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	doc := fmt.Sprintf(`{"_id":%q,"_rev":%q,%s}`, id, rev, fields)
	s.docs[id] = client.Change{Seq: s.seq, ID: id, Rev: rev, Doc: json.RawMessage(doc)}
}

func (s *memServer) current(id string) client.Change {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.docs[id]
}

func (s *memServer) counts() (pushes, gets int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pushed), s.gets
}

// origin returns s as a fakeOrigin, whose functions a test may then wrap.
func (s *memServer) origin() *fakeOrigin {
	return &fakeOrigin{PushFunc: s.Push, GetFunc: s.Get}
}

func openTestStore(t *testing.T, ids core.IDSource) *core.Store {
	t.Helper()
	st, err := core.Open(":memory:", core.Options{IDs: ids})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newTestHandler returns the API over a fresh store, a cache of o.
func newTestHandler(t *testing.T, ids core.IDSource, o origin) http.Handler {
	t.Helper()
	return newHandler(openTestStore(t, ids), o)
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

func wantCache(t *testing.T, a answer, want string) {
	t.Helper()
	if got := a.header.Get(cacheHeader); got != want {
		t.Errorf("%s: got %q, want %q", cacheHeader, got, want)
	}
}

func TestPostWritesThroughThenGetHits(t *testing.T) {
	srv := newMemServer()
	h := newTestHandler(t, counter(), srv.origin())
	a := do(t, h, "POST", "/docs/orders", `{"item":"tea"}`)
	if a.status != http.StatusCreated {
		t.Fatalf("POST: got %d %v, want 201", a.status, a.body)
	}
	if a.body["_id"] != "orders/1-T" || a.body["_key"] != "1-T" || a.body["item"] != "tea" {
		t.Errorf("POST: got %v, want _id orders/1-T, _key 1-T, item tea", a.body)
	}
	rev, _ := a.body["_rev"].(string)
	if rev == "" {
		t.Errorf("POST: no _rev in %v", a.body)
	}
	if got := a.header.Get("Location"); got != "/docs/orders/1-T" {
		t.Errorf("Location: got %q, want /docs/orders/1-T", got)
	}
	if got := a.header.Get("Content-Type"); !strings.HasPrefix(got, "application/json") {
		t.Errorf("Content-Type: got %q, want application/json", got)
	}

	// The server has the document as answered, at the answered revision.
	srv.mu.Lock()
	pushed := append([]client.PushItem(nil), srv.pushed...)
	srv.mu.Unlock()
	if len(pushed) != 1 || pushed[0].ID != "orders/1-T" || pushed[0].BaseRev != "" || pushed[0].Rev != rev {
		t.Fatalf("pushed: got %+v, want orders/1-T on base \"\" at rev %s", pushed, rev)
	}
	var onServer map[string]any
	if err := json.Unmarshal(pushed[0].Doc, &onServer); err != nil || fmt.Sprint(onServer) != fmt.Sprint(a.body) {
		t.Errorf("pushed document: got %s, want %v", pushed[0].Doc, a.body)
	}

	g := do(t, h, "GET", "/docs/orders/1-T", "")
	if g.status != http.StatusOK || fmt.Sprint(g.body) != fmt.Sprint(a.body) {
		t.Errorf("GET: got %d %v, want 200 %v", g.status, g.body, a.body)
	}
	wantCache(t, g, "hit")
	if _, gets := srv.counts(); gets != 0 {
		t.Errorf("GET of a document written through: %d reads from the server, want 0", gets)
	}
	if b := do(t, h, "POST", "/docs/orders", `{}`); b.body["_id"] != "orders/2-T" {
		t.Errorf("second POST: got _id %v, want orders/2-T", b.body["_id"])
	}
}

func TestErrors(t *testing.T) {
	h := newTestHandler(t, counter(), newMemServer().origin())
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
		{"not an id", "GET", "/docs/nope", ``, 404, "not_found", 1202},
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
		{"no id source", nil, 503, "needs_server", core.NumNeedsServer},
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
			srv := newMemServer()
			h := newTestHandler(t, tt.ids, srv.origin())
			wantError(t, do(t, h, "POST", "/docs/orders", `{"a":1}`), tt.status, tt.code, tt.num)
			if pushes, _ := srv.counts(); pushes != 0 {
				t.Errorf("pushes after a failed id: got %d, want 0", pushes)
			}
			// A document with its own key needs no id source.
			if a := do(t, h, "POST", "/docs/orders", `{"_key":"k"}`); a.status != http.StatusCreated {
				t.Errorf("POST with _key: got %d %v, want 201", a.status, a.body)
			}
		})
	}
}

// wantNotCached checks that the store holds neither id nor any pending write.
func wantNotCached(t *testing.T, st *core.Store, id string) {
	t.Helper()
	if doc, err := st.Get(id); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("cache after a failed write: got %s (%v), want no %s", doc, err, id)
	}
	if n, err := st.PendingCount(); n != 0 || err != nil {
		t.Errorf("pending writes after a failed write: got %d (%v), want 0", n, err)
	}
	if cs, err := st.Conflicts(id); len(cs) != 0 || err != nil {
		t.Errorf("conflicts kept after a failed write: got %v (%v), want none", cs, err)
	}
}

func TestWriteThroughFailures(t *testing.T) {
	refuse := func(code string, num int) func(context.Context, []client.PushItem) (client.PushOutcome, error) {
		return func(_ context.Context, items []client.PushItem) (client.PushOutcome, error) {
			return client.PushOutcome{Results: []client.PushResult{{ID: items[0].ID,
				Error: &client.Error{Code: code, Num: num, Message: code}}}}, nil
		}
	}
	fail := func(err error) func(context.Context, []client.PushItem) (client.PushOutcome, error) {
		return func(context.Context, []client.PushItem) (client.PushOutcome, error) { return client.PushOutcome{}, err }
	}
	tests := []struct {
		name   string
		push   func(context.Context, []client.PushItem) (client.PushOutcome, error) // nil: no sync server
		status int
		code   string
		num    int
	}{
		{"no sync server", nil, 503, "needs_server", 1900},
		{"sync server unreachable", fail(fmt.Errorf("push: dial: %w", client.ErrDisconnected)), 503, "needs_server", 1900},
		{"push timed out", fail(fmt.Errorf("push: %w", context.DeadlineExceeded)), 503, "needs_server", 1900},
		{"refused at hello", fail(fmt.Errorf("push: hello: %w", &client.Error{Code: "unauthorized", Num: 401, Message: "bad token"})), 502, "unauthorized", 401},
		{"conflict", refuse("conflict", 1200), 409, "conflict", 1200},
		{"bad document", refuse("bad_document", 1227), 502, "bad_document", 1227},
		{"no results", func(context.Context, []client.PushItem) (client.PushOutcome, error) {
			return client.PushOutcome{}, nil
		}, 500, "internal", 4},
	}
	for _, tt := range tests {
		for _, body := range []string{`{"a":1}`, `{"_key":"k","a":1}`} {
			t.Run(tt.name+" "+body, func(t *testing.T) {
				srv := newMemServer()
				var o origin
				if tt.push != nil {
					o = &fakeOrigin{PushFunc: tt.push, GetFunc: srv.Get}
				}
				st := openTestStore(t, counter())
				h := newHandler(st, o)
				wantError(t, do(t, h, "POST", "/docs/orders", body), tt.status, tt.code, tt.num)
				id := "orders/1-T"
				if strings.Contains(body, "_key") {
					id = "orders/k"
				}
				wantNotCached(t, st, id)
				// Not served from the cache: read through, the server has nothing.
				g := do(t, h, "GET", "/docs/"+id, "")
				if tt.push == nil {
					wantError(t, g, 503, "needs_server", 1900)
				} else {
					wantError(t, g, 404, "not_found", 1202)
				}
				wantCache(t, g, "miss")
			})
		}
	}
}

func TestConflictThenReadAndWriteAgain(t *testing.T) {
	srv := newMemServer()
	srv.put("orders/k", "_server-rev-1", `"v":1`)
	st := openTestStore(t, counter())
	h := newHandler(st, srv.origin())

	// The cache does not have the server's version: the write is based on
	// nothing and conflicts.
	c := do(t, h, "POST", "/docs/orders", `{"_key":"k","v":2}`)
	wantError(t, c, 409, "conflict", 1200)
	if msg, _ := c.body["errorMessage"].(string); !strings.Contains(msg, "_server-rev-1") {
		t.Errorf("conflict message %q does not name the server's _rev", msg)
	}
	wantNotCached(t, st, "orders/k")
	if got := srv.current("orders/k").Rev; got != "_server-rev-1" {
		t.Errorf("server's rev after the conflict: got %s, want _server-rev-1", got)
	}

	// Read it (a miss, then cached), and the next write is based on it.
	g := do(t, h, "GET", "/docs/orders/k", "")
	if g.status != 200 || g.body["v"] != float64(1) {
		t.Fatalf("GET: got %d %v, want 200 with v 1", g.status, g.body)
	}
	wantCache(t, g, "miss")
	a := do(t, h, "POST", "/docs/orders", `{"_key":"k","v":3}`)
	if a.status != http.StatusCreated {
		t.Fatalf("POST after GET: got %d %v, want 201", a.status, a.body)
	}
	srv.mu.Lock()
	last := srv.pushed[len(srv.pushed)-1]
	srv.mu.Unlock()
	if last.BaseRev != "_server-rev-1" || last.Rev != a.body["_rev"] {
		t.Errorf("push: got base %q rev %q, want base _server-rev-1 rev %v", last.BaseRev, last.Rev, a.body["_rev"])
	}
	g = do(t, h, "GET", "/docs/orders/k", "")
	if g.status != 200 || fmt.Sprint(g.body) != fmt.Sprint(a.body) {
		t.Errorf("GET after the write: got %d %v, want 200 %v", g.status, g.body, a.body)
	}
	wantCache(t, g, "hit")
}

func TestGetReadsThroughOnAMiss(t *testing.T) {
	srv := newMemServer()
	srv.put("orders/7-B", "_rev-7", `"item":"milk"`)
	srv.put("orders/gone", "_rev-g", `"x":1`)
	srv.mu.Lock()
	srv.docs["orders/gone"] = client.Change{Seq: 9, ID: "orders/gone", Rev: "_rev-g2", Deleted: true}
	srv.mu.Unlock()
	h := newTestHandler(t, counter(), srv.origin())

	g := do(t, h, "GET", "/docs/orders/7-B", "")
	if g.status != 200 || g.body["_id"] != "orders/7-B" || g.body["_rev"] != "_rev-7" || g.body["item"] != "milk" {
		t.Fatalf("GET miss: got %d %v, want 200 orders/7-B", g.status, g.body)
	}
	wantCache(t, g, "miss")
	h2 := do(t, h, "GET", "/docs/orders/7-B", "")
	if h2.status != 200 || fmt.Sprint(h2.body) != fmt.Sprint(g.body) {
		t.Errorf("GET hit: got %d %v, want 200 %v", h2.status, h2.body, g.body)
	}
	wantCache(t, h2, "hit")
	if _, gets := srv.counts(); gets != 1 {
		t.Errorf("reads from the server: got %d, want 1", gets)
	}

	for _, id := range []string{"orders/gone", "orders/never"} {
		for range 2 { // not cached as absent either
			a := do(t, h, "GET", "/docs/"+id, "")
			wantError(t, a, 404, "not_found", 1202)
			wantCache(t, a, "miss")
		}
	}
	if _, gets := srv.counts(); gets != 5 {
		t.Errorf("reads from the server: got %d, want 5", gets)
	}
}

func TestGetMissWithoutServer(t *testing.T) {
	tests := []struct {
		name   string
		get    func(context.Context, []string) ([]client.Change, error)
		status int
		code   string
		num    int
	}{
		{"unreachable", func(context.Context, []string) ([]client.Change, error) {
			return nil, fmt.Errorf("get: %w", client.ErrDisconnected)
		}, 503, "needs_server", 1900},
		{"timed out", func(context.Context, []string) ([]client.Change, error) {
			return nil, fmt.Errorf("get: %w", context.DeadlineExceeded)
		}, 503, "needs_server", 1900},
		{"refused", func(context.Context, []string) ([]client.Change, error) {
			return nil, fmt.Errorf("get: %w", &client.Error{Code: "unauthorized", Num: 401, Message: "bad token"})
		}, 502, "unauthorized", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTestHandler(t, counter(), &fakeOrigin{GetFunc: tt.get})
			a := do(t, h, "GET", "/docs/orders/1-A", "")
			wantError(t, a, tt.status, tt.code, tt.num)
			wantCache(t, a, "miss")
		})
	}
}

func TestGetDoesNotServeAWriteInFlight(t *testing.T) {
	srv := newMemServer()
	o := srv.origin()
	started, release := make(chan struct{}), make(chan struct{})
	o.PushFunc = func(ctx context.Context, items []client.PushItem) (client.PushOutcome, error) {
		close(started)
		<-release
		return srv.Push(ctx, items)
	}
	h := newTestHandler(t, counter(), o)
	posted := make(chan answer, 1)
	go func() { posted <- do(t, h, "POST", "/docs/orders", `{"_key":"k"}`) }()
	<-started

	// In the cache, not yet on the server: read through, and not found.
	g := do(t, h, "GET", "/docs/orders/k", "")
	wantError(t, g, 404, "not_found", 1202)
	wantCache(t, g, "miss")

	close(release)
	if a := <-posted; a.status != http.StatusCreated {
		t.Fatalf("POST: got %d %v, want 201", a.status, a.body)
	}
	g = do(t, h, "GET", "/docs/orders/k", "")
	if g.status != 200 {
		t.Fatalf("GET after the push: got %d %v, want 200", g.status, g.body)
	}
	wantCache(t, g, "hit")
}

func TestReadThroughDoesNotReplaceANewerWrite(t *testing.T) {
	srv := newMemServer()
	srv.put("orders/k", "_old", `"v":1`)
	o := srv.origin()
	reading, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	o.GetFunc = func(ctx context.Context, ids []string) ([]client.Change, error) {
		chs, err := srv.Get(ctx, ids) // read the old version…
		if first.CompareAndSwap(false, true) {
			close(reading)
			<-release // …and answer only after a write of the same document
		}
		return chs, err
	}
	h := newTestHandler(t, counter(), o)
	got := make(chan answer, 1)
	go func() { got <- do(t, h, "GET", "/docs/orders/k", "") }()
	<-reading
	// Meanwhile another request reads it too (cached) and writes on top.
	if g := do(t, h, "GET", "/docs/orders/k", ""); g.status != 200 {
		t.Fatalf("second GET: got %d %v, want 200", g.status, g.body)
	}
	w := do(t, h, "POST", "/docs/orders", `{"_key":"k","v":2}`)
	if w.status != http.StatusCreated {
		t.Fatalf("POST: got %d %v, want 201", w.status, w.body)
	}
	close(release)
	if g := <-got; g.status != 200 || g.body["v"] != float64(1) {
		t.Errorf("GET in flight: got %d %v, want the version it read (v 1)", g.status, g.body)
	}
	g := do(t, h, "GET", "/docs/orders/k", "")
	if g.status != 200 || fmt.Sprint(g.body) != fmt.Sprint(w.body) {
		t.Errorf("GET after: got %d %v, want the written version %v", g.status, g.body, w.body)
	}
	wantCache(t, g, "hit")
}

func TestOpenAppWithoutServer(t *testing.T) {
	a, err := openApp(config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	h := a.handler()
	wantError(t, do(t, h, "POST", "/docs/orders", `{}`), 503, "needs_server", core.NumNeedsServer)
	wantError(t, do(t, h, "POST", "/docs/orders", `{"_key":"k"}`), 503, "needs_server", core.NumNeedsServer)
	wantError(t, do(t, h, "GET", "/docs/orders/k", ""), 503, "needs_server", core.NumNeedsServer)
}
