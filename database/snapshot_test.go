package database_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/database"
)

// TestReadsFormat1Store opens a store directory written by the version
// before snapshot format 2 (testdata/format1: a snapshot in buntdb's file
// format, then a log), finds every write in it, and writes and reads back
// format 3.
func TestReadsFormat1Store(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"snapshot", "log"} {
		b, err := os.ReadFile(filepath.Join("testdata", "format1", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	check := func(st *core.Store, extra int) {
		t.Helper()
		for i := range 25 {
			_, err := st.Get(fmt.Sprintf("orders/%d", i))
			if gone := i == 1 || i == 2; gone != (err != nil) {
				t.Errorf("orders/%d: %v (deleted: %v)", i, err, gone)
			}
		}
		// Written: orders/0…24 and users/…1-T; orders/0 acknowledged.
		if n, err := st.PendingCount(); err != nil || n != 25+extra {
			t.Errorf("pending writes: %d %v, want %d", n, err, 25+extra)
		}
		if _, ok := st.CollectionInfo("users"); !ok {
			t.Error("collection users is gone")
		}
		if got := st.NodeSequence(); got != uint64(1+extra) {
			t.Errorf("node sequence %d, want %d", got, 1+extra)
		}
	}
	st, j, _ := open(t, dir, database.JournalOptions{})
	check(st, 0)
	put(t, st, "users/", 1) // users/…2-T
	if err := j.Compact(); err != nil {
		t.Fatal(err)
	}
	snap, _ := os.ReadFile(filepath.Join(dir, "snapshot"))
	if !bytes.HasPrefix(snap, []byte("hilodb-snapshot 3 ")) {
		t.Fatalf("snapshot after a compaction starts %q, want format 3", snap[:min(len(snap), 24)])
	}
	st2, _, _ := open(t, dir, database.JournalOptions{})
	check(st2, 1)
}

// snapshotOf returns the format 2 snapshot of a store of n documents.
func snapshotOf(t testing.TB, n int) []byte { return snapshotWith(t, n, false) }

// snapshotWith is snapshotOf, of a store with an index on the orders'
// totals when indexed (format 8).
func snapshotWith(t testing.TB, n int, indexed bool) []byte {
	t.Helper()
	st, _ := core.Open(":memory:", core.Options{Node: "T"})
	defer st.Close()
	mem := &database.MemStorage{}
	j, err := database.OpenJournal(mem, st, database.JournalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if indexed {
		if _, _, err := st.CreateIndex(context.Background(), "orders", core.IndexDef{Fields: []string{"total"}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		put(t, st, fmt.Sprintf("orders/%d", i), i)
	}
	if err := j.Compact(); err != nil {
		t.Fatal(err)
	}
	return mem.Snap
}

// TestDamagedSnapshotFails opens snapshots cut short, with bytes after
// their items and with a wrong count: each is an error, never a store
// missing some of its documents.
func TestDamagedSnapshotFails(t *testing.T) {
	snap := snapshotOf(t, 3)
	line, body, _ := bytes.Cut(snap, []byte("\n"))
	fields := strings.Fields(string(line))
	bad := map[string][]byte{
		"trailing byte":  append(append([]byte(nil), snap...), 0),
		"count too high": fmt.Appendf(nil, "hilodb-snapshot 2 %s %d\n%s", fields[2], 7, body),
		"count too low":  fmt.Appendf(nil, "hilodb-snapshot 2 %s %d\n%s", fields[2], 5, body),
		"no count":       fmt.Appendf(nil, "hilodb-snapshot 2 %s\n%s", fields[2], body),
		"unknown format": fmt.Appendf(nil, "hilodb-snapshot 4 %s %s %s\n%s", fields[2], fields[3], fields[4], body),
	}
	for cut := 1; cut < len(snap); cut++ {
		bad[fmt.Sprintf("cut at %d", cut)] = snap[:cut]
	}
	for name, b := range bad {
		st, _ := core.Open(":memory:", core.Options{Node: "T"})
		if _, err := database.OpenJournal(&database.MemStorage{Snap: b}, st, database.JournalOptions{}); err == nil {
			t.Errorf("%s: opened", name)
		}
		st.Close()
	}
	st, _ := core.Open(":memory:", core.Options{Node: "T"})
	defer st.Close()
	if _, err := database.OpenJournal(&database.MemStorage{Snap: snap}, st, database.JournalOptions{}); err != nil {
		t.Fatalf("whole snapshot: %v", err)
	}
	if n, _ := st.PendingCount(); n != 3 {
		t.Errorf("whole snapshot: %d pending writes, want 3", n)
	}
}

// FuzzOpenSnapshot opens arbitrary snapshots: an error or a store, never a
// panic.
func FuzzOpenSnapshot(f *testing.F) {
	f.Add(snapshotOf(f, 2))
	if b, err := os.ReadFile(filepath.Join("testdata", "format1", "snapshot")); err == nil {
		f.Add(b)
	}
	f.Add([]byte("hilodb-snapshot 2 1 1\n\x01k\x01v"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, _ := core.Open(":memory:", core.Options{Node: "T"})
		defer st.Close()
		_, _ = database.OpenJournal(&database.MemStorage{Snap: b}, st, database.JournalOptions{})
		_, _ = st.Get("orders/0")
	})
}

// FuzzOpenLog opens a store from a snapshot and an arbitrary log: an error
// or a store, never a panic.
func FuzzOpenLog(f *testing.F) {
	snap := snapshotOf(f, 2)
	mem := &database.MemStorage{Snap: snap}
	st, _ := core.Open(":memory:", core.Options{Node: "T"})
	if _, err := database.OpenJournal(mem, st, database.JournalOptions{CompactAt: 1 << 30}); err != nil {
		f.Fatal(err)
	}
	put(f, st, "orders/9", 9)
	if err := st.Delete("orders/0"); err != nil {
		f.Fatal(err)
	}
	st.Close()
	f.Add(mem.Log)
	f.Add(mem.Log[:len(mem.Log)-1])
	f.Fuzz(func(t *testing.T, log []byte) {
		st, _ := core.Open(":memory:", core.Options{Node: "T"})
		defer st.Close()
		_, _ = database.OpenJournal(&database.MemStorage{Snap: snap, Log: log}, st, database.JournalOptions{})
		_, _ = st.Get("orders/1")
	})
}
