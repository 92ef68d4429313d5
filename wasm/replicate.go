//go:build js && wasm

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"syscall/js"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/replica"
	"github.com/tidwall/gjson"
)

const (
	// pullLimit is the number of changes asked for per pull.
	pullLimit = 10000
	// pingEvery keeps a quiet live connection from the server's idle timeout.
	pingEvery = 30 * time.Second
	// maxBackoff bounds the wait between reconnects of live replication.
	maxBackoff = 5 * time.Second
	// finalPushTimeout bounds the push close makes of writes still pending.
	finalPushTimeout = 3 * time.Second
)

// Codes of errors reported through the 'error' event.
const (
	codeMergeFailed = "merge_failed" // the app's merge function failed
	numMergeFailed  = 1201
)

// mergeError is an app merge function that threw, returned a Promise or
// returned something that is not a document.
type mergeError struct{ id, msg string }

func (e *mergeError) Error() string {
	return fmt.Sprintf("onConflict for %q failed: %s; the server's version was kept and the local one is readable with conflicts()", e.id, e.msg)
}

// syncer replicates one store. Pushes go through replica.Replicator, which
// settles push conflicts; pulls and the live feed are applied here rather
// than by replica.Pull and replica.Run, because the 'change' event needs the
// changes that were applied and replica reports only conflicts.
//
// # Concurrency
//
// A syncer is safe for concurrent use: sync() calls from JavaScript may run
// while run follows the live feed. Remote changes are applied under applyMu,
// which is never held across a network call.
type syncer struct {
	store   *core.Store
	cli     *client.Client
	rep     *replica.Replicator
	resolve core.Resolver
	events  *events
	changed func() // called after the store's replication state moved

	applyMu sync.Mutex
	wake    chan struct{} // a local write was made
}

func newSyncer(st *core.Store, cli *client.Client, resolve core.Resolver, ev *events, changed func()) *syncer {
	s := &syncer{store: st, cli: cli, resolve: resolve, events: ev, changed: changed, wake: make(chan struct{}, 1)}
	s.rep = replica.New(st, cli, replica.Options{
		Resolve:    resolve,
		OnConflict: s.pushConflict,
		OnAck:      func([]core.Ack) { changed() },
		PullLimit:  pullLimit,
	})
	st.OnWrite(func() {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	})
	return s
}

// pushConflict reports a conflict settled while pushing. The stored
// document changed unless the local version was kept, so it is a change too.
func (s *syncer) pushConflict(c core.Conflict) {
	s.events.conflict(c)
	if c.Kept != "local" {
		s.events.changes([]changeEvent{{ID: c.ID, Rev: c.Remote.Rev, Deleted: c.Remote.Deleted}})
	}
	s.changed()
}

// round pushes every pending write, then pulls everything new.
func (s *syncer) round(ctx context.Context) (pushed, pulled int, err error) {
	pushed, err = s.rep.Push(ctx)
	if err != nil {
		return pushed, 0, fmt.Errorf("sync: %w", err)
	}
	pulled, err = s.pull(ctx)
	if err != nil {
		return pushed, pulled, fmt.Errorf("sync: %w", err)
	}
	return pushed, pulled, nil
}

// pull applies every change after the store's checkpoint and returns how
// many of them changed the local store.
func (s *syncer) pull(ctx context.Context) (int, error) {
	total := 0
	for {
		since, err := s.store.Checkpoint()
		if err != nil {
			return total, err
		}
		reply, err := s.cli.Pull(ctx, since, pullLimit)
		if err != nil {
			return total, err
		}
		n, err := s.apply(reply.Changes, reply.Last)
		total += n
		if err != nil || !reply.More {
			return total, err
		}
	}
}

// changeEvent is one entry of a 'change' event.
type changeEvent struct {
	ID      string `json:"id"`
	Rev     string `json:"rev"`
	Deleted bool   `json:"deleted"`
}

