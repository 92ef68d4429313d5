package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/idgen"
)

// memRanges leases HiLo ranges from memory the way the sync server does,
// with a fixed size.
type memRanges struct {
	mu   sync.Mutex
	max  map[string]int64
	size int64
	tag  string
}

func newMemRanges(size int64) *memRanges {
	return &memRanges{max: map[string]int64{}, size: size, tag: "A"}
}

func (m *memRanges) NextRange(ctx context.Context, tag string, last idgen.Range) (idgen.Range, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	low := m.max[tag] + 1
	m.max[tag] += m.size
	return idgen.Range{Prefix: tag + "/", Low: low, High: m.max[tag], LastSize: m.size, ServerTag: m.tag, LastRangeAt: time.Now()}, nil
}

// memIdentities is an in-memory identity source with RavenDB's rules. It
// fails with an error wrapping core.ErrNeedsServer while offline.
type memIdentities struct {
	mu      sync.Mutex
	vals    map[string]int64
	offline bool
	calls   int // calls made, batch or single
}

var errOffline = fmt.Errorf("dial sync server: %w", core.ErrNeedsServer)

func (m *memIdentities) NextIdentity(ctx context.Context, name string) (int64, error) {
	vs, err := m.NextIdentities(ctx, []string{name})
	if err != nil {
		return 0, err
	}
	return vs[0], nil
}

func (m *memIdentities) NextIdentities(ctx context.Context, names []string) ([]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.offline {
		return nil, errOffline
	}
	out := make([]int64, len(names))
	for i, n := range names {
		m.vals[n]++
		out[i] = m.vals[n]
	}
	return out, nil
}

func (m *memIdentities) SeedIdentity(ctx context.Context, name string, value int64, force bool) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.offline {
		return 0, errOffline
	}
	if force || value > m.vals[name] {
		m.vals[name] = value
	}
	return m.vals[name], nil
}

var _ core.IdentitySource = (*memIdentities)(nil)

// testStore is a store with HiLo ranges of 32 from server "A", node tag
// "C", and an identity source.
type testStore struct {
	*core.Store
	idents *memIdentities
}

func newTestStore(t testing.TB, mod ...func(*core.Options)) *testStore {
	t.Helper()
	gen := idgen.NewGenerator(newMemRanges(32))
	idents := &memIdentities{vals: map[string]int64{}}
	opts := core.Options{Node: "C", IDs: gen, Identities: idents}
	for _, f := range mod {
		f(&opts)
	}
	s, err := core.Open(":memory:", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); gen.Close(context.Background()) })
	return &testStore{Store: s, idents: idents}
}

func decode(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, b)
	}
	return m
}

func mustGet(t *testing.T, s *testStore, id string) []byte {
	t.Helper()
	b, err := s.Get(id)
	if err != nil {
		t.Fatalf("Get(%q): %v", id, err)
	}
	return b
}

// wantErr fails unless err is an *core.Error with number num that unwraps
// to sentinel.
func wantErr(t testing.TB, err error, num int, sentinel error) *core.Error {
	t.Helper()
	var e *core.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v (%T), want *core.Error %d", err, err, num)
	}
	if e.Num != num || !errors.Is(err, sentinel) || e.Message == "" || e.Code == "" {
		t.Fatalf("got %d %q %q, want %d (%v)", e.Num, e.Code, e.Message, num, sentinel)
	}
	return e
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func regexpMust(re string) *regexp.Regexp { return regexp.MustCompile(re) }
