package idgen_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/hilodb/hilodb/idgen"
)

// ravenStyle is the baseline the issue names: an atomic take checked
// against the range's end, and fmt.Sprintf for the id, as RavenDB's
// clients do.
type ravenStyle struct {
	prefix string
	tag    string
	next   atomic.Int64
	high   int64
}

func (r *ravenStyle) NextID() string {
	n := r.next.Add(1)
	if n > r.high {
		panic("range spent")
	}
	return fmt.Sprintf("%s%d-%s", r.prefix, n, r.tag)
}

// bigRanges leases ranges of a million, so both sides measure the id path,
// not leases.
const bigRange = 1 << 20

func BenchmarkHiLoNextID(b *testing.B) {
	h := idgen.NewHiLo("orders", newMemSource(bigRange))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.NextID(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRavenStyleNextID(b *testing.B) {
	r := &ravenStyle{prefix: "orders/", tag: "A", high: 1 << 62}
	b.ReportAllocs()
	for b.Loop() {
		_ = r.NextID()
	}
}

// The 8-goroutine runs use SetParallelism so that GOMAXPROCS·p = 8 on any
// machine with GOMAXPROCS dividing 8.
func parallel8(b *testing.B) {
	p := 8 / max(1, procs())
	b.SetParallelism(max(1, p))
}

func BenchmarkHiLoNextID8(b *testing.B) {
	h := idgen.NewHiLo("orders", newMemSource(bigRange))
	ctx := context.Background()
	b.ReportAllocs()
	parallel8(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := h.NextID(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkRavenStyleNextID8(b *testing.B) {
	r := &ravenStyle{prefix: "orders/", tag: "A", high: 1 << 62}
	b.ReportAllocs()
	parallel8(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = r.NextID()
		}
	})
}

func BenchmarkHiLoNextNumber(b *testing.B) {
	h := idgen.NewHiLo("orders", newMemSource(bigRange))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := h.NextNumber(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHiLoNextIDJournal is the id path with a journal write every 64
// numbers (to memory: the cost of the bookkeeping, not of a disk).
func BenchmarkHiLoNextIDJournal(b *testing.B) {
	h := idgen.NewHiLoWith("orders", newMemSource(bigRange), idgen.Options{Journal: newMemJournal(), Prefetch: 0.25})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.NextID(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHiLoSmallRanges leases every 32 ids, RavenDB's first range size,
// from an in-memory source: the cost of the swap.
func BenchmarkHiLoSmallRanges(b *testing.B) {
	h := idgen.NewHiLo("orders", newMemSource(32))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.NextID(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