// apply applies a batch of the server's changes and reports the conflicts
// and the changes that the store did not have yet (a write of this store
// echoed back is not a change). It returns how many changes those were.
func (s *syncer) apply(changes []client.Change, last int64) (int, error) {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	ckpt, err := s.store.Checkpoint()
	if err != nil {
		return 0, err
	}
	if len(changes) == 0 && last <= ckpt {
		return 0, nil
	}
	remote := make([]core.RemoteChange, 0, len(changes))
	var fresh []changeEvent
	for _, c := range changes {
		if c.Seq > 0 && c.Seq <= ckpt {
			continue // a pull and the live feed overlapped
		}
		remote = append(remote, core.RemoteChange{Version: core.Version{ID: c.ID, Rev: c.Rev, Doc: c.Doc, Deleted: c.Deleted}, Seq: c.Seq})
		if !s.has(c) {
			fresh = append(fresh, changeEvent{ID: c.ID, Rev: c.Rev, Deleted: c.Deleted})
		}
	}
	conflicts, err := s.store.ApplyRemote(remote, last, s.resolve)
	if err != nil {
		return 0, err
	}
	for _, c := range conflicts {
		s.events.conflict(c)
	}
	s.events.changes(fresh)
	s.changed()
	return len(fresh), nil
}

// has reports whether the store holds c's version already.
func (s *syncer) has(c client.Change) bool {
	doc, err := s.store.Get(c.ID)
	if err != nil {
		return c.Deleted
	}
	return !c.Deleted && gjson.GetBytes(doc, "_rev").String() == c.Rev
}

// run follows the server until ctx ends: a round, then the live feed, local
// writes pushed as they are made, and after a lost connection another try
// with backoff from the checkpoint. Errors go to the 'error' event, once
// per error code until replication works again.
func (s *syncer) run(ctx context.Context) {
	backoff := 50 * time.Millisecond
	var last string
	for {
		err := s.follow(ctx, func() {
			backoff, last = 50*time.Millisecond, ""
		})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// Retries fail alike while offline, with texts that differ.
			if code, _ := describe(err); code != last {
				last = code
				s.events.error(err)
			}
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// batch is one message of the live feed.
type batch struct {
	changes []client.Change
	last    int64
}

// feed queues live changes without bound, so the client's reader never
// waits for the applier: the applier may itself be waiting for a reply that
// only the reader can deliver. The server drops a subscriber that falls far
// behind, which bounds the queue.
type feed struct {
	mu    sync.Mutex
	queue []batch
	ready chan struct{}
}

func (f *feed) add(b batch) {
	f.mu.Lock()
	f.queue = append(f.queue, b)
	f.mu.Unlock()
	select {
	case f.ready <- struct{}{}:
	default:
	}
}

func (f *feed) take() []batch {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queue
	f.queue = nil
	return q
}

// follow runs one connection's worth of live replication; connected is
// called once it is subscribed.
func (s *syncer) follow(ctx context.Context, connected func()) error {
	if _, _, err := s.round(ctx); err != nil {
		return err
	}
	since, err := s.store.Checkpoint()
	if err != nil {
		return err
	}
	f := &feed{ready: make(chan struct{}, 1)}
	err = s.cli.Subscribe(ctx, since, func(changes []client.Change, last int64) {
		f.add(batch{changes, last})
	})
	if err != nil {
		return err
	}
	done := s.cli.Done()
	if done == nil {
		return client.ErrDisconnected
	}
	connected()
	// Writes made between the round and the subscription.
	if _, err := s.rep.Push(ctx); err != nil {
		return err
	}
	keepAlive := time.NewTicker(pingEvery)
	defer keepAlive.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-done:
			return client.ErrDisconnected
		case <-keepAlive.C:
			if err := s.cli.Ping(ctx); err != nil {
				return err
			}
		case <-s.wake:
			if _, err := s.rep.Push(ctx); err != nil {
				return err
			}
		case <-f.ready:
			for _, b := range f.take() {
				if _, err := s.apply(b.changes, b.last); err != nil {
					return err
				}
			}
		}
	}
}

