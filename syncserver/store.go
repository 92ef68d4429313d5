package syncserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/tidwall/buntdb"
)

// errStoreClosed is returned for work submitted after the store closed.
var errStoreClosed = errors.New("store closed")

// maxBatch bounds how many queued transactions share one commit.
const maxBatch = 256

// store is the server's durable state in one buntdb file. Every change goes
// through a single committer goroutine that runs the transactions queued
// meanwhile in one buntdb transaction and then makes it durable with one
// fsync (group commit): many clients arriving together share one fsync, and
// none of them is answered before its change is on disk.
//
// Functions given to update must make every check before their first write,
// because a batch commits or fails as a whole.
type store struct {
	db   *buntdb.DB
	file *os.File // a second handle on buntdb's file, to fsync and see errors
	reqs chan *txReq

	wg        sync.WaitGroup
	closeOnce sync.Once
	quit      chan struct{}

	metrics *metrics
}

type txReq struct {
	fn   func(tx *buntdb.Tx) error
	err  error
	done chan struct{}
}

// openStore opens (creating it if needed) the data file in dir.
func openStore(dir string, m *metrics) (*store, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	path := filepath.Join(dir, "hilodb.db")
	db, err := buntdb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open data file %s: %w (if the file is damaged, see docs/operations.md, \"Recovery\")", path, err)
	}
	var cfg buntdb.Config
	if err := db.ReadConfig(&cfg); err != nil {
		db.Close()
		return nil, fmt.Errorf("read store config: %w", err)
	}
	// Durability is ours: buntdb writes, we fsync through our own handle so a
	// failed fsync is seen. Shrinking would swap the file under that handle,
	// so it only happens here, before the handle is opened.
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
	s := &store{db: db, file: f, reqs: make(chan *txReq, maxBatch), quit: make(chan struct{}), metrics: m}
	s.wg.Add(1)
	go s.commitLoop()
	return s, nil
}

// update runs fn in a write transaction shared with other queued ones and
// returns once the result is durable.
func (s *store) update(ctx context.Context, fn func(tx *buntdb.Tx) error) error {
	r := &txReq{fn: fn, done: make(chan struct{})}
	select {
	case s.reqs <- r:
	case <-s.quit:
		return errStoreClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	// Once queued, wait for the outcome even if ctx ends: the change may
	// already be committed, and the caller must not assume it was not.
	<-r.done
	return r.err
}

// view runs fn in a read-only transaction.
func (s *store) view(fn func(tx *buntdb.Tx) error) error {
	return s.db.View(fn)
}

func (s *store) commitLoop() {
	defer s.wg.Done()
	batch := make([]*txReq, 0, maxBatch)
	for {
		select {
		case r := <-s.reqs:
			batch = append(batch[:0], r)
		drain:
			for len(batch) < maxBatch {
				select {
				case r := <-s.reqs:
					batch = append(batch, r)
				default:
					break drain
				}
			}
			s.commit(batch)
		case <-s.quit:
			// Fail what is still queued; nothing new can arrive.
			for {
				select {
				case r := <-s.reqs:
					r.err = errStoreClosed
					close(r.done)
				default:
					return
				}
			}
		}
	}
}

func (s *store) commit(batch []*txReq) {
	err := s.db.Update(func(tx *buntdb.Tx) error {
		for _, r := range batch {
			r.err = r.fn(tx)
		}
		return nil
	})
	if err == nil {
		start := time.Now()
		err = s.file.Sync()
		s.metrics.observeFsync(time.Since(start), len(batch))
		if err != nil {
			err = fmt.Errorf("fsync data file: %w", err)
		}
	}
	for _, r := range batch {
		if err != nil {
			r.err = err
		}
		close(r.done)
	}
}

// close stops the committer and closes the file.
func (s *store) close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.quit)
		s.wg.Wait()
		err = errors.Join(s.file.Close(), s.db.Close())
	})
	return err
}

// getJSON reads key into v; found is false when the key is absent.
func getJSON(tx *buntdb.Tx, key string, v any) (found bool, err error) {
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

func setJSON(tx *buntdb.Tx, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, _, err = tx.Set(key, string(b), nil)
	return err
}

// getInt reads a decimal counter; absent is 0.
func getInt(tx *buntdb.Tx, key string) (int64, error) {
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

func setInt(tx *buntdb.Tx, key string, n int64) error {
	_, _, err := tx.Set(key, strconv.FormatInt(n, 10), nil)
	return err
}
