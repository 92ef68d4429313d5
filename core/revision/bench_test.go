package revision_test

import (
	"testing"

	"github.com/hilodb/hilodb/core/revision"
)

func BenchmarkNextRev(b *testing.B) {
	c := revision.NewClock("A")
	b.ReportAllocs()
	for b.Loop() {
		_ = c.NextRev()
	}
}

func BenchmarkNextRevParallel(b *testing.B) {
	c := revision.NewClock("A")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = c.NextRev()
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	rev := revision.NewClock("A").NextRev()
	for b.Loop() {
		_, _, _ = revision.Decode(rev)
	}
}
