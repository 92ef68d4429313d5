package syncserver

import (
	"context"
	"io"

	"github.com/tidwall/buntdb"
)

// kvTx is one transaction over the server's keys: the part of a buntdb
// transaction the server uses, so the embedded store hands its own
// transactions through unchanged and the etcd store offers the same calls.
// An absent key is buntdb.ErrNotFound from either.
type kvTx interface {
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

var _ kvTx = (*buntdb.Tx)(nil)

// kvStore is where the server keeps its state: the embedded buntdb file
// (store, the default) or an etcd cluster (etcdStore).
//
// Functions given to update make every check before their first write and
// may run more than once (the etcd store runs one again when another
// server changed what it read): they must start from scratch each time.
type kvStore interface {
	// update runs fn in a write transaction and returns once its writes
	// are durable, or with fn's error and nothing written.
	update(ctx context.Context, fn func(tx kvTx) error) error
	// view runs fn in a read-only transaction over one consistent state.
	view(fn func(tx kvTx) error) error
	// backup writes every key in data-file format to w.
	backup(w io.Writer) error
	// err is the failure that stopped the store, or nil.
	err() error
	close() error
}

var _ kvStore = (*store)(nil)

// updateQueuer is a kvStore whose write transactions can be queued without
// waiting for them (the buntdb store: one commit loop, in queue order).
type updateQueuer interface {
	queueUpdate(ctx context.Context, fn func(tx kvTx) error) (wait func() error, err error)
}

var _ updateQueuer = (*store)(nil)

// prefetcher is a kvTx that can read many keys at once ahead of the Gets
// that follow (the etcd store: one round trip instead of one per key).
type prefetcher interface {
	prefetch(keys []string) error
}

var _ prefetcher = (*etcdTx)(nil)
