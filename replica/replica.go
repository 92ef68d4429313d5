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
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/errcode"
	"github.com/tidwall/gjson"
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

// ErrRejected is returned when the server refuses a write for a reason other
// than a conflict (an invalid document, say); the write stays pending.
var ErrRejected = errors.New("server rejected a write")

// Push sends every pending local write, in batches, and returns how many the
// server accepted. Conflicts are settled on the way; writes that result from
// a settlement are pushed in the same call.
//
// When the server takes pushes pipelined (client.PipelinesPushes), the next
// batch is read and sent while the server works on the last one, so that
// the server's transaction overlaps the client's reading and recording of
// acknowledgements; replies are settled in the order sent, and a batch
// never holds a document an unsettled batch holds (each pass over the
// pending writes goes on after the last id sent).
func (r *Replicator) Push(ctx context.Context) (int, error) {
	return r.push(ctx, false)
}

// push is Push; with pullAfter (a sync, whose pull follows), the last
// reply's settling first asks for the pull's first page (see settle).
func (r *Replicator) push(ctx context.Context, pullAfter bool) (int, error) {
	r.pushMu.Lock()
	defer r.pushMu.Unlock()
	if err := r.pushCollections(ctx); err != nil {
		return 0, err
	}
	if err := r.pushIndexes(ctx); err != nil {
		return 0, err
	}
	depth := 1
	if r.cli.PipelinesPushes() {
		depth = 2
	}
	total := 0
	var sent []*flight // in the order sent
	after := ""        // the last id sent in this pass over the pending writes
	passDone := false
	for rounds := 0; ; rounds++ {
		for !passDone && len(sent) < depth {
			f, err := r.send(ctx, after)
			if err != nil {
				return total, err
			}
			if f == nil {
				passDone = true
				break
			}
			after = f.items[len(f.items)-1].ID
			sent = append(sent, f)
			// Under WebAssembly the send runs once this goroutine waits:
			// let it go out before the next batch is read.
			runtime.Gosched()
		}
		if len(sent) == 0 {
			if after == "" {
				// A pass from the start found nothing.
				return total, r.pushLost(ctx)
			}
			// Writes made or settled during this pass, before its cursor,
			// are still pending: pass again from the start.
			after, passDone = "", false
			continue
		}
		n, err := r.settle(ctx, sent[0], pullAfter && passDone && len(sent) == 1)
		sent = sent[1:]
		total += n
		if err != nil {
			return total, err
		}
		if rounds > 1000 {
			return total, errors.New("push: no progress after 1000 rounds")
		}
	}
}

// pushLost pushes, once, the local writes that lost to a version of the
// feed before they were pushed (core.Store.LostWrites), on their old base:
// the server refuses each as a conflict and notes it against the version
// that won, whose client then hears of it. Whatever the server answers,
// they are not pushed again.
func (r *Replicator) pushLost(ctx context.Context) error {
	for {
		lost, err := r.store.LostWrites(r.opts.PushBatch)
		if err != nil || len(lost) == 0 {
			return err
		}
		items := make([]client.PushItem, len(lost))
		for i, w := range lost {
			items[i] = client.PushItem{ID: w.ID, BaseRev: w.BaseRev, Rev: w.Rev, Doc: w.Doc, Deleted: w.Deleted}
		}
		// No checkpoint: the notes this makes are not this store's to skip.
		if _, err := r.cli.PushChecked(ctx, -1, items); err != nil {
			return fmt.Errorf("push lost writes: %w", err)
		}
		if err := r.store.DropLostWrites(lost); err != nil {
			return err
		}
	}
}

// flight is one push sent and not yet settled.
type flight struct {
	items []client.PushItem
	done  chan pushed // buffered: the sender never waits for a reader
}

// pushed is a push's outcome as the client returned it.
type pushed struct {
	out client.PushOutcome
	err error
}

// send reads the next batch of pending writes after the id after and sends
// it; nil when there is none.
func (r *Replicator) send(ctx context.Context, after string) (*flight, error) {
	pend, err := r.store.PendingWritesAfter(after, r.opts.PushBatch)
	if err != nil || len(pend) == 0 {
		return nil, err
	}
	if r.opts.BeforePush != nil {
		if err := r.opts.BeforePush(ctx); err != nil {
			return nil, fmt.Errorf("push: %w", err)
		}
	}
	items := make([]client.PushItem, 0, len(pend))
	size := 0
	for _, p := range pend {
		n := len(p.Doc) + len(p.ID) + len(p.BaseRev) + len(p.Rev) + 64
		if len(items) > 0 && size+n > r.opts.PushBytes {
			break // the rest goes in the next batch
		}
		size += n
		items = append(items, client.PushItem{ID: p.ID, BaseRev: p.BaseRev, Rev: p.Rev, Doc: p.Doc, Deleted: p.Deleted})
	}
	// The checkpoint now: the reply's PrevSeq equals it only if nothing
	// but this push changed the database after it (or, pipelined, nothing
	// but this push and those sent before it).
	since, err := r.store.Checkpoint()
	if err != nil {
		return nil, err
	}
	f := &flight{items: items, done: make(chan pushed, 1)}
	go func() {
		// Read from the store, which checked each document when it was
		// written.
		out, err := r.cli.PushChecked(ctx, since, items)
		f.done <- pushed{out, err}
	}()
	return f, nil
}

