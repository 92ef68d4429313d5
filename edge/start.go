package main

import (
	"context"
	"errors"
	"sync"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/database"
	"github.com/hilodb/hilodb/errcode"
)

// starter opens an object's replica once its first request has been
// answered. Loading the store puts every document into buntdb, about 20
// µs each on a program that has just started, more than the program's own
// start for a few thousand documents; a first read need not wait for it.
// It is answered from the bytes the object's storage held (database.Stored
// read by a core.Reader) as the replica would answer it once loaded: from
// what it holds, "stale", since it does not follow the server's feed yet
// (app.quick, the start window). Any other first request, and a read that
// asks to be fresh (no-cache), waits for the load. The load returns to the
// event loop now and then (doStorage.LoadPause): a read that came
// meanwhile is answered from the stored bytes too.
//
// # Concurrency
//
// A starter is safe for concurrent use.
type starter struct {
	cfg    config
	st     database.Storage
	reader *core.Reader // nil: the stored bytes are read only by loading them
	// after runs fn once the answer under way has gone out: under workerd
	// the Go program returns to the event loop only when every goroutine
	// waits, so a load that could start at once would come before that
	// answer, and so would a Go timer that expired meanwhile.
	after  func(fn func())
	failed func(err error) // called if the replica fails to open

	beginOnce sync.Once
	needOnce  sync.Once
	needed    chan struct{} // closed by need: load now
	ready     chan struct{} // closed once app or err is set
	app       *app
	err       error
}

// newStarter returns the starter of the replica of cfg.Database kept in
// st, whose Load will hand over snapshot and log (nil when st has not read
// them yet: then every request waits for the load). The load begins once
// need is called, or after begin. after runs a function once the answer
// under way has gone out (nil: in a goroutine); failed, if not nil, is
// told if the replica fails to open.
func newStarter(cfg config, st database.Storage, snapshot, log []byte, after func(fn func()), failed func(err error)) *starter {
	if after == nil {
		after = func(fn func()) { go fn() }
	}
	s := &starter{cfg: cfg, st: st, after: after, failed: failed, needed: make(chan struct{}), ready: make(chan struct{})}
	if snapshot != nil || log != nil {
		// A snapshot that cannot be read so (damaged, or of format 1)
		// leaves every request to wait for the load, which fails the
		// same way or reads it.
		if stored, err := database.ReadStored(snapshot, log); err == nil {
			s.reader = core.NewReader(core.Options{}, stored.Get)
		}
	}
	go s.run()
	return s
}

func (s *starter) run() {
	<-s.needed
	s.app, s.err = openApp(context.Background(), s.cfg, s.st)
	if s.app != nil {
		s.app.begin()
	}
	if s.err != nil && s.failed != nil {
		s.failed(s.err)
	}
	close(s.ready)
}

// begin lets the load start once the answer under way has gone out.
func (s *starter) begin() { s.beginOnce.Do(func() { s.after(s.need) }) }

// need starts the load now: a request waits for it.
func (s *starter) need() { s.needOnce.Do(func() { close(s.needed) }) }

// opened returns the replica, or why it failed to open; done is false
// while it is still loading.
func (s *starter) opened() (a *app, err error, done bool) {
	select {
	case <-s.ready:
		return s.app, s.err, true
	default:
		return nil, nil, false
	}
}

// wait starts the load if it has not started and returns the replica
// once it is open.
func (s *starter) wait(ctx context.Context) (*app, error) {
	s.need()
	select {
	case <-s.ready:
		return s.app, s.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// quick answers r before the store is loaded if it is a read the replica
// would answer at once in its start window; ok is false otherwise.
func (s *starter) quick(r *request) (*response, bool) {
	if s.reader == nil || r.method != "GET" && r.method != "HEAD" || r.noCache {
		return nil, false
	}
	rt, ok := parseRoute(r.method, r.path)
	if !ok || rt.kind != "doc" && !(rt.kind == "arango" && rt.key != "") {
		return nil, false
	}
	doc, err := readDoc(s.reader, rt)
	if err != nil && !isDocError(err) {
		return nil, false // the load reports what is wrong with the bytes
	}
	res := docResponse(r, rt, doc, err)
	res.set(freshHeader, "stale")
	return res, true
}

// isDocError reports whether err is a document's error (not found, an
// illegal key), which the loaded store answers the same, rather than a
// failure to read the stored bytes.
func isDocError(err error) bool {
	var e *core.Error
	return errors.As(err, &e)
}

// openFailure answers a request when the replica failed to open.
func openFailure(err error) *response {
	return errorResponse(errcode.Internal, "open the replica: "+err.Error())
}
