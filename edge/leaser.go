package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/idgen"
)

// hangUpWait bounds how long a lease waits for its connection's closing
// handshake. The range is already leased by then; the wait only keeps the
// close inside the request that opened the socket.
const hangUpWait = 2 * time.Second

// errRequestGone is returned for a lease whose request ended before the
// lease could start.
var errRequestGone = errors.New("request ended before the lease")

// leaser is an idgen.RangeSource that dials the sync server for every lease
// and hangs up before it returns.
//
// workerd ties a socket to the request whose code opened it: writing to it
// from a later request fails with "Cannot perform I/O on behalf of a
// different request". A connection kept between requests would be dead for
// every request but the first, so each lease gets a short connection of its
// own inside the request that needs the range. That costs one round trip
// per range, never one per document; the ranges themselves stay resident in
// the HiLo generators.
//
// The node tag the server assigns on the first lease is sent back on every
// later one, so an isolate uses a single node tag for its lifetime.
//
// A leaser is safe for concurrent use.
type leaser struct {
	url  string
	opts client.Options

	// enterTurn, if set, is called before dialing and returns once the
	// goroutine runs in a JS turn of the request ctx belongs to, so the
	// socket belongs to the request that waits for the lease (see turns in
	// turn_js.go). It reports false if that request is gone.
	enterTurn func(ctx context.Context) bool

	mu     sync.Mutex
	node   string
	onNode func(node string)
}

var _ idgen.RangeSource = (*leaser)(nil)

// newLeaser returns a leaser for the sync server at url.
func newLeaser(url string, opts client.Options) *leaser {
	return &leaser{url: url, opts: opts, node: opts.Node}
}

// setOnNode sets a function called once with the node tag the server gives.
func (l *leaser) setOnNode(fn func(node string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.onNode = fn
}

// Node returns the node tag the server gave, empty before the first lease.
func (l *leaser) Node() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.node
}

// keepNode records the node tag of a hello reply. Leases that ran
// concurrently before any tag was known may each have been given one; the
// first is kept.
func (l *leaser) keepNode(node string) {
	l.mu.Lock()
	if l.node != "" || node == "" {
		l.mu.Unlock()
		return
	}
	l.node = node
	fn := l.onNode
	l.mu.Unlock()
	if fn != nil {
		fn(node)
	}
}

// NextRange dials the server, leases the next range for tag and hangs up.
func (l *leaser) NextRange(ctx context.Context, tag string, last idgen.Range) (idgen.Range, error) {
	if l.enterTurn != nil && !l.enterTurn(ctx) {
		return idgen.Range{}, fmt.Errorf("lease %s: %w", tag, errRequestGone)
	}
	opts := l.opts
	opts.Node = l.Node()
	opts.OnNode = l.keepNode
	c := client.New(l.url, opts)
	defer hangUp(c)
	return c.NextRange(ctx, tag, last)
}

// hangUp closes c, waiting at most hangUpWait for the closing handshake. In
// the worker the close event may never arrive once the request that opened
// the socket has ended, and the request must not wait for it.
func hangUp(c *client.Client) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Close() // the range is leased; a failed close loses nothing
	}()
	t := time.NewTimer(hangUpWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
