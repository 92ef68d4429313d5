package database_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/database"
)

// open opens a store over the directory dir.
func open(t testing.TB, dir string, opts database.JournalOptions) (*core.Store, *database.Journal, *database.Dir) {
	t.Helper()
	return openOver(t, dir, opts, func(d *database.Dir) database.Storage { return d })
}

// openOver opens a store over the directory dir through the Storage that
// over makes of it.
func openOver(t testing.TB, dir string, opts database.JournalOptions, over func(*database.Dir) database.Storage) (*core.Store, *database.Journal, *database.Dir) {
	t.Helper()
	st, err := core.Open(":memory:", core.Options{Node: "T"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := database.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	j, err := database.OpenJournal(over(d), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(); d.Close() })
	return st, j, d
}

func put(t testing.TB, st *core.Store, id string, v int) {
	t.Helper()
	if _, err := st.Put(context.Background(), "orders", []byte(fmt.Sprintf(`{"_id":%q,"v":%d}`, id, v))); err != nil {
		t.Fatal(err)
	}
}

func TestReopenFindsEveryWrite(t *testing.T) {
	for _, tt := range []struct {
		name      string
		compactAt int
	}{{"log only", 1 << 30}, {"compacted often", 2048}} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			st, j, d := open(t, dir, database.JournalOptions{CompactAt: tt.compactAt})
			for i := range 500 {
				put(t, st, fmt.Sprintf("orders/%d", i), i)
			}
			for i := 0; i < 500; i += 3 {
				if err := st.Delete(fmt.Sprintf("orders/%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			put(t, st, "users/", 1) // the node sequence is journaled too
			if err := j.Sync(); err != nil {
				t.Fatal(err)
			}
			st.Close()
			d.Close()

			st2, _, _ := open(t, dir, database.JournalOptions{})
			for i := range 500 {
				_, err := st2.Get(fmt.Sprintf("orders/%d", i))
				if gone := i%3 == 0; gone != (err != nil) {
					t.Fatalf("orders/%d after reopen: %v (deleted: %v)", i, err, gone)
				}
			}
			doc, err := st2.Put(context.Background(), "users", []byte(`{"_id":"users/"}`))
			if err != nil || !strings.Contains(string(doc), `"users/0000000000000000002-T"`) {
				t.Errorf("next server-side id after reopen: %s %v, want users/…2-T", doc, err)
			}
		})
	}
}

func TestTornTailIsCut(t *testing.T) {
	dir := t.TempDir()
	st, j, d := open(t, dir, database.JournalOptions{CompactAt: 1 << 30})
	put(t, st, "orders/1", 1)
	put(t, st, "orders/2", 2)
	j.Sync()
	st.Close()
	d.Close()
	// A crash in the middle of appending a third frame.
	b, _ := os.ReadFile(filepath.Join(dir, "log"))
	third := len(b)/2 + 3 // all of the first frame and a piece of the second
	f, _ := os.OpenFile(filepath.Join(dir, "log"), os.O_APPEND|os.O_WRONLY, 0)
	f.Write(b[:third])
	f.Close()

	st2, _, _ := open(t, dir, database.JournalOptions{})
	for _, id := range []string{"orders/1", "orders/2"} {
		if _, err := st2.Get(id); err != nil {
			t.Errorf("%s after a torn tail: %v", id, err)
		}
	}
	if fi, _ := os.Stat(filepath.Join(dir, "log")); fi.Size() != 0 {
		t.Errorf("log is %d bytes after opening a torn one, want it compacted away", fi.Size())
	}
	put(t, st2, "orders/3", 3)
	st3, _, _ := open(t, dir, database.JournalOptions{})
	if _, err := st3.Get("orders/3"); err != nil {
		t.Errorf("a write after the cut: %v", err)
	}
}

// counting is a Storage that counts appends.
type counting struct {
	database.Storage
	appends atomic.Int64
	fail    atomic.Bool
}

func (c *counting) Append(b []byte) error {
	c.appends.Add(1)
	if c.fail.Load() {
		return errors.New("disk on fire")
	}
	time.Sleep(2 * time.Millisecond) // an fsync's time, so writes pile up
	return c.Storage.Append(b)
}

// openCounting opens a store over a directory whose appends are counted.
func openCounting(t *testing.T) (*core.Store, *counting) {
	t.Helper()
	d, err := database.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	c := &counting{Storage: d}
	st, _ := core.Open(":memory:", core.Options{Node: "T"})
	t.Cleanup(func() { st.Close() })
	if _, err := database.OpenJournal(c, st, database.JournalOptions{}); err != nil {
		t.Fatal(err)
	}
	return st, c
}

func TestConcurrentWritesShareAppends(t *testing.T) {
	st, c := openCounting(t)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				put(t, st, fmt.Sprintf("orders/%d-%d", w, i), i)
			}
		}()
	}
	wg.Wait()
	if n := c.appends.Load(); n >= 400 {
		t.Errorf("%d appends for 400 concurrent writes, want them shared", n)
	}
	t.Logf("400 writes from 8 goroutines: %d appends", c.appends.Load())
}

