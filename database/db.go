package database

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/replica"
)

// Config configures Open. URL and Database are required.
type Config struct {
	// URL is the sync server's websocket endpoint (ws://host/v1/sync).
	URL string
	// URLs are further servers of the same cluster, tried in turn when the
	// one in use is unreachable or stops answering (client.Options.URLs).
	URLs []string
	// Database and Token name the database on the server and authorize
	// the client for it.
	Database, Token string
	// TokenFunc, if set, gives the token instead of Token, for signed
	// tokens that expire (client.Options.TokenFunc).
	TokenFunc func(ctx context.Context) (string, error)
	// Node is the node tag given before; empty: the one Storage kept, or a
	// new one from the server.
	Node string
	// Storage keeps the store: its documents, and with Meta its node tag
	// and HiLo ranges. Nil: in memory only, and unused HiLo numbers go back
	// to the server on Close.
	Storage Storage
	// Durability says when a write returns (with Storage).
	Durability Durability
	// CompactAt is the log size past which the journal compacts it into a
	// snapshot (JournalOptions.CompactAt); default 4 MiB.
	CompactAt int
	// Reserve is how many whole HiLo ranges to hold leased beyond the one
	// in use, for offline periods (idgen.Options.Reserve).
	Reserve int
	// Resolve settles conflicts; nil means core.ServerWins.
	Resolve core.Resolver
	// ChangeFeed keeps the store's local change feed (core.Options).
	ChangeFeed bool
	// Live replicates for the DB's lifetime: local writes are pushed as they
	// are made and the server's changes are followed (replica.Run).
	Live bool
	// RequestTimeout and Heartbeat are the client's (client.Options).
	RequestTimeout, Heartbeat time.Duration
	// DialTimeout bounds the first dial in Open; past it (or when nothing
	// answers) the DB opens offline and dials on its first call that needs
	// the server. Default 5 seconds.
	DialTimeout time.Duration
	// DialLater makes Open return once the store is loaded, without dialing:
	// the live loop (with Live) or the first call that needs the server
	// dials, as after a failed first dial. A server that refuses the client
	// is then not Open's error but that of the calls (and OnError). A
	// Storage whose meta holds the node of an earlier session (the device
	// opened this store before) always opens so.
	DialLater bool
	// PullLimit, PingEvery and PushDelay are the replicator's
	// (replica.Options).
	PullLimit int
	PingEvery time.Duration
	PushDelay time.Duration

	// OnStatus is called with true once a connection is up and false once it
	// is lost. OnNode is called with the node tag once the server gives or
	// confirms it. Neither may call back into the DB's client.
	OnStatus func(connected bool)
	OnNode   func(node string)
	// OnConflict, OnApply, OnAck, OnConnect and OnError are the
	// replicator's hooks (replica.Options).
	OnConflict func(core.Conflict)
	OnApply    func(core.ApplyResult)
	OnAck      func([]core.Ack)
	OnConnect  func()
	OnError    func(error)
	// OnSourceError is called with every error of the id sources (a lease,
	// an identity) in the context of the call that met it.
	OnSourceError func(ctx context.Context, err error)
	// Observe, if set, is called with the changes of every write
	// transaction while the store still holds its write lock, before the
	// write returns: for caches of documents that must never be older than
	// the last write.
	Observe func(changes []core.Change)
}

