package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/database"
	"github.com/hilodb/hilodb/internal/aqlcursor"
)

// config is what the worker needs to know about its sync server. In the
// worker it comes from the HILODB_URL, HILODB_DB and HILODB_TOKEN bindings
// (the database may also come from the path, /_db/{db}/…).
type config struct {
	URL      string // websocket endpoint, e.g. ws://127.0.0.1:8080/v1/sync
	Database string // database name on the sync server
	Token    string // token for Database; empty on a loopback server without tokens
}

const (
	// defaultDatabase is used when no database is configured.
	defaultDatabase = "default"
	// pullWait bounds the pull a read makes while the replica does not
	// follow the live feed; retryPull is how long after a failed one reads
	// are served from the replica without trying again.
	pullWait  = time.Second
	retryPull = time.Second
	// startWait is how long after the replica opens its reads are answered
	// at once from what it holds ("stale"), unless asked to be fresh, while
	// it connects in the background: a first read waits for no dial and no
	// pull. Past it, or once the replica follows the feed, the usual rule
	// holds.
	startWait = time.Second
	// syncWait bounds how long a write asked to wait for the server
	// (waitForSync, the short form) waits for its acknowledgement.
	syncWait = 3 * time.Second
	// pushDelay gathers the writes made within it into one push: one
	// reply, one acknowledgement and one change back on the feed for all
	// of them, instead of each. A write asked to wait for the server is
	// pushed at once.
	pushDelay = 10 * time.Millisecond
	// compactAt is the log size past which the replica's journal is
	// compacted into a snapshot.
	compactAt = 1 << 20
	// liveAfter is how long after opening the live loop starts if no
	// request or alarm has come to begin it (begin).
	liveAfter = 50 * time.Millisecond
	// closePush bounds Close's last push.
	closePush = 3 * time.Second
)

// errNoServer is the failure to open a replica without a sync server URL.
var errNoServer = errors.New("no sync server is configured (HILODB_URL)")

// app is one database's replica at the edge: a database.DB kept in the
// Durable Object's storage, replicating live with the sync server.
//
// # Concurrency
//
// An app is safe for concurrent use.
type app struct {
	db    *database.DB
	store *core.Store

	following atomic.Bool     // the live feed is followed
	opened    time.Time       // when the replica was opened
	followed  atomic.Bool     // the live feed has been followed since it opened
	looks     collectionLooks // what the server was asked of collections this replica had no definition of
	lastPull  atomic.Int64    // unix nanos of the last failed pull a read made

	ackMu sync.Mutex
	acked chan struct{} // closed (and replaced) whenever the server acknowledges writes

	cursors *aqlcursor.Table // ArangoDB's open query cursors

	begun    chan struct{} // closed by begin: the live loop may start
	beginOne sync.Once
	stopLive context.CancelFunc
	liveDone chan struct{} // closed when the live loop has ended
}

// openApp opens the replica of cfg.Database kept in st.
func openApp(ctx context.Context, cfg config, st database.Storage) (*app, error) {
	if cfg.Database == "" {
		cfg.Database = defaultDatabase
	}
	// Further servers of a cluster follow the first, comma-separated: the
	// client moves to the next when one is unreachable or stops answering.
	var urls []string
	for _, u := range strings.Split(cfg.URL, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("open replica: %w", errNoServer)
	}
	a := &app{acked: make(chan struct{}), cursors: aqlcursor.NewTable(aqlcursor.DefaultLimits, nil)}
	db, err := database.Open(ctx, database.Config{
		URL:      urls[0],
		URLs:     urls[1:],
		Database: cfg.Database,
		Token:    cfg.Token,
		Storage:  st,
		// The live loop is the app's (live), not Open's.
		Live:        false,
		Reserve:     1, // a spare range, for HiLo ids while the server is away
		DialTimeout: 2 * time.Second,
		// A connection that dies without a close (a lost peer) is noticed
		// within Heartbeat + RequestTimeout, after which reads pull first.
		Heartbeat:      time.Second,
		RequestTimeout: 5 * time.Second,
		PushDelay:      pushDelay,
		// A smaller log than the default: every append is a key in the
		// object's storage, and the log is read whole when the object starts.
		CompactAt: compactAt,
		// Open returns once the store is loaded: the live loop dials, and
		// the first reads do not wait for it (startWait).
		DialLater: true,
		OnConnect: func() {
			a.following.Store(true)
			a.followed.Store(true)
		},
		OnStatus: func(up bool) {
			if !up {
				a.following.Store(false)
			}
		},
		OnAck: func([]core.Ack) { a.signalAck() },
	})
	if err != nil {
		return nil, fmt.Errorf("open replica: %w", err)
	}
	a.db, a.store = db, db.Store()
	a.opened = time.Now()
	a.begun, a.liveDone = make(chan struct{}), make(chan struct{})
	ctx, a.stopLive = context.WithCancel(context.Background())
	go a.live(ctx)
	return a, nil
}