// versionJSON is a document version as JavaScript sees it.
type versionJSON struct {
	ID      string          `json:"id"`
	Rev     string          `json:"rev"`
	Doc     json.RawMessage `json:"doc"`
	Deleted bool            `json:"deleted"`
}

func toVersionJSON(v core.Version) versionJSON {
	out := versionJSON{ID: v.ID, Rev: v.Rev, Doc: v.Doc, Deleted: v.Deleted}
	if v.Deleted || len(out.Doc) == 0 {
		out.Doc = json.RawMessage("null")
	}
	return out
}

// resolverFor returns the conflict policy named by onConflict: "server"
// (also for undefined), "local", or a function, which index.js wraps so that
// it takes two versions as JSON text and returns {kind, doc}.
func resolverFor(onConflict js.Value, ev *events) (core.Resolver, error) {
	switch onConflict.Type() {
	case js.TypeUndefined, js.TypeNull:
		return core.ServerWins, nil
	case js.TypeString:
		switch onConflict.String() {
		case "server":
			return core.ServerWins, nil
		case "local":
			return core.LocalWins, nil
		}
	case js.TypeFunction:
		return jsResolver(onConflict, ev), nil
	}
	return nil, &argError{"openStore: onConflict must be 'server', 'local' or a function"}
}

// jsResolver settles conflicts with the app's merge function. It runs inside
// the store's write transaction, so the function must return at once: a
// Promise, an exception or a result that is not a document is reported as an
// 'error' event and the server's version is kept (the local one stays
// readable as a conflict), so replication never stalls on it.
func jsResolver(fn js.Value, ev *events) core.Resolver {
	return func(local, remote core.Version) (core.Version, error) {
		lj, _ := json.Marshal(toVersionJSON(local))
		rj, _ := json.Marshal(toVersionJSON(remote))
		out, err := protect(func() (any, error) { return fn.Invoke(string(lj), string(rj)), nil })
		if err != nil {
			ev.error(&mergeError{id: remote.ID, msg: err.Error()})
			return remote, nil
		}
		res := out.(js.Value)
		switch kind := res.Get("kind").String(); kind {
		case "remote":
			return remote, nil
		case "local":
			return local, nil
		case "delete":
			if remote.Deleted {
				return remote, nil
			}
			return core.Version{ID: remote.ID, Deleted: true}, nil
		case "doc":
			return core.Version{ID: remote.ID, Doc: json.RawMessage(res.Get("doc").String())}, nil
		default:
			ev.error(&mergeError{id: remote.ID, msg: res.Get("message").String()})
			return remote, nil
		}
	}
}

// events delivers a store's events to index.js's emit(type, payload), which
// queues them for the listeners so that no listener runs inside Go.
type events struct {
	emit js.Value // a function, or undefined for none
}

func (e *events) send(typ string, payload any) {
	if e == nil || e.emit.Type() != js.TypeFunction {
		return
	}
	_, _ = protect(func() (any, error) {
		e.emit.Invoke(typ, payload)
		return nil, nil
	})
}

// conflictJSON is the payload of a 'conflict' event.
type conflictJSON struct {
	ID     string      `json:"id"`
	Local  versionJSON `json:"local"`
	Remote versionJSON `json:"remote"`
	Kept   string      `json:"kept"`
}

func (e *events) conflict(c core.Conflict) {
	b, _ := json.Marshal(conflictJSON{ID: c.ID, Local: toVersionJSON(c.Local), Remote: toVersionJSON(c.Remote), Kept: c.Kept})
	e.send("conflict", string(b))
}

func (e *events) changes(cs []changeEvent) {
	if len(cs) == 0 {
		return
	}
	b, _ := json.Marshal(map[string]any{"changes": cs})
	e.send("change", string(b))
}

func (e *events) error(err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	e.send("error", toJSError(err))
}