// DB is an offline-first store: a core.Store whose writes are made durable
// in a Storage, with ids from HiLo ranges leased from the sync server and
// replication with it. It is what the browser build, the npm package and Go
// programs open.
//
// A DB is safe for concurrent use.
type DB struct {
	cfg     Config
	store   *core.Store
	client  *client.Client
	gen     *idgen.Generator
	rep     *replica.Replicator
	journal *Journal // nil without Storage
	meta    Meta     // nil unless Storage keeps it

	// connecting: Open did not dial, and the live loop's first attempt
	// has not ended yet (see Connecting).
	connecting atomic.Bool

	ctx      context.Context
	cancel   context.CancelFunc
	bgMu     sync.Mutex // guards bg.Add against Close's bg.Wait
	stopping bool
	bg       sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// Open opens the DB cfg describes: it loads what cfg.Storage holds while it
// dials the server (opening offline when it cannot be reached) and, with
// cfg.Live, starts replicating. A server that answers and refuses the
// client (a wrong token, say) is an error. A store this device opened
// before (and cfg.DialLater) does not wait for the dial: see DialLater.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	if cfg.URL == "" || cfg.Database == "" {
		return nil, errors.New("open database: URL and Database are required")
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	db := &DB{cfg: cfg}
	db.ctx, db.cancel = context.WithCancel(context.Background())
	ok := false
	defer func() {
		if !ok {
			db.cancel()
		}
	}()

	var savedRanges map[string][]byte
	node := cfg.Node
	dialLater := cfg.DialLater
	if m, isMeta := cfg.Storage.(Meta); isMeta {
		n, ranges, err := m.LoadMeta()
		if err != nil {
			return nil, fmt.Errorf("open database: %w", err)
		}
		db.meta, savedRanges = m, ranges
		if node == "" {
			node = n
		}
		// A store this device opened before opens from what it holds: the
		// network's latency (or a connection that hangs) is not on the
		// path of its start.
		dialLater = dialLater || n != ""
	}
	copts := client.Options{Database: cfg.Database, Token: cfg.Token, TokenFunc: cfg.TokenFunc, URLs: cfg.URLs, Node: node, OnNode: db.setNode,
		RequestTimeout: cfg.RequestTimeout, Heartbeat: cfg.Heartbeat, OnStatus: cfg.OnStatus}
	var rj *rangeJournal
	if db.meta != nil {
		var err error
		if rj, err = newRangeJournal(db.meta, savedRanges); err != nil {
			return nil, err
		}
	}
	// The store's id sources get the client once it is dialed: nothing asks
	// them for an id before Open returns.
	src := &sources{onErr: cfg.OnSourceError}
	st, err := core.Open(":memory:", core.Options{Node: node, IDs: src, Numbers: src, Identities: src, ChangeFeed: cfg.ChangeFeed})
	if err != nil {
		return nil, err
	}
	db.bgMu.Lock() // setNode may run meanwhile, on the dial's goroutine
	db.store = st
	db.bgMu.Unlock()

	// The dial waits on the network while loading the store keeps the CPU
	// busy: the two run at once, and Open waits for both.
	type dialResult struct {
		cl  *client.Client
		err error
	}
	dialed := make(chan dialResult, 1)
	dctx, dcancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer dcancel()
	if dialLater {
		dialed <- dialResult{err: client.ErrDisconnected}
	} else {
		go func() {
			cl, err := client.Dial(dctx, cfg.URL, copts)
			dialed <- dialResult{cl, err}
		}()
		// Under GOOS=js one goroutine runs at a time and a long load is
		// never preempted: let the dial start its connection before the
		// load begins.
		runtime.Gosched()
	}
	var durable core.Journal
	if cfg.Storage != nil {
		j, err := OpenJournal(cfg.Storage, st, JournalOptions{Durability: cfg.Durability, CompactAt: cfg.CompactAt})
		if err != nil {
			dcancel()
			if d := <-dialed; d.cl != nil {
				_ = d.cl.Close()
			}
			_ = st.Close()
			return nil, err
		}
		db.journal, durable = j, j
	}
	d := <-dialed
	dcancel()
	cl := d.cl
	var refused *client.Error
	switch {
	case d.err == nil:
	case errors.As(d.err, &refused):
		_ = st.Close()
		return nil, fmt.Errorf("open database: %w", d.err)
	case errors.Is(d.err, client.ErrDisconnected) || errors.Is(d.err, context.DeadlineExceeded):
		// Offline: documents with their own keys can be stored now, HiLo ids
		// from a kept range or once the server is back.
		cl = client.New(cfg.URL, copts)
	default:
		_ = st.Close()
		return nil, fmt.Errorf("open database: %w", d.err)
	}
	db.client = cl
	if rj != nil {
		// Kept for the next session rather than given back on close.
		db.gen = idgen.NewGeneratorWith(leaseOnly{cl}, idgen.Options{Journal: rj, JournalStep: journalStep, JournalAhead: true, Prefetch: prefetch, Reserve: cfg.Reserve})
	} else {
		db.gen = idgen.NewGeneratorWith(cl, idgen.Options{Prefetch: prefetch, Reserve: cfg.Reserve})
	}
	src.gen, src.client = db.gen, cl
	if cfg.Observe != nil {
		st.SetJournal(observer{observe: cfg.Observe, next: durable})
	}
	if n := cl.Node(); n != "" && n != st.Clock().Node() {
		st.Clock().SetNode(n) // the tag arrived while the store was opening
	}
	ropts := replica.Options{
		Resolve: cfg.Resolve, OnConflict: cfg.OnConflict, OnApply: cfg.OnApply, OnAck: cfg.OnAck,
		OnConnect: cfg.OnConnect, OnError: cfg.OnError, PullLimit: cfg.PullLimit, PingEvery: cfg.PingEvery,
		PushDelay: cfg.PushDelay,
	}
	if j := db.journal; j != nil {
		// What the server is sent is on the disk first (and, relaxed, in
		// the log at all).
		ropts.BeforePush = func(context.Context) error { return j.Harden() }
	}
	if dialLater && cfg.Live {
		// The live loop's first attempt tells how it ended, either way.
		db.connecting.Store(true)
		onConnect, onError := ropts.OnConnect, ropts.OnError
		ropts.OnConnect = func() {
			db.connecting.Store(false)
			if onConnect != nil {
				onConnect()
			}
		}
		ropts.OnError = func(err error) {
			// The first attempt failed: the store is offline (a state the
			// OnStatus of a dial that failed in Open never tells).
			if db.connecting.Swap(false) && cfg.OnStatus != nil {
				cfg.OnStatus(false)
			}
			if onError != nil {
				onError(err)
			}
		}
	}
	db.rep = replica.New(st, cl, ropts)
	if cfg.Live {
		db.bg.Add(1)
		go func() {
			defer db.bg.Done()
			_ = db.rep.Run(db.ctx)
		}()
	}
	ok = true
	return db, nil
}

