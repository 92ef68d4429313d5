package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/buntdb"
)

// ErrClosed is returned for work submitted after the store closed.
var ErrClosed = errors.New("store closed")

// ErrFailed wraps the fsync failure that stopped the store.
var ErrFailed = errors.New("store stopped after a failed fsync; restart the server")

// maxGroup bounds how many queued transactions share one commit.
const maxGroup = 256

// File is the server's durable state in one buntdb file. Every change goes
// through a single committer goroutine that runs the transactions queued
// meanwhile in one buntdb transaction and then makes it durable with one
// fsync (group commit): many clients arriving together share one fsync, and
// none of them is answered before its change is on disk.
//
// A failed fsync stops the store for good: after one, the kernel may have
// dropped the unwritten pages and later fsyncs can succeed without them, so
// the only safe answer is to refuse every further change until a restart
// reads the file back.
//
// Functions given to update must make every check before their first write,
// because a batch commits or fails as a whole.
//
// Values must not contain raw CR or LF bytes (compact JSON, decimal numbers):
// the start-up check of datafile.go relies on it to tell a torn last write
// from damage.
type File struct {
	db    *buntdb.DB
	path  string
	file  *os.File                     // a second handle on buntdb's file, to fsync and see errors
	sync  atomic.Pointer[func() error] // the fsync; tests swap it
	group int                          // transactions per commit at most; 1 turns group commit off
	reqs  chan *txReq

	failed atomic.Pointer[error]

	wg        sync.WaitGroup
	closeOnce sync.Once
	quit      chan struct{}

	metrics Metrics
	commits int64 // the last commit mark written; only the committer touches it
}

// commitKey holds the commit mark: the number of the last finished commit,
// written after each commit's records (see commit and prepareDataFile).
const commitKey = "sys/commit"

type txReq struct {
	fn   func(tx Tx) error
	err  error
	done chan struct{}
}

// OpenFile opens (creating it if needed) the data file in dir. With
// groupCommit false every transaction gets its own commit and fsync.
func OpenFile(dir string, groupCommit bool, m Metrics, log *slog.Logger) (*File, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	path := filepath.Join(dir, dataFileName)
	if err := prepareDataFile(path, log); err != nil {
		return nil, err
	}
	db, err := buntdb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open data file %s: %w (see docs/operations.md, \"Recovery\")", path, err)
	}
	var cfg buntdb.Config
	if err := db.ReadConfig(&cfg); err != nil {
		db.Close()
		return nil, fmt.Errorf("read store config: %w", err)
	}
	// Durability is ours: buntdb writes, we fsync through our own handle so a
	// failed fsync is seen. Shrinking would swap the file under that handle,
	// so it only happens here, before the handle is opened; between restarts
	// the file is append-only.
	cfg.SyncPolicy = buntdb.Never
	cfg.AutoShrinkDisabled = true
	if err := db.SetConfig(cfg); err != nil {
		db.Close()
		return nil, fmt.Errorf("set store config: %w", err)
	}
	if err := db.Shrink(); err != nil {
		db.Close()
		return nil, fmt.Errorf("compact data file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open data file for sync: %w", err)
	}
	// The compacted file replaced the old one by rename: make that durable.
	// The compacted file must end in a commit mark, or the next start would
	// take its last records for an unfinished transaction.
	var seq int64
	err = db.Update(func(tx *buntdb.Tx) error {
		seq, _ = GetInt(tx, commitKey)
		return SetInt(tx, commitKey, seq)
	})
	if err := errors.Join(err, f.Sync(), syncDir(dir)); err != nil {
		f.Close()
		db.Close()
		return nil, fmt.Errorf("sync compacted data file: %w", err)
	}
	group := maxGroup
	if !groupCommit {
		group = 1
	}
	s := &File{db: db, path: path, file: f, group: group, reqs: make(chan *txReq, maxGroup), quit: make(chan struct{}), metrics: m, commits: seq}
	fsync := f.Sync
	s.sync.Store(&fsync)
	s.wg.Add(1)
	go s.commitLoop()
	return s, nil
}

// SetSync replaces the fsync of the data file; a test makes it fail.
func (s *File) SetSync(fsync func() error) { s.sync.Store(&fsync) }

