package database_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/database"
)

// memStorage is a Storage in memory: the benchmarks measure the journal,
// not the disk.
type memStorage struct{ snap, log []byte }

func (m *memStorage) Load() ([]byte, []byte, error) { return m.snap, m.log, nil }
func (m *memStorage) Append(b []byte) error         { m.log = append(m.log, b...); return nil }
func (m *memStorage) Compact(b []byte) error {
	m.snap, m.log = append([]byte(nil), b...), nil
	return nil
}

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
			if _, err := database.OpenJournal(&memStorage{}, st, database.JournalOptions{}); err != nil {
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

// BenchmarkReopen measures opening a journal of 100,000 documents: the
// snapshot is loaded into a fresh store (what a page pays on every load).
func BenchmarkReopen(b *testing.B) {
	st, _ := core.Open(":memory:", core.Options{Node: "B"})
	ctx := context.Background()
	mem := &memStorage{}
	j, err := database.OpenJournal(mem, st, database.JournalOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 100000 {
		st.Put(ctx, "orders", []byte(fmt.Sprintf(`{"_id":"orders/%d","n":%d,"item":"something to carry"}`, i, i)))
	}
	if err := j.Compact(); err != nil {
		b.Fatal(err)
	}
	st.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fresh, _ := core.Open(":memory:", core.Options{Node: "B"})
		if _, err := database.OpenJournal(mem, fresh, database.JournalOptions{}); err != nil {
			b.Fatal(err)
		}
		fresh.Close()
	}
}
