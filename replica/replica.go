// Package replica replicates a local core.Store with the sync server: it
// pushes local writes in batches, pulls everyone else's, follows the live
// change feed, and settles conflicts by _rev with a policy of the app's.
//
// # Conflicts
//
// A conflict is a document written locally while the server took another
// write of it. The default policy, core.ServerWins, keeps the server's
// version and keeps the local one readable through Store.Conflicts; LocalWins
// and merge functions make a new write on top of the server's revision,
// pushed on the next round. Every replica ends with the server's state.
//
// Both sides hear of a conflict. The server notes a write it refuses on the
// version that won, and the replica whose node made that version keeps the
// refused write as a conflict it won (core.Version.Won) and reports it to
// OnConflict with Won set. A write the feed's version beat before it was
// pushed is pushed once anyway (core.Store.LostWrites), for the server to
// refuse and note.
//
// # Concurrency
//
// A Replicator is safe for concurrent use; Push, Pull and Sync may run while
// Run follows the live feed.
package replica

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
)

// Options configure a Replicator.
type Options struct {
	// Resolve settles conflicts; nil means core.ServerWins.
	Resolve core.Resolver
	// OnConflict is called for every conflict settled.
	OnConflict func(core.Conflict)
	// OnApply is called after each batch of remote changes is applied
	// (from a pull, the live feed, or a push conflict), with what changed.
	OnApply func(core.ApplyResult)
	// OnConnect is called each time Run is following the live feed again.
	OnConnect func()
	// OnAck is called with the writes the server accepted, after they are
	// recorded locally: a write reported here is safe on the server.
	OnAck func(acks []core.Ack)
	// OnError is called with errors of the live loop before it retries.
	OnError func(error)
	// PushBatch is the number of writes per push. Default 5000.
	PushBatch int
	// PushBytes bounds the documents of one push, so a batch stays under
	// the server's message limit (8 MiB by default). Default 4 MiB; a single
	// larger document is sent alone.
	PushBytes int
	// PullLimit is the number of changes per pull. Default 10000.
	PullLimit int
	// PingEvery is how often Run pings a quiet connection. Default 30 s.
	PingEvery time.Duration
	// PushDelay is how long Run waits after a local write before pushing,
	// so the writes made meanwhile share one push (and one reply, one
	// acknowledgement, one change coming back on the feed). Default 0:
	// every write is pushed at once.
	PushDelay time.Duration
	// BeforePush, when set, is called before each push round is sent; an
	// error stops the push. A store whose writes are acknowledged before
	// they are on the disk puts them there, so the server never holds
	// writes a power cut could take from the store.
	BeforePush func(ctx context.Context) error
}

// Replicator replicates one store through one sync client.
type Replicator struct {
	store *core.Store
	cli   *client.Client
	opts  Options
	wake  chan struct{}

	pushMu sync.Mutex // one push round at a time
	pullMu sync.Mutex // one pull round at a time

	// early is the first page of a sync's pull, asked for once its push's
	// last reply came, while that reply's acknowledgements are recorded.
	early atomic.Pointer[earlyPull]
}

// earlyPull is a pull page asked for from since before the pull began.
type earlyPull struct {
	since int64
	page  chan pulled
}

// New returns a Replicator for store over cli. Local writes made while Run
// is following the feed are pushed at once.
func New(store *core.Store, cli *client.Client, opts Options) *Replicator {
	if opts.PushBatch <= 0 {
		opts.PushBatch = 5000
	}
	if opts.PushBytes <= 0 {
		opts.PushBytes = 4 << 20
	}
	if opts.PullLimit <= 0 {
		opts.PullLimit = 10000
	}
	if opts.Resolve == nil {
		opts.Resolve = core.ServerWins
	}
	if opts.PingEvery <= 0 {
		opts.PingEvery = 30 * time.Second
	}
	r := &Replicator{store: store, cli: cli, opts: opts, wake: make(chan struct{}, 1)}
	store.OnWrite(func() {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	})
	return r
}

// Sync pushes, then pulls. Both carry collection definitions too.
//
// A connection that ended under it (not one that stopped answering, nor a
// refusal) is dialed again and the sync made once more: a push sent again
// is taken as already applied, and a pull only reads.
func (r *Replicator) Sync(ctx context.Context) error {
	_, _, err := r.SyncCount(ctx)
	return err
}