// journalStep is how many HiLo numbers one range journal write covers when
// ids are taken now and then (idgen.Options.JournalStep; under a steady
// demand the step doubles per write, up to a quarter of the range). The
// next step is journaled in the background half-way through the last
// (idgen.Options.JournalAhead), so a put rarely waits for the journal; a
// crash skips at most two steps.
const journalStep = 8

// prefetch is how much of a HiLo range is left when the next is leased in
// the background (idgen.Options.Prefetch): while online, a put never waits
// for a lease once the first range is in. A persisted store keeps the
// leased range in its journal for the next session; one without
// persistence gives it back on close.
const prefetch = 0.25

// setNode records the node tag the server gave this client. The client
// calls it while holding its own lock: it must not call back into it.
func (db *DB) setNode(node string) {
	db.bgMu.Lock()
	st := db.store
	db.bgMu.Unlock()
	if st != nil {
		st.Clock().SetNode(node)
	}
	if db.meta != nil {
		// Kept for the next session, not waited for: losing it costs only a
		// new tag.
		db.bgMu.Lock()
		defer db.bgMu.Unlock()
		if db.stopping {
			return // closing: the tag is the one kept already
		}
		db.bg.Add(1) // Close waits for it
		go func() {
			defer db.bg.Done()
			if err := db.meta.SaveNode(node); err != nil && db.cfg.OnError != nil {
				db.cfg.OnError(fmt.Errorf("keep node tag: %w", err))
			}
		}()
	}
	if db.cfg.OnNode != nil {
		db.cfg.OnNode(node)
	}
}

