package core_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/tidwall/gjson"
)

var benchDoc = []byte(`{"customer":"companies/1-A","lines":[{"product":"products/7-A","qty":2,"price":9.5}],"total":19,"status":"new"}`)

// BenchmarkPut is one document per transaction with a HiLo id.
func BenchmarkPut(b *testing.B) {
	s := newTestStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(int64(len(benchDoc)))
	for b.Loop() {
		if _, err := s.Put(ctx, "orders", benchDoc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInsertMany100 is 100 documents per transaction; ns/op is per
// document.
func BenchmarkInsertMany100(b *testing.B) {
	s := newTestStore(b)
	ctx := context.Background()
	docs := make([][]byte, 100)
	for i := range docs {
		docs[i] = benchDoc
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(benchDoc)))
	n := 0
	for b.Loop() {
		if n%100 == 0 {
			if _, err := s.InsertMany(ctx, "orders", docs, nil); err != nil {
				b.Fatal(err)
			}
		}
		n++
	}
}

// BenchmarkGet reads one stored document: the peer of the npm package's
// get in bench/js/bridge.mjs (make bench-bridge runs both).
func BenchmarkGet(b *testing.B) {
	s := newTestStore(b)
	ctx := context.Background()
	doc, err := s.Put(ctx, "orders", benchDoc)
	if err != nil {
		b.Fatal(err)
	}
	id := gjson.GetBytes(doc, "_id").String()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Get(id); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyRemote1000 applies pulls of 1,000 documents new to the
// store, as a pull into a new store does; ns/op is per document.
func BenchmarkApplyRemote1000(b *testing.B) {
	s := newTestStore(b)
	batch := make([]core.RemoteChange, 1000)
	n, seq := 0, int64(0)
	b.ReportAllocs()
	for b.Loop() {
		if n%len(batch) == 0 {
			for i := range batch {
				seq++
				id := "orders/" + strconv.FormatInt(seq, 10) + "-B"
				batch[i] = core.RemoteChange{Seq: seq, Version: core.Version{ID: id, Rev: "r1", Doc: []byte(`{"_id":"` + id + `","_rev":"r1","total":19,"status":"new"}`)}}
			}
			if _, err := s.ApplyRemote(batch, seq, nil); err != nil {
				b.Fatal(err)
			}
		}
		n++
	}
}

// BenchmarkPendingWrites5000 reads a push's batch of 5,000 pending writes
// from a store of 10,000 new documents, as a push reads each batch;
// ns/op is per batch.
func BenchmarkPendingWrites5000(b *testing.B) {
	s := newTestStore(b)
	ctx := context.Background()
	docs := make([][]byte, 10000)
	for i := range docs {
		docs[i] = []byte(`{"total":` + strconv.Itoa(i) + `,"item":"widget"}`)
	}
	if _, err := s.InsertMany(ctx, "orders", docs, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p, err := s.PendingWrites(5000)
		if err != nil || len(p) != 5000 {
			b.Fatal(len(p), err)
		}
	}
}

// BenchmarkAcknowledge5000 records the acknowledgements of a push batch of
// 5,000 documents written once: each one's pending mark is dropped.
func BenchmarkAcknowledge5000(b *testing.B) {
	ctx := context.Background()
	docs := make([][]byte, 10000)
	for i := range docs {
		docs[i] = []byte(`{"total":` + strconv.Itoa(i) + `,"item":"widget"}`)
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		s := newTestStore(b)
		if _, err := s.InsertMany(ctx, "orders", docs, nil); err != nil {
			b.Fatal(err)
		}
		p, err := s.PendingWrites(5000)
		if err != nil || len(p) != 5000 {
			b.Fatal(len(p), err)
		}
		acks := make([]core.Ack, len(p))
		for i, w := range p {
			acks[i] = core.Ack{ID: w.ID, Rev: w.Rev}
		}
		b.StartTimer()
		if err := s.Acknowledge(acks...); err != nil {
			b.Fatal(err)
		}
	}
}
