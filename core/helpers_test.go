package core_test

import (
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/internal/storetest"
)

// The helpers the tests of core share with those of the packages on it
// (internal/storetest), under the names these tests use.
type testStore = storetest.Store

var (
	newMemRanges     = storetest.NewRanges
	newMemIdentities = storetest.NewIdentities
	errOffline       = storetest.ErrOffline
	decode           = storetest.Decode
	wantErr          = storetest.WantErr
	mustJSON         = storetest.MustJSON
)

func newTestStore(t testing.TB, mod ...func(*core.Options)) *testStore {
	t.Helper()
	return storetest.NewStore(t, mod...)
}
