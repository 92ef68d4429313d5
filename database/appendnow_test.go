package database_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/database"
)

// nowDir is a directory Storage that also appends at once (the file write
// Append makes, done in the caller's step), as the browser's held OPFS file
// and Node's write(2) do. Its AppendNow can be made to decline or fail, and
// its Compact can be held until released.
type nowDir struct {
	*database.Dir
	now, later atomic.Int64 // AppendNow and Append calls
	decline    atomic.Bool
	fail       atomic.Bool

	mu         sync.Mutex
	hold       chan struct{} // non-nil: Compact waits for it to close
	compacting chan struct{} // closed when a held Compact starts
}

var _ database.NowAppender = (*nowDir)(nil)

func (d *nowDir) CanAppendNow() bool { return true }

func (d *nowDir) AppendNow(b []byte) (bool, error) {
	if d.decline.Load() {
		return false, nil
	}
	if d.fail.Load() {
		return true, errors.New("disk on fire")
	}
	d.now.Add(1)
	return true, d.Dir.Append(b)
}

func (d *nowDir) Append(b []byte) error {
	d.later.Add(1)
	return d.Dir.Append(b)
}

func (d *nowDir) Compact(snap []byte) error {
	d.mu.Lock()
	hold, started := d.hold, d.compacting
	d.mu.Unlock()
	if hold != nil {
		close(started)
		<-hold
	}
	return d.Dir.Compact(snap)
}

// holdCompaction makes the next Compact wait until release is called;
// started is closed once it waits.
func (d *nowDir) holdCompaction() (started <-chan struct{}, release func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hold, d.compacting = make(chan struct{}), make(chan struct{})
	hold := d.hold
	return d.compacting, func() {
		d.mu.Lock()
		d.hold = nil
		d.mu.Unlock()
		close(hold)
	}
}

func openNow(t *testing.T, dir string, opts database.JournalOptions) (*core.Store, *database.Journal, *nowDir) {
	t.Helper()
	var nd *nowDir
	st, j, _ := openOver(t, dir, opts, func(d *database.Dir) database.Storage {
		nd = &nowDir{Dir: d}
		return nd
	})
	return st, j, nd
}

// putDeferred writes one document under core.DeferDurable and returns its
// Deferred.
func putDeferred(t *testing.T, st *core.Store, id string, v int) *core.Deferred {
	t.Helper()
	ctx, d := core.DeferDurable(context.Background())
	if _, err := st.Put(ctx, "orders", []byte(fmt.Sprintf(`{"_id":%q,"v":%d}`, id, v))); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestAppendNowWritesInTheCommit(t *testing.T) {
	dir := t.TempDir()
	st, j, nd := openNow(t, dir, database.JournalOptions{})
	if !j.AppendsNow() {
		t.Fatal("a strict journal over a NowAppender does not append at once")
	}
	for i := range 20 {
		if d := putDeferred(t, st, fmt.Sprintf("orders/%d", i), i); d.Pending() {
			t.Fatalf("write %d waits for its journal, want it appended in its commit", i)
		}
	}
	if now, later := nd.now.Load(), nd.later.Load(); now != 20 || later != 0 {
		t.Errorf("20 writes: %d appended at once, %d later; want 20 and 0", now, later)
	}
	st2, _, _ := open(t, dir, database.JournalOptions{})
	for i := range 20 {
		if _, err := st2.Get(fmt.Sprintf("orders/%d", i)); err != nil {
			t.Errorf("orders/%d after reopening: %v", i, err)
		}
	}
}

func TestAppendNowNotForRelaxed(t *testing.T) {
	_, j, _ := openNow(t, t.TempDir(), database.JournalOptions{Durability: database.Relaxed})
	if j.AppendsNow() {
		t.Error("a relaxed journal appends at once; it should answer before appending")
	}
}

func TestAppendNowDeclinedTakesTheQueue(t *testing.T) {
	dir := t.TempDir()
	st, _, nd := openNow(t, dir, database.JournalOptions{})
	nd.decline.Store(true)
	d := putDeferred(t, st, "orders/1", 1)
	if !d.Pending() {
		t.Fatal("a declined append left nothing to wait for")
	}
	if err := d.Wait(); err != nil {
		t.Fatal(err)
	}
	if nd.later.Load() != 1 {
		t.Errorf("%d appends later, want the declined frame appended once", nd.later.Load())
	}
	put(t, st, "orders/2", 2) // waits as before
	st2, _, _ := open(t, dir, database.JournalOptions{})
	for _, id := range []string{"orders/1", "orders/2"} {
		if _, err := st2.Get(id); err != nil {
			t.Errorf("%s after reopening: %v", id, err)
		}
	}
}

func TestAppendNowFailureFailsTheWrite(t *testing.T) {
	st, _, nd := openNow(t, t.TempDir(), database.JournalOptions{})
	put(t, st, "orders/1", 1)
	failsUntilReopened(t, st, nd.fail.Store)
}

// A write committed while the log is being compacted cannot be appended at
// once (the compaction would cut it off the log): it is stored, reports that
// it waits, and is durable once the compaction is done.
func TestAppendNowWaitsOutACompaction(t *testing.T) {
	dir := t.TempDir()
	st, j, nd := openNow(t, dir, database.JournalOptions{CompactAt: 4096})
	started, release := nd.holdCompaction()
	i := 0
	for ; ; i++ {
		putDeferred(t, st, fmt.Sprintf("orders/%d", i), i)
		select {
		case <-started:
		default:
			if i > 10000 {
				t.Fatal("no compaction after 10,000 writes")
			}
			runtime.Gosched() // one thread under GOOS=js: let a compaction start
			continue
		}
		break
	}
	var during []*core.Deferred
	for k := 1; k <= 5; k++ {
		d := putDeferred(t, st, fmt.Sprintf("orders/%d", i+k), i+k)
		if !d.Pending() {
			t.Fatalf("write %d during a compaction has nothing to wait for", k)
		}
		during = append(during, d)
	}
	release()
	for _, d := range during {
		if err := d.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Sync(); err != nil { // the flush after the compaction ends
		t.Fatal(err)
	}
	if d := putDeferred(t, st, "orders/after", 0); d.Pending() {
		t.Error("a write after the compaction still waits")
	}
	st2, _, _ := open(t, dir, database.JournalOptions{})
	for k := 0; k <= i+5; k++ {
		if _, err := st2.Get(fmt.Sprintf("orders/%d", k)); err != nil {
			t.Fatalf("orders/%d after reopening: %v", k, err)
		}
	}
	if _, err := st2.Get("orders/after"); err != nil {
		t.Errorf("orders/after after reopening: %v", err)
	}
}