func TestFailedStorageFailsWrites(t *testing.T) {
	st, c := openCounting(t)
	put(t, st, "orders/1", 1)
	failsUntilReopened(t, st, c.fail.Store)
}

// failsUntilReopened makes the storage fail a write, then work again, and
// checks that both that write and the next fail with ErrFailed: the store
// is not trusted with acknowledgements until it is opened again.
func failsUntilReopened(t *testing.T, st *core.Store, fail func(bool)) {
	t.Helper()
	fail(true)
	if _, err := st.Put(context.Background(), "orders", []byte(`{"_id":"orders/2"}`)); !errors.Is(err, database.ErrFailed) {
		t.Fatalf("write on failed storage: %v, want ErrFailed", err)
	}
	fail(false)
	if _, err := st.Put(context.Background(), "orders", []byte(`{"_id":"orders/3"}`)); !errors.Is(err, database.ErrFailed) {
		t.Fatalf("write after a failure: %v, want ErrFailed until reopened", err)
	}
}

func TestRelaxedAnswersBeforeDurable(t *testing.T) {
	dir := t.TempDir()
	st, j, _ := open(t, dir, database.JournalOptions{Durability: database.Relaxed})
	put(t, st, "orders/1", 1)
	if err := j.Sync(); err != nil {
		t.Fatal(err)
	}
	st2, _, _ := open(t, dir, database.JournalOptions{})
	if _, err := st2.Get("orders/1"); err != nil {
		t.Errorf("relaxed write after Sync: %v", err)
	}
}

// flushing is a Storage whose appends reach only the operating system: it
// records, per Flush, how many appends it covered.
type flushing struct {
	database.Storage
	mu       sync.Mutex
	appended int   // appends so far
	onDisk   int   // appends covered by the last Flush
	flushes  []int // appended at each Flush
}

func (f *flushing) Append(b []byte) error {
	f.mu.Lock()
	f.appended++
	f.mu.Unlock()
	return f.Storage.Append(b)
}

func (f *flushing) Flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onDisk = f.appended
	f.flushes = append(f.flushes, f.appended)
	return nil
}

func (f *flushing) state() (appended, onDisk, flushes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.appended, f.onDisk, len(f.flushes)
}

// TestHardenFlushesWhatWasAppended: Harden puts every frame committed
// before it on the disk (a Flusher's Flush after the last append), and
// costs nothing when nothing new was appended; writes made meanwhile are
// appended after it.
func TestHardenFlushesWhatWasAppended(t *testing.T) {
	d, err := database.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	f := &flushing{Storage: d}
	st, _ := core.Open(":memory:", core.Options{Node: "T"})
	t.Cleanup(func() { st.Close() })
	j, err := database.OpenJournal(f, st, database.JournalOptions{Durability: database.Relaxed})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		put(t, st, fmt.Sprintf("orders/%d", i), i)
	}
	if err := j.Harden(); err != nil {
		t.Fatal(err)
	}
	appended, onDisk, flushes := f.state()
	if appended == 0 || onDisk != appended || flushes != 1 {
		t.Fatalf("after Harden: %d appends, %d on disk, %d flushes; want every append on disk after one flush", appended, onDisk, flushes)
	}
	if err := j.Harden(); err != nil {
		t.Fatal(err)
	}
	if _, _, n := f.state(); n != 1 {
		t.Errorf("Harden with nothing new flushed again (%d flushes)", n)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 50 {
			put(t, st, fmt.Sprintf("more/%d", i), i)
		}
	}()
	for range 5 {
		if err := j.Harden(); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
	if err := j.Harden(); err != nil {
		t.Fatal(err)
	}
	if appended, onDisk, _ := f.state(); onDisk != appended {
		t.Errorf("%d appends, %d on disk after the last Harden", appended, onDisk)
	}
}