// settle waits for a push's reply and records it: acknowledgements, the
// checkpoint, and conflicts settled. It returns how many writes the server
// accepted. With pullNext (the last reply of a sync's push, all of it
// accepted), it first asks for the pull's first page from where the
// checkpoint will be, so that the server answers while the
// acknowledgements are recorded (10 ms or more for thousands under
// WebAssembly); Pull takes that page if its checkpoint is where it was
// asked from.
func (r *Replicator) settle(ctx context.Context, f *flight, pullNext bool) (int, error) {
	var p pushed
	select {
	case p = <-f.done:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if p.err != nil {
		return 0, p.err
	}
	out, items := p.out, f.items
	results := out.Results
	if pullNext && allAccepted(results) {
		if err := r.pullEarly(ctx, out); err != nil {
			return 0, err
		}
	}
	acks := make([]core.Ack, 0, len(results))
	var remote []core.RemoteChange
	var rejected error
	for i, res := range results {
		switch {
		case res.OK:
			acks = append(acks, core.Ack{ID: items[i].ID, Rev: items[i].Rev})
		case res.Error != nil && res.Error.Code == "conflict" && res.CurrentOmitted:
			// The reply left the server's version out (sent with an
			// earlier result, or past the reply bound): ask for it.
			cur, err := r.cli.Get(ctx, []string{items[i].ID})
			if err != nil {
				return 0, err
			}
			if c := cur[0]; c.Rev == "" {
				if err := r.store.Rebase(items[i].ID); err != nil {
					return 0, err
				}
			} else {
				remote = append(remote, core.RemoteChange{Version: versionOfChange(c), Seq: c.Seq, PushConflict: true})
			}
		case res.Error != nil && res.Error.Code == errcode.StaleRev.Name:
			// The server holds a newer revision than ours (our clock ran
			// behind): the same write, with a revision past it, goes out
			// again in this push's next pass.
			seen := versionOf(items[i].ID, res.Current).Rev
			if len(res.Current) == 0 {
				cur, err := r.cli.Get(ctx, []string{items[i].ID})
				if err != nil {
					return 0, err
				}
				seen = cur[0].Rev
			}
			if err := r.store.Rerev(items[i].ID, items[i].Rev, seen); err != nil {
				return 0, err
			}
		case res.Error != nil && res.Error.Code == "conflict":
			if len(res.Current) == 0 || string(res.Current) == "null" {
				if err := r.store.Rebase(items[i].ID); err != nil {
					return 0, err
				}
				continue
			}
			remote = append(remote, core.RemoteChange{Version: versionOf(items[i].ID, res.Current), Seq: res.Seq, PushConflict: true})
		default:
			rejected = fmt.Errorf("%w: %s: %v", ErrRejected, items[i].ID, res.Error)
		}
	}
	if err := r.store.Acknowledge(acks...); err != nil {
		return 0, err
	}
	if r.opts.OnAck != nil && len(acks) > 0 {
		r.opts.OnAck(acks)
	}
	// Nothing but this push happened since the checkpoint: its own
	// writes need not come back through a pull.
	if err := r.store.AdvanceCheckpoint(out.PrevSeq, out.Last); err != nil {
		return len(acks), err
	}
	if len(remote) > 0 {
		if _, err := r.apply(remote, 0); err != nil {
			return len(acks), err
		}
	}
	return len(acks), rejected
}

// allAccepted reports whether the server accepted every write of a push.
func allAccepted(results []client.PushResult) bool {
	for _, res := range results {
		if !res.OK {
			return false
		}
	}
	return true
}

// pullEarly asks for the first pull page from the checkpoint the push
// whose reply is out leaves (AdvanceCheckpoint's rule).
func (r *Replicator) pullEarly(ctx context.Context, out client.PushOutcome) error {
	since, err := r.store.Checkpoint()
	if err != nil {
		return err
	}
	if out.Last > out.PrevSeq && since == out.PrevSeq {
		since = out.Last
	}
	e := &earlyPull{since: since, page: make(chan pulled, 1)}
	r.early.Store(e)
	go func() {
		reply, defs, err := r.cli.PullWithCollections(ctx, since, r.opts.PullLimit)
		e.page <- pulled{reply, defs, err}
	}()
	// Under WebAssembly the request goes out once this goroutine waits.
	runtime.Gosched()
	return nil
}

// versionOf reads a document as the server stores it (or its tombstone).
func versionOf(id string, doc json.RawMessage) core.Version {
	v := core.Version{ID: id, Rev: gjson.GetBytes(doc, "_rev").String()}
	if gjson.GetBytes(doc, "_deleted").Bool() {
		v.Deleted = true
	} else {
		v.Doc = doc
	}
	return v
}

// versionOfChange is the version a get reply's change describes.
func versionOfChange(c client.Change) core.Version {
	return core.Version{ID: c.ID, Rev: c.Rev, Deleted: c.Deleted, Doc: c.Doc}
}

// apply applies remote changes and returns how many changed the store.
func (r *Replicator) apply(changes []core.RemoteChange, last int64) (int, error) {
	res, err := r.store.ApplyRemote(changes, last, r.opts.Resolve)
	if err != nil {
		return 0, err
	}
	if r.opts.OnConflict != nil {
		for _, c := range res.Conflicts {
			r.opts.OnConflict(c)
		}
	}
	if r.opts.OnApply != nil && (len(res.Changed) > 0 || len(res.Conflicts) > 0) {
		r.opts.OnApply(res)
	}
	return len(res.Changed), nil
}

func remoteChanges(changes []client.Change) []core.RemoteChange {
	out := make([]core.RemoteChange, len(changes))
	for i, c := range changes {
		out[i] = core.RemoteChange{Version: versionOfChange(c), Seq: c.Seq, DocHasRev: c.DocHasRev}
		if len(c.Lost) > 0 {
			out[i].Lost = lostVersions(c.ID, c.Lost)
		}
	}
	return out
}

// lostVersions are the writes the server refused against a change's
// version, as versions of document id.
func lostVersions(id string, lost []client.LostWrite) []core.Version {
	out := make([]core.Version, len(lost))
	for i, l := range lost {
		out[i] = core.Version{ID: id, Rev: l.Rev, Doc: l.Doc, Deleted: l.Deleted}
	}
	return out
}

// Pull applies every change the server has after the store's checkpoint and
// returns how many changed the local store (this store's own writes coming
// back are not counted). When the server has compacted away tombstones
// newer than the checkpoint, the deletions they carried can no longer be
// learnt one by one: Pull then resyncs, fetching the whole database and
// dropping the synced documents the server no longer has.
// It then adopts the server's collection definitions.
func (r *Replicator) Pull(ctx context.Context) (int, error) {
	r.pullMu.Lock()
	defer r.pullMu.Unlock()
	total := 0
	var seen map[string]bool // ids seen during a resync
	// ahead is the next page, asked for before this one is applied, so
	// that the server reads and sends it meanwhile; taken when the
	// checkpoint after applying is where it was asked from.
	var ahead chan pulled
	var aheadSince int64
	if e := r.early.Swap(nil); e != nil {
		ahead, aheadSince = e.page, e.since
	}
	for {
		since, err := r.store.Checkpoint()
		if err != nil {
			return total, err
		}
		var (
			reply client.PullReply
			defs  []client.CollectionDef // with the last page, from a server that sends them
		)
		if ahead != nil && aheadSince == since {
			select {
			case p := <-ahead:
				reply, defs, err = p.reply, p.defs, p.err
			case <-ctx.Done():
				return total, ctx.Err()
			}
		} else {
			reply, defs, err = r.cli.PullWithCollections(ctx, since, r.opts.PullLimit)
		}
		ahead = nil
		if err != nil {
			return total, err
		}
		if seen == nil && since > 0 && reply.PurgedSeq > since {
			if err := r.store.ResetCheckpoint(); err != nil {
				return total, err
			}
			seen = map[string]bool{}
			continue
		}
		if reply.More && reply.Last > since {
			ahead, aheadSince = make(chan pulled, 1), reply.Last
			go func(since int64, ch chan<- pulled) {
				reply, defs, err := r.cli.PullWithCollections(ctx, since, r.opts.PullLimit)
				ch <- pulled{reply, defs, err}
			}(reply.Last, ahead)
			// Under WebAssembly the request goes out once this goroutine
			// waits: let it go before the page is applied.
			runtime.Gosched()
		}
		for _, c := range reply.Changes {
			if seen != nil && !c.Deleted {
				seen[c.ID] = true
			}
		}
		if len(reply.Changes) > 0 || reply.Last > since {
			n, err := r.apply(remoteChanges(reply.Changes), reply.Last)
			total += n
			if err != nil {
				return total, err
			}
		}
		if !reply.More {
			if seen != nil {
				n, err := r.store.DropUnseen(seen)
				if err != nil {
					return total + n, err
				}
				total += n
			}
			if defs != nil {
				err = r.adoptAll(defs)
			} else {
				err = r.pullCollections(ctx)
			}
			if err != nil {
				return total, err
			}
			if reply.Indexes != nil {
				var list []core.CollectionIndexes
				if err := json.Unmarshal(reply.Indexes, &list); err != nil {
					return total, fmt.Errorf("pull: indexes in the reply: %w", err)
				}
				return total, r.adoptIndexes(list)
			}
			return total, r.pullIndexes(ctx)
		}
	}
}

// pulled is a pull's reply as the client returned it.
type pulled struct {
	reply client.PullReply
	defs  []client.CollectionDef
	err   error
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
