package database_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/database"
)

// logOf returns the log of 200 writes, one frame each, over a snapshot of
// none (so that every frame counts).
func logOf(t *testing.T, frames int) []byte {
	t.Helper()
	st, _ := core.Open(":memory:", core.Options{Node: "T"})
	defer st.Close()
	mem := &database.MemStorage{}
	if _, err := database.OpenJournal(mem, st, database.JournalOptions{CompactAt: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	for i := range frames {
		put(t, st, fmt.Sprintf("orders/%d", i), i)
	}
	return mem.Log
}

// countOrders opens a store over log and says how many of orders/0…n-1 it
// holds, or the open's error.
func countOrders(log []byte, n int) (int, *database.MemStorage, error) {
	st, _ := core.Open(":memory:", core.Options{Node: "T"})
	defer st.Close()
	mem := &database.MemStorage{Log: bytes.Clone(log)}
	if _, err := database.OpenJournal(mem, st, database.JournalOptions{CompactAt: 1 << 30}); err != nil {
		return 0, mem, err
	}
	found := 0
	for i := range n {
		if _, err := st.Get(fmt.Sprintf("orders/%d", i)); err == nil {
			found++
		}
	}
	return found, mem, nil
}

// TestDamagedLogStopsTheOpen flips one byte of a 200-frame log at several
// places: each stops the open with ErrDamaged naming the byte, and leaves
// the log as it was. Only damage in the last frame, and a log cut short,
// open, without that frame.
func TestDamagedLogStopsTheOpen(t *testing.T) {
	const frames = 200
	log := logOf(t, frames)
	frameLen := len(log) / frames // every frame is about as long
	for _, at := range []int{0, 1, len(log) / 10, len(log) / 2, len(log) - 2*frameLen} {
		t.Run(fmt.Sprintf("flip at %d", at), func(t *testing.T) {
			bad := bytes.Clone(log)
			bad[at] ^= 0x20
			n, mem, err := countOrders(bad, frames)
			if !errors.Is(err, database.ErrDamaged) {
				t.Fatalf("opened with %d of %d writes, err %v; want ErrDamaged", n, frames, err)
			}
			if !strings.Contains(err.Error(), "damaged at byte") || !strings.Contains(err.Error(), "docs/operations.md") {
				t.Errorf("error does not say where and how to recover: %v", err)
			}
			if !bytes.Equal(mem.Log, bad) || mem.Snap != nil {
				t.Errorf("the failed open changed the storage: log %d bytes, snapshot %d", len(mem.Log), len(mem.Snap))
			}
		})
	}
	for name, bad := range map[string][]byte{
		"flip in the last frame": func() []byte { b := bytes.Clone(log); b[len(b)-frameLen/2] ^= 0x20; return b }(),
		"cut short":              log[:len(log)-3],
	} {
		t.Run(name, func(t *testing.T) {
			n, mem, err := countOrders(bad, frames)
			if err != nil || n != frames-1 {
				t.Fatalf("opened with %d of %d writes, err %v; want %d", n, frames, err, frames-1)
			}
			if len(mem.Log) != 0 || len(mem.Snap) == 0 {
				t.Errorf("the unfinished frame was not compacted away: log %d bytes, snapshot %d", len(mem.Log), len(mem.Snap))
			}
		})
	}
}

// TestDamagedSnapshotFailsItsChecksum flips each byte of a snapshot in
// turn: none opens (format 2 had no checksum, and most of these opened
// with documents missing or changed).
func TestDamagedSnapshotFailsItsChecksum(t *testing.T) {
	for _, indexed := range []bool{false, true} {
		snap := snapshotWith(t, 5, indexed)
		if want := map[bool]string{false: "hilodb-snapshot 3 ", true: "hilodb-snapshot 8 "}[indexed]; !bytes.HasPrefix(snap, []byte(want)) {
			t.Fatalf("snapshot %q, want %q", snap[:20], want)
		}
		t.Run(string(snap[:17]), func(t *testing.T) { damagedFailsChecksum(t, snap) })
	}
}

func damagedFailsChecksum(t *testing.T, snap []byte) {
	opened := 0
	for i := range snap {
		for _, flip := range []byte{0x01, 0x20} {
			bad := bytes.Clone(snap)
			bad[i] ^= flip
			st, _ := core.Open(":memory:", core.Options{Node: "T"})
			if _, err := database.OpenJournal(&database.MemStorage{Snap: bad}, st, database.JournalOptions{}); err == nil {
				opened++
				if opened <= 3 {
					t.Errorf("byte %d of %d flipped by %#x: opened", i, len(snap), flip)
				}
			}
			st.Close()
		}
	}
	if opened > 0 {
		t.Errorf("%d of %d damaged snapshots opened", opened, 2*len(snap))
	}
	// The error says what: a damaged item is ErrDamaged.
	bad := bytes.Clone(snap)
	bad[len(bad)-2] ^= 0x20
	st, _ := core.Open(":memory:", core.Options{Node: "T"})
	defer st.Close()
	if _, err := database.OpenJournal(&database.MemStorage{Snap: bad}, st, database.JournalOptions{}); !errors.Is(err, database.ErrDamaged) || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("damaged item: %v, want ErrDamaged about the checksum", err)
	}
}

// TestReadsFormat2Snapshot opens a snapshot of format 2 (no checksum),
// as written before format 3.
func TestReadsFormat2Snapshot(t *testing.T) {
	snap := snapshotOf(t, 4)
	line, body, _ := bytes.Cut(snap, []byte("\n"))
	f := strings.Fields(string(line))
	if f[1] != "3" || len(f) != 5 {
		t.Fatalf("header %q, want format 3 with a checksum", line)
	}
	v2 := fmt.Appendf(nil, "hilodb-snapshot 2 %s %s\n%s", f[2], f[3], body)
	st, _ := core.Open(":memory:", core.Options{Node: "T"})
	defer st.Close()
	if _, err := database.OpenJournal(&database.MemStorage{Snap: v2}, st, database.JournalOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if _, err := st.Get(fmt.Sprintf("orders/%d", i)); err != nil {
			t.Errorf("orders/%d: %v", i, err)
		}
	}
}

// TestDamagedDirLogIsKept opens a store directory whose log has a flipped
// byte: the open fails, and the log file keeps every byte, so cutting it
// where the error says opens the writes before the damage.
func TestDamagedDirLogIsKept(t *testing.T) {
	dir := t.TempDir()
	st, j, d := open(t, dir, database.JournalOptions{CompactAt: 1 << 30})
	for i := range 50 {
		put(t, st, fmt.Sprintf("orders/%d", i), i)
	}
	if err := j.Sync(); err != nil {
		t.Fatal(err)
	}
	st.Close()
	d.Close()
	path := filepath.Join(dir, "log")
	b, _ := os.ReadFile(path)
	at := len(b) / 10
	b[at] ^= 0x20
	os.WriteFile(path, b, 0o640)

	st2, _ := core.Open(":memory:", core.Options{Node: "T"})
	defer st2.Close()
	d2, _ := database.OpenDir(dir)
	_, err := database.OpenJournal(d2, st2, database.JournalOptions{})
	d2.Close()
	if !errors.Is(err, database.ErrDamaged) {
		t.Fatalf("open: %v, want ErrDamaged", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
		t.Fatalf("log changed by the failed open: %d bytes, was %d", len(after), len(b))
	}
	var cut int
	if _, err := fmt.Sscanf(err.Error()[strings.Index(err.Error(), "cutting the log to "):], "cutting the log to %d bytes", &cut); err != nil {
		t.Fatalf("no cut in %q: %v", err, err)
	}
	if err := os.Truncate(path, int64(cut)); err != nil {
		t.Fatal(err)
	}
	st3, _, _ := open(t, dir, database.JournalOptions{})
	n := 0
	for i := range 50 {
		if _, err := st3.Get(fmt.Sprintf("orders/%d", i)); err == nil {
			n++
		}
	}
	if n == 0 || n >= 50 {
		t.Errorf("after the cut the store holds %d of 50 writes, want those before the damage", n)
	}
}
