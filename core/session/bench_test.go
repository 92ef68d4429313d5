package session_test

import (
	"context"
	"testing"

	"github.com/hilodb/hilodb/core/session"
)

// BenchmarkSessionSaveChanges100 stores 100 entities and saves them in one
// transaction; ns/op is per entity.
func BenchmarkSessionSaveChanges100(b *testing.B) {
	s := newTestStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	var ss *session.Session
	n := 0
	for b.Loop() {
		if n%100 == 0 {
			ss = session.Open(s.Store, session.Options{})
		}
		ss.Store(ctx, &Order{Total: float64(n)})
		n++
		if n%100 == 0 {
			if err := ss.SaveChanges(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}