// Store returns the document store.
func (db *DB) Store() *core.Store { return db.store }

// Client returns the sync client.
func (db *DB) Client() *client.Client { return db.client }

// Connecting reports whether Open returned without dialing (DialLater, or
// a store opened before) and the live loop's first attempt to connect has
// not ended yet: the store is not offline, it is on its way online.
func (db *DB) Connecting() bool { return db.connecting.Load() }

// Replicator returns the replicator (Push, Pull, Sync).
func (db *DB) Replicator() *replica.Replicator { return db.rep }

// IDs returns the HiLo id generator.
func (db *DB) IDs() *idgen.Generator { return db.gen }

// QuickWrites reports whether a write can be answered without waiting for
// its Storage (none, relaxed durability, or a Storage that appends at once),
// so one whose id is at hand (idgen.NoWait) returns at once. With a Storage
// that appends at once, a write committed while the log is being compacted
// still waits: make it under core.DeferDurable to be told instead.
func (db *DB) QuickWrites() bool {
	return db.journal == nil || db.cfg.Durability == Relaxed || db.journal.AppendsNow()
}

// AppendsNow reports whether the store's strict writes are appended to its
// Storage at once (database.NowAppender), so they need no wait.
func (db *DB) AppendsNow() bool { return db.journal != nil && db.journal.AppendsNow() }

// Sync pushes every pending write, then pulls every change: one round
// (once more on a new connection when the connection ended under it, as
// replica.Replicator.Sync does).
func (db *DB) Sync(ctx context.Context) (pushed, pulled int, err error) {
	return db.rep.SyncCount(ctx)
}

// Flush returns once every write made so far is on the disk, which a power
// cut cannot take back either (a no-op without Storage).
func (db *DB) Flush() error {
	if db.journal == nil {
		return nil
	}
	return db.journal.Harden()
}

// Bounds of Close's courtesies to the server.
const (
	finalPushTimeout = 3 * time.Second
	returnTimeout    = 2 * time.Second
)

// Close stops replication (pushing what is pending, for at most a few
// seconds, when connected), compacts the log into one snapshot, gives
// unused HiLo numbers back to the server unless Storage keeps them, and
// closes the connection and the store. The Storage is the caller's to
// close. Calling Close again returns the first call's result.
func (db *DB) Close() error {
	db.closeOnce.Do(func() { db.closeErr = db.close() })
	return db.closeErr
}

func (db *DB) close() error {
	db.cancel()
	db.bgMu.Lock()
	db.stopping = true
	db.bgMu.Unlock()
	db.bg.Wait()
	var errs []error
	if db.cfg.Live && db.client.Connected() {
		pctx, pcancel := context.WithTimeout(context.Background(), finalPushTimeout)
		_, _ = db.rep.Push(pctx) // what is left stays pending
		pcancel()
	}
	if db.journal != nil {
		if err := db.journal.Compact(); err != nil {
			errs = append(errs, fmt.Errorf("close database: %w", err))
		}
	}
	rctx, rcancel := context.WithTimeout(context.Background(), returnTimeout)
	_ = db.gen.Close(rctx)
	rcancel()
	_ = db.client.Close()
	if err := db.store.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close database: %w", err))
	}
	return errors.Join(errs...)
}

// observer hands a transaction's changes to a cache's observe function,
// then to the durable journal, if any.
type observer struct {
	observe func([]core.Change)
	next    core.Journal
}

func noWait() error { return nil }

// Commit implements core.Journal.
func (o observer) Commit(changes []core.Change) func() error {
	o.observe(changes)
	if o.next == nil {
		return noWait
	}
	return o.next.Commit(changes)
}

