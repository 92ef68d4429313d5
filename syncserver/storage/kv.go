package storage

import (
	"context"
	"io"
	"time"

	"github.com/tidwall/buntdb"
)

// Tx is one transaction over the server's keys: the part of a buntdb
// transaction the server uses, so the data file hands its own transactions
// through unchanged and the etcd store offers the same calls. An absent key
// is buntdb.ErrNotFound from either.
type Tx interface {
	Get(key string, ignoreExpired ...bool) (string, error)
	Set(key, value string, opts *buntdb.SetOptions) (previous string, replaced bool, err error)
	Delete(key string) (string, error)
	// AscendRange visits the keys in [greaterOrEqual, lessThan) in order;
	// index is always "" (the key order).
	AscendRange(index, greaterOrEqual, lessThan string, iterator func(key, value string) bool) error
	// AscendKeys visits the keys matching pattern, which is a prefix
	// followed by "*".
	AscendKeys(pattern string, iterator func(key, value string) bool) error
}

var _ Tx = (*buntdb.Tx)(nil)

// Store is where the server keeps its state: the embedded buntdb file
// (File, the default) or an etcd cluster (Etcd).
//
// Functions given to Update make every check before their first write and
// may run more than once (the etcd store runs one again when another
// server changed what it read): they must start from scratch each time.
type Store interface {
	// Update runs fn in a write transaction and returns once its writes
	// are durable, or with fn's error and nothing written.
	Update(ctx context.Context, fn func(tx Tx) error) error
	// View runs fn in a read-only transaction over one consistent state.
	View(fn func(tx Tx) error) error
	// Backup writes every key in data-file format to w.
	Backup(w io.Writer) error
	// Err is the failure that stopped the store, or nil.
	Err() error
	// Close stops the store; what is still queued fails with ErrClosed.
	Close() error
}

var (
	_ Store = (*File)(nil)
	_ Store = (*Etcd)(nil)
)

// Queuer is a Store whose write transactions can be queued without
// waiting for them (the data file: one commit loop, in queue order).
type Queuer interface {
	// QueueUpdate hands fn to the commit loop and returns at once; wait
	// returns once fn's writes are durable, or with its error and nothing
	// written. Transactions queued one after the other commit in that
	// order.
	QueueUpdate(ctx context.Context, fn func(tx Tx) error) (wait func() error, err error)
}

var _ Queuer = (*File)(nil)

// Prefetcher is a Tx that can read many keys at once ahead of the Gets
// that follow (the etcd store: one round trip instead of one per key).
type Prefetcher interface {
	// Prefetch reads keys into the transaction's cache.
	Prefetch(keys []string) error
}

var _ Prefetcher = (*etcdTx)(nil)

// RevTx is a transaction of a store whose change sequence is its own
// revision (etcd).
type RevTx interface {
	// ModRev is the revision key was last written at, as read by this
	// transaction; 0 for a key absent or written by the transaction itself.
	ModRev(key string) int64
	// AfterCommit has fn called with the revision of the commit once the
	// transaction's writes are durable (0 when it wrote nothing).
	AfterCommit(fn func(rev int64))
}

var _ RevTx = (*etcdTx)(nil)

// Metrics is what a store reports to the server's /metrics.
type Metrics interface {
	// Commit records one commit: how long it took to make durable (the
	// fsync, or etcd's Txn) and how many transactions it carried.
	Commit(took time.Duration, txs int)
	// Retry counts an etcd transaction run again after losing a compare to
	// another server's write.
	Retry()
	// Pull counts a pull on etcd answered from the change log (byLog) or
	// by a range read.
	Pull(byLog bool)
}
