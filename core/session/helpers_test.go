package session_test

import (
	"regexp"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/internal/storetest"
)

// The helpers these tests share with core's (internal/storetest), under
// the names they use.
type testStore = storetest.Store

var (
	decode   = storetest.Decode
	wantErr  = storetest.WantErr
	mustJSON = storetest.MustJSON
)

func newTestStore(t testing.TB, mod ...func(*core.Options)) *testStore {
	t.Helper()
	return storetest.NewStore(t, mod...)
}

func mustGet(t *testing.T, s *testStore, id string) []byte {
	t.Helper()
	b, err := s.Get(id)
	if err != nil {
		t.Fatalf("Get(%q): %v", id, err)
	}
	return b
}

func regexpMust(re string) *regexp.Regexp { return regexp.MustCompile(re) }