// live replicates for the app's life: pushes writes as they are made and
// follows the server's change feed, reconnecting with backoff. It starts
// once begin is called (or liveAfter has passed), and then first yields:
// under workerd, the Go program returns to the event loop only when every
// goroutine waits, so the request that began it is answered before the
// connection's work starts.
func (a *app) live(ctx context.Context) {
	defer close(a.liveDone)
	select {
	case <-a.begun:
	case <-time.After(liveAfter):
	case <-ctx.Done():
		return
	}
	select {
	case <-time.After(time.Millisecond):
	case <-ctx.Done():
		return
	}
	_ = a.db.Replicator().Run(ctx)
}

// begin lets the live loop start: the glue calls it once the first
// request has its answer (or is under way), or the alarm has come.
func (a *app) begin() { a.beginOne.Do(func() { close(a.begun) }) }

func (a *app) signalAck() {
	a.ackMu.Lock()
	close(a.acked)
	a.acked = make(chan struct{})
	a.ackMu.Unlock()
}

func (a *app) ackSignal() <-chan struct{} {
	a.ackMu.Lock()
	defer a.ackMu.Unlock()
	return a.acked
}

// starting reports whether the replica is in its start window: opened
// less than startWait ago and not yet following the feed.
func (a *app) starting() bool {
	return !a.followed.Load() && time.Since(a.opened) < startWait
}

// freshen makes sure a read is fresh within the documented bound: while
// the replica follows the live feed it is; otherwise it pulls what the
// server has since its checkpoint, waiting at most pullWait. In the start
// window (starting) a read that does not insist (noCache) is answered
// from the replica at once. It returns the freshness the read gets
// ("live", "pulled" or "stale").
func (a *app) freshen(ctx context.Context, noCache bool) string {
	if a.following.Load() {
		return "live"
	}
	if !noCache && a.starting() {
		return "stale"
	}
	if last := a.lastPull.Load(); last != 0 && time.Since(time.Unix(0, last)) < retryPull {
		return "stale"
	}
	pctx, cancel := context.WithTimeout(ctx, pullWait)
	defer cancel()
	// The pull may wait behind the live loop's dial (the client dials
	// one at a time), which pctx does not bound: the read waits for
	// pullWait at most all the same.
	pulled := make(chan error, 1)
	go func() {
		_, err := a.db.Replicator().Pull(pctx)
		pulled <- err
	}()
	var err error
	select {
	case err = <-pulled:
	case <-pctx.Done():
		err = pctx.Err()
	}
	if err != nil {
		a.lastPull.Store(time.Now().UnixNano())
		return "stale"
	}
	a.lastPull.Store(0)
	return "pulled"
}

// waitSynced pushes now (rather than after pushDelay) and waits, at most
// syncWait, until the server has acknowledged the latest writes of ids; it
// reports whether it has.
func (a *app) waitSynced(ctx context.Context, ids []string) bool {
	ctx, cancel := context.WithTimeout(ctx, syncWait)
	defer cancel()
	for {
		signal := a.ackSignal()
		if !a.anyPending(ids) {
			return true
		}
		// Push waits for a push of the live loop under way, then sends
		// what is left.
		if _, err := a.db.Replicator().Push(ctx); err != nil {
			return !a.anyPending(ids)
		}
		if !a.anyPending(ids) {
			return true
		}
		select {
		case <-signal:
		case <-ctx.Done():
			return !a.anyPending(ids)
		}
	}
}

// anyPending reports whether a write of one of ids awaits the server.
func (a *app) anyPending(ids []string) bool {
	n, err := a.store.PendingCount()
	if err != nil || n == 0 {
		return err != nil
	}
	ws, err := a.store.PendingWrites(math.MaxInt)
	if err != nil {
		return true
	}
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	for _, w := range ws {
		if want[w.ID] {
			return true
		}
	}
	return false
}

// tick is the Durable Object's alarm: one sync round (push what is
// pending, pull) unless the live loop is following. It reports whether
// writes are still pending, so the glue sets the next alarm.
func (a *app) tick(ctx context.Context) (pending bool) {
	if !a.following.Load() {
		ctx, cancel := context.WithTimeout(ctx, syncWait)
		_, _, _ = a.db.Sync(ctx)
		cancel()
	}
	n, err := a.store.PendingCount()
	return err != nil || n > 0
}

// status is GET /_edge/status: whether the replica follows the server, how
// many writes are pending, its node tag, and the server it uses (its URL and
// node tag: with several in HILODB_URL, the one it moved to).
func (a *app) status() *response {
	n, _ := a.store.PendingCount()
	b, _ := json.Marshal(map[string]any{
		"following": a.following.Load(),
		"connected": a.db.Client().Connected(),
		"pending":   n,
		"node":      a.store.Clock().Node(),
		"server":    a.db.Client().URL(),
		"serverTag": a.db.Client().ServerTag(),
	})
	return jsonResponse(200, b)
}

// Close closes the replica.
func (a *app) Close() error {
	a.stopLive()
	<-a.liveDone
	if a.db.Client().Connected() {
		ctx, cancel := context.WithTimeout(context.Background(), closePush)
		_, _ = a.db.Replicator().Push(ctx) // what is left stays pending
		cancel()
	}
	return a.db.Close()
}