// SyncCount is Sync, also telling how many writes the server accepted and
// how many remote changes changed the store.
func (r *Replicator) SyncCount(ctx context.Context) (pushed, pulled int, err error) {
	pushed, pulled, err = r.SyncOnce(ctx)
	var refused *client.Error
	if err != nil && ctx.Err() == nil && errors.Is(err, client.ErrDisconnected) &&
		!errors.Is(err, client.ErrNoReply) && !errors.As(err, &refused) {
		var p, q int
		p, q, err = r.SyncOnce(ctx)
		pushed, pulled = pushed+p, pulled+q
	}
	return pushed, pulled, err
}

// SyncOnce is SyncCount without its second try after a lost connection:
// one push, then one pull, asked for while the push's last acknowledgements
// are recorded.
func (r *Replicator) SyncOnce(ctx context.Context) (pushed, pulled int, err error) {
	if pushed, err = r.push(ctx, true); err != nil {
		r.early.Store(nil)
		return pushed, 0, fmt.Errorf("sync: %w", err)
	}
	if pulled, err = r.Pull(ctx); err != nil {
		return pushed, pulled, fmt.Errorf("sync: %w", err)
	}
	return pushed, pulled, nil
}

// Run follows the server until ctx ends: it syncs, subscribes to the live
// feed, pushes local writes as they happen, and after a lost connection
// retries with backoff from the store's checkpoint. It returns ctx's error.
func (r *Replicator) Run(ctx context.Context) error {
	const minBackoff = 50 * time.Millisecond
	backoff := minBackoff
	for {
		var connected bool
		err := r.follow(ctx, &connected)
		if connected {
			backoff = minBackoff // it worked for a while: retry soon
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if r.opts.OnError != nil && err != nil {
			r.opts.OnError(err)
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// follow runs one connection's worth of live replication.
func (r *Replicator) follow(ctx context.Context, connected *bool) error {
	if err := r.Sync(ctx); err != nil {
		return err
	}
	since, err := r.store.Checkpoint()
	if err != nil {
		return err
	}
	// The feed callback runs on the client's reader, which must never block:
	// a Push below waits for a reply only that reader can deliver. So
	// batches queue without a bound (the server sends only what it has
	// accepted) and a one-slot channel signals that some are waiting.
	var (
		queueMu sync.Mutex
		queue   []client.Change
		queued  int64 // last of the newest queued batch
	)
	feed := make(chan struct{}, 1)
	err = r.cli.Subscribe(ctx, since, func(changes []client.Change, last int64) {
		queueMu.Lock()
		queue = append(queue, changes...)
		queued = last
		queueMu.Unlock()
		select {
		case feed <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return err
	}
	done := r.cli.Done()
	if done == nil {
		return client.ErrDisconnected
	}
	*connected = true
	if r.opts.OnConnect != nil {
		r.opts.OnConnect()
	}
	// Writes made between Sync and Subscribe.
	if _, err := r.Push(ctx); err != nil {
		return err
	}
	// Only client messages keep a connection from the server's idle timeout.
	keepAlive := time.NewTicker(r.opts.PingEvery)
	defer keepAlive.Stop()
	var pushAt <-chan time.Time // set while a delayed push waits (PushDelay)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-done:
			return client.ErrDisconnected
		case <-keepAlive.C:
			if err := r.cli.Ping(ctx); err != nil {
				return err
			}
		case <-r.wake:
			if r.opts.PushDelay > 0 {
				if pushAt == nil {
					pushAt = time.After(r.opts.PushDelay)
				}
				continue
			}
			if _, err := r.Push(ctx); err != nil {
				return err
			}
		case <-pushAt:
			pushAt = nil
			if _, err := r.Push(ctx); err != nil {
				return err
			}
		case <-feed:
			queueMu.Lock()
			changes, last := queue, queued
			queue = nil
			queueMu.Unlock()
			// ApplyRemote skips what a concurrent Pull applied already, so
			// the feed needs no lock of its own.
			if _, err := r.apply(remoteChanges(changes), last); err != nil {
				return err
			}
		}
	}
}
