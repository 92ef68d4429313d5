package database_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/database"
)

// BenchmarkPutInto compares one durable put into an empty store with one
// into a store of 100,000 documents: a write costs what it changes.
func BenchmarkPutInto(b *testing.B) {
	for _, size := range []int{0, 100000} {
		b.Run(fmt.Sprintf("docs=%d", size), func(b *testing.B) {
			st, _ := core.Open(":memory:", core.Options{Node: "B"})
			defer st.Close()
			ctx := context.Background()
			for i := range size {
				st.Put(ctx, "orders", []byte(fmt.Sprintf(`{"_id":"orders/%d","n":%d}`, i, i)))
			}
			if _, err := database.OpenJournal(&database.MemStorage{}, st, database.JournalOptions{}); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := st.Put(ctx, "orders", []byte(fmt.Sprintf(`{"_id":"new/%d","n":%d}`, i, i))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReopen measures opening a journal of 100,000 documents (the
// browser bench's small orders, each still to be pushed): the snapshot is
// loaded into a fresh store, what a page pays on every load. format=1 is
// the snapshot as the version before wrote it (buntdb's file format),
// format=2 as this one writes it; run both side by side, under GOOS=js too.
func BenchmarkReopen(b *testing.B) {
	st, _ := core.Open(":memory:", core.Options{Node: "B"})
	ctx := context.Background()
	mem := &database.MemStorage{}
	j, err := database.OpenJournal(mem, st, database.JournalOptions{})
	if err != nil {
		b.Fatal(err)
	}
	docs := make([][]byte, 0, 1000)
	for i := range 100000 {
		docs = append(docs, fmt.Appendf(nil, `{"_id":"orders/%d-A","total":%d,"item":"widget","qty":%d,"note":"a small order"}`, i+1, i, i%7))
		if len(docs) == cap(docs) {
			if _, err := st.InsertMany(ctx, "orders", docs, nil); err != nil {
				b.Fatal(err)
			}
			docs = docs[:0]
		}
	}
	if err := j.Compact(); err != nil {
		b.Fatal(err)
	}
	var v1 bytes.Buffer
	v1.WriteString("hilodb-snapshot 1 1\n")
	if err := st.SaveAt(&v1, nil); err != nil {
		b.Fatal(err)
	}
	st.Close()
	for _, tt := range []struct {
		format string
		snap   []byte
	}{{"1", v1.Bytes()}, {"2", mem.Snap}} {
		b.Run("format="+tt.format, func(b *testing.B) {
			b.SetBytes(int64(len(tt.snap)))
			reopenEach(b, &database.MemStorage{Snap: tt.snap})
		})
	}
}

// BenchmarkReopenLog measures opening a journal whose 100,000 documents are
// all in the log, as a store killed before it compacted leaves it: in 100
// frames of 1,000 (bulk writes) or in 100,000 of one (single puts).
func BenchmarkReopenLog(b *testing.B) {
	for _, per := range []int{1000, 1} {
		b.Run(fmt.Sprintf("docsPerFrame=%d", per), func(b *testing.B) {
			st, _ := core.Open(":memory:", core.Options{Node: "B"})
			ctx := context.Background()
			mem := &database.MemStorage{}
			if _, err := database.OpenJournal(mem, st, database.JournalOptions{CompactAt: 1 << 40}); err != nil {
				b.Fatal(err)
			}
			docs := make([][]byte, 0, per)
			for i := range 100000 {
				docs = append(docs, fmt.Appendf(nil, `{"_id":"orders/%d-A","total":%d,"item":"widget","qty":%d,"note":"a small order"}`, i+1, i, i%7))
				if len(docs) == cap(docs) {
					if _, err := st.InsertMany(ctx, "orders", docs, nil); err != nil {
						b.Fatal(err)
					}
					docs = docs[:0]
				}
			}
			st.Close()
			if mem.Snap != nil {
				b.Fatal("compacted")
			}
			b.SetBytes(int64(len(mem.Log)))
			reopenEach(b, &database.MemStorage{Log: mem.Log})
		})
	}
}

// reopenEach opens a fresh store over what saved holds once per iteration
// of b: what a reopen costs.
func reopenEach(b *testing.B, saved *database.MemStorage) {
	for b.Loop() {
		fresh, _ := core.Open(":memory:", core.Options{Node: "B"})
		if _, err := database.OpenJournal(&database.MemStorage{Snap: saved.Snap, Log: saved.Log}, fresh, database.JournalOptions{}); err != nil {
			b.Fatal(err)
		}
		fresh.Close()
	}
}