// leaseOnly is a range source that cannot take ranges back. A DB whose
// Storage keeps its ranges keeps them for the next session instead of
// returning them on close; a journaled idgen.HiLo already never returns
// them, and leaseOnly makes sure of it (idgen.HiLo.Close returns ranges only
// to a RangeReturner).
type leaseOnly struct{ cli *client.Client }

// NextRange implements idgen.RangeSource.
func (l leaseOnly) NextRange(ctx context.Context, tag string, last idgen.Range) (idgen.Range, error) {
	return l.cli.NextRange(ctx, tag, last)
}

// NextRangeFor implements idgen.SizedRangeSource.
func (l leaseOnly) NextRangeFor(ctx context.Context, tag string, last idgen.Range, want int64) (idgen.Range, error) {
	return l.cli.NextRangeFor(ctx, tag, last, want)
}

// sources gives core its HiLo ids and numbers (from the generator) and its
// identities (from the client). Under idgen.NoWait, identities fail at once
// with idgen.ErrWouldWait: they need the server.
type sources struct {
	gen    *idgen.Generator
	client *client.Client
	onErr  func(ctx context.Context, err error)
}

var (
	_ core.IDSource       = (*sources)(nil)
	_ core.NumberSource   = (*sources)(nil)
	_ core.IdentitySource = (*sources)(nil)
)

func (s sources) note(ctx context.Context, err error) error {
	if err != nil && s.onErr != nil {
		s.onErr(ctx, err)
	}
	return err
}

// NextID implements core.IDSource.
func (s sources) NextID(ctx context.Context, tag string) (string, error) {
	id, err := s.gen.NextID(ctx, tag)
	if p, ok := s.provisionalID(ctx, tag, err); ok {
		return p, nil
	}
	return id, s.note(ctx, err)
}

// NextIDs fills ids with HiLo ids for tag, a bulk write's, in one call
// (idgen.Generator.NextIDs).
func (s sources) NextIDs(ctx context.Context, tag string, ids []string) (int, error) {
	n, err := s.gen.NextIDs(ctx, tag, ids)
	if _, ok := s.provisionalID(ctx, tag, err); ok {
		for i := n; i < len(ids); i++ {
			ids[i], _ = s.provisionalID(ctx, tag, err)
		}
		return len(ids), nil
	}
	return n, s.note(ctx, err)
}

// Prepare readies the generator for a bulk write (idgen.Generator.Prepare).
func (s sources) Prepare(tag string, want int) { s.gen.Prepare(tag, want) }

// NextNumber implements core.NumberSource.
func (s sources) NextNumber(ctx context.Context, tag string) (int64, string, error) {
	n, serverTag, err := s.gen.NextNumber(ctx, tag)
	return n, serverTag, s.note(ctx, err)
}

// NextIdentity implements core.IdentitySource.
func (s sources) NextIdentity(ctx context.Context, name string) (int64, error) {
	if idgen.IsNoWait(ctx) {
		return 0, s.note(ctx, idgen.ErrWouldWait)
	}
	v, err := s.client.NextIdentity(ctx, name)
	return v, s.note(ctx, err)
}

// NextIdentities implements core.IdentitySource.
func (s sources) NextIdentities(ctx context.Context, names []string) ([]int64, error) {
	if idgen.IsNoWait(ctx) {
		return nil, s.note(ctx, idgen.ErrWouldWait)
	}
	vs, err := s.client.NextIdentities(ctx, names)
	return vs, s.note(ctx, err)
}

// SeedIdentity implements core.IdentitySource.
func (s sources) SeedIdentity(ctx context.Context, name string, value int64, force bool) (int64, error) {
	if idgen.IsNoWait(ctx) {
		return 0, s.note(ctx, idgen.ErrWouldWait)
	}
	v, err := s.client.SeedIdentity(ctx, name, value, force)
	return v, s.note(ctx, err)
}