// Err returns the failure that stopped the store, or nil.
func (s *File) Err() error {
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// Update runs fn in a write transaction shared with other queued ones and
// returns once the result is durable.
func (s *File) Update(ctx context.Context, fn func(tx Tx) error) error {
	wait, err := s.QueueUpdate(ctx, fn)
	if err != nil {
		return err
	}
	return wait()
}

// QueueUpdate hands fn to the commit loop and returns at once; wait returns
// once fn's writes are durable, or with its error and nothing written.
// Transactions queued one after the other commit in that order, so a
// caller may queue the next before the one before it is durable.
func (s *File) QueueUpdate(ctx context.Context, fn func(tx Tx) error) (wait func() error, err error) {
	if err := s.Err(); err != nil {
		return nil, err
	}
	return enqueue(ctx, s.reqs, s.quit, fn)
}

// queue hands fn to a commit loop (runGroups) and waits for its outcome.
func queue(ctx context.Context, reqs chan<- *txReq, quit <-chan struct{}, fn func(tx Tx) error) error {
	wait, err := enqueue(ctx, reqs, quit, fn)
	if err != nil {
		return err
	}
	return wait()
}

// enqueue hands fn to a commit loop (runGroups); wait waits for its
// outcome.
func enqueue(ctx context.Context, reqs chan<- *txReq, quit <-chan struct{}, fn func(tx Tx) error) (wait func() error, err error) {
	r := &txReq{fn: fn, done: make(chan struct{})}
	select {
	case reqs <- r:
	case <-quit:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// Once queued, wait for the outcome even if ctx ends: the change may
	// already be committed, and the caller must not assume it was not.
	return func() error {
		<-r.done
		return r.err
	}, nil
}

// View runs fn in a read-only transaction.
func (s *File) View(fn func(tx Tx) error) error {
	return s.db.View(func(tx *buntdb.Tx) error { return fn(tx) })
}

// Backup writes a consistent copy of every key in data-file format to w.
// The copy is taken into memory first, so a slow reader does not hold up
// writers.
func (s *File) Backup(w io.Writer) error {
	var buf bytes.Buffer
	if err := s.db.Save(&buf); err != nil {
		return fmt.Errorf("save store: %w", err)
	}
	_, err := buf.WriteTo(w)
	return err
}

func (s *File) commitLoop() {
	defer s.wg.Done()
	runGroups(s.reqs, s.quit, s.group, s.commit)
}

// runGroups hands queued requests to commit in groups of at most max: a
// group is what arrived while the one before it committed. Once quit is
// closed, what is still queued fails with ErrClosed.
func runGroups(reqs <-chan *txReq, quit <-chan struct{}, max int, commit func([]*txReq)) {
	batch := make([]*txReq, 0, max)
	for {
		select {
		case r := <-reqs:
			batch = append(batch[:0], r)
		drain:
			for len(batch) < max {
				select {
				case r := <-reqs:
					batch = append(batch, r)
				default:
					break drain
				}
			}
			commit(batch)
		case <-quit:
			// Fail what is still queued; nothing new can arrive.
			for {
				select {
				case r := <-reqs:
					r.err = ErrClosed
					close(r.done)
				default:
					return
				}
			}
		}
	}
}

func (s *File) commit(batch []*txReq) {
	err := s.Err()
	if err == nil {
		err = s.db.Update(func(tx *buntdb.Tx) error {
			for _, r := range batch {
				r.err = runTx(r.fn, tx)
			}
			return nil
		})
	}
	if err == nil {
		// buntdb writes a transaction's records in one write, but a process
		// killed in the middle of a large write leaves some of them on disk.
		// The commit mark, written after them, tells a finished transaction
		// from such a fragment: at start, records after the last mark are
		// dropped (prepareDataFile).
		s.commits++
		err = s.db.Update(func(tx *buntdb.Tx) error { return SetInt(tx, commitKey, s.commits) })
	}
	if err == nil {
		start := time.Now()
		err = (*s.sync.Load())()
		s.metrics.Commit(time.Since(start), len(batch))
		if err != nil {
			err = fmt.Errorf("fsync data file %s: %w: %w", s.path, ErrFailed, err)
			s.failed.Store(&err)
		}
	}
	for _, r := range batch {
		if err != nil {
			r.err = err
		}
		close(r.done)
	}
}

// runTx runs fn, turning a panic into an error so one bad request cannot
// stop the committer.
func runTx(fn func(tx Tx) error, tx *buntdb.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("transaction panicked: %v", p)
		}
	}()
	return fn(tx)
}

// Close stops the committer and closes the file.
func (s *File) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.quit)
		s.wg.Wait()
		err = errors.Join(s.file.Close(), s.db.Close())
	})
	return err
}

// GetJSON reads key into v; found is false when the key is absent.
func GetJSON(tx Tx, key string, v any) (found bool, err error) {
	s, err := tx.Get(key)
	if errors.Is(err, buntdb.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return true, fmt.Errorf("decode stored %s: %w", key, err)
	}
	return true, nil
}

// SetJSON stores v at key as JSON.
func SetJSON(tx Tx, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, _, err = tx.Set(key, string(b), nil)
	return err
}

// GetInt reads a decimal counter; absent is 0.
func GetInt(tx Tx, key string) (int64, error) {
	s, err := tx.Get(key)
	if errors.Is(err, buntdb.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("decode stored %s: %w", key, err)
	}
	return n, nil
}

// SetInt stores a decimal counter.
func SetInt(tx Tx, key string, n int64) error {
	_, _, err := tx.Set(key, strconv.FormatInt(n, 10), nil)
	return err
}
