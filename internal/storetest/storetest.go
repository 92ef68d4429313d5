// Package storetest holds what the tests of core and of the packages built
// on it share: HiLo ranges and identities kept in memory the way the sync
// server keeps them, a store made with them, and a few checks.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/idgen"
)

// Ranges leases HiLo ranges from memory the way the sync server does, of
// a fixed size, from server tag "A".
type Ranges struct {
	mu   sync.Mutex
	max  map[string]int64
	size int64
	tag  string
}

// NewRanges returns Ranges of size numbers each.
func NewRanges(size int64) *Ranges {
	return &Ranges{max: map[string]int64{}, size: size, tag: "A"}
}

// NextRange implements idgen.RangeSource.
func (m *Ranges) NextRange(ctx context.Context, tag string, last idgen.Range) (idgen.Range, error) {
	return m.lease(tag, m.size), nil
}

// Leased returns the highest number leased for tag.
func (m *Ranges) Leased(tag string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.max[tag]
}

func (m *Ranges) lease(tag string, size int64) idgen.Range {
	m.mu.Lock()
	defer m.mu.Unlock()
	low := m.max[tag] + 1
	m.max[tag] += size
	return idgen.Range{Prefix: tag + "/", Low: low, High: m.max[tag], LastSize: size, ServerTag: m.tag, LastRangeAt: time.Now()}
}

// SizedRanges is Ranges that also leases a range of a requested size
// (idgen.SizedRangeSource), counting its leases.
type SizedRanges struct {
	*Ranges
	mu     sync.Mutex
	leases int
}

// NextRange implements idgen.RangeSource.
func (s *SizedRanges) NextRange(ctx context.Context, tag string, last idgen.Range) (idgen.Range, error) {
	return s.NextRangeFor(ctx, tag, last, 0)
}

// NextRangeFor implements idgen.SizedRangeSource: at least want numbers.
func (s *SizedRanges) NextRangeFor(ctx context.Context, tag string, last idgen.Range, want int64) (idgen.Range, error) {
	s.mu.Lock()
	s.leases++
	s.mu.Unlock()
	return s.lease(tag, max(s.size, want)), nil
}

// Leases returns how many ranges were leased.
func (s *SizedRanges) Leases() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leases
}

// ErrOffline is what Identities fails with while offline.
var ErrOffline = fmt.Errorf("dial sync server: %w", core.ErrNeedsServer)

// Identities is an in-memory identity source with RavenDB's rules. It
// fails with ErrOffline while Offline is set.
type Identities struct {
	mu      sync.Mutex
	vals    map[string]int64
	Offline bool
	Calls   int // calls made, batch or single
}

// NewIdentities returns Identities with every identity at 0.
func NewIdentities() *Identities { return &Identities{vals: map[string]int64{}} }

// NextIdentity implements core.IdentitySource.
func (m *Identities) NextIdentity(ctx context.Context, name string) (int64, error) {
	vs, err := m.NextIdentities(ctx, []string{name})
	if err != nil {
		return 0, err
	}
	return vs[0], nil
}

// NextIdentities implements core.IdentitySource.
func (m *Identities) NextIdentities(ctx context.Context, names []string) ([]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls++
	if m.Offline {
		return nil, ErrOffline
	}
	out := make([]int64, len(names))
	for i, n := range names {
		m.vals[n]++
		out[i] = m.vals[n]
	}
	return out, nil
}

// SeedIdentity implements core.IdentitySource.
func (m *Identities) SeedIdentity(ctx context.Context, name string, value int64, force bool) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls++
	if m.Offline {
		return 0, ErrOffline
	}
	if force || value > m.vals[name] {
		m.vals[name] = value
	}
	return m.vals[name], nil
}

var _ core.IdentitySource = (*Identities)(nil)

// Store is a store with HiLo ranges of 32 from server "A", node tag "C",
// and an identity source.
type Store struct {
	*core.Store
	Idents *Identities
	Gen    *idgen.Generator
}

// NewStore opens a Store, closed when t ends; mod may change its options.
func NewStore(t testing.TB, mod ...func(*core.Options)) *Store {
	t.Helper()
	gen := idgen.NewGenerator(NewRanges(32))
	idents := NewIdentities()
	opts := core.Options{Node: "C", IDs: gen, Identities: idents}
	for _, f := range mod {
		f(&opts)
	}
	s, err := core.Open(":memory:", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); gen.Close(context.Background()) })
	return &Store{Store: s, Idents: idents, Gen: gen}
}

// ExampleStore opens a store whose HiLo ranges come from an in-memory
// source standing in for the sync server (tag "A"), node "C": the store of
// the packages' examples.
func ExampleStore() *core.Store {
	s, _ := core.Open(":memory:", core.Options{Node: "C", IDs: idgen.NewGenerator(NewRanges(32)), Identities: NewIdentities()})
	return s
}

// Decode parses b as a JSON object, failing t if it is not one.
func Decode(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, b)
	}
	return m
}

// WantErr fails t unless err is a *core.Error with number num that
// unwraps to sentinel.
func WantErr(t testing.TB, err error, num int, sentinel error) *core.Error {
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

// MustJSON is v as JSON; it panics if v cannot be.
func MustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
