package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/idgen"
)

// hangUpWait bounds how long a request waits for its connection's closing
// handshake. Everything the request asked is answered by then; the wait only
// keeps the close inside the request that opened the socket.
const hangUpWait = 2 * time.Second

// errRequestGone is returned for a call to the sync server whose request
// ended before the call could start.
var errRequestGone = errors.New("request ended before the call to the sync server")

// remote is the sync server as the worker reaches it: the idgen.RangeSource
// of the HiLo generators and the origin of the document cache (push, get).
//
// workerd ties a socket to the request whose code opened it: writing to it
// from a later request fails with "Cannot perform I/O on behalf of a
// different request". A connection kept between requests would be dead for
// every request but the first, so remote keeps none. Each request gets a
// link (see scope): a connection dialed on the request's first call to the
// server, shared by every call the request makes (the lease of a range,
// then the push of the document that used it) and closed before the
// request answers. A call without a link in its context dials a connection
// of its own and hangs up after it.
//
// The node tag the server assigns on the first hello is sent back on every
// later one, so an isolate uses a single node tag for its lifetime. Until
// it has one, one connection at a time asks for it and the others wait, so
// a burst of first requests is given one tag, not one each.
//
// A remote is safe for concurrent use.
type remote struct {
	url  string
	opts client.Options

	// enterTurn, if set, is called before every call to the server and
	// returns once the goroutine runs in a JS turn of the request ctx
	// belongs to, so the request's socket is opened and used only in its
	// own turns (see turns in turn_js.go). It reports false if that
	// request is gone.
	enterTurn func(ctx context.Context) bool

	mu     sync.Mutex
	node   string
	asking chan struct{} // closed when the hello asking for a node tag is over; nil if none is
	onNode func(node string)
}

var (
	_ idgen.RangeSource = (*remote)(nil)
	_ origin            = (*remote)(nil)
)

// newRemote returns a remote for the sync server at url.
func newRemote(url string, opts client.Options) *remote {
	return &remote{url: url, opts: opts, node: opts.Node}
}

// setOnNode sets a function called once with the node tag the server gives.
func (r *remote) setOnNode(fn func(node string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onNode = fn
}

// Node returns the node tag the server gave, empty before the first hello.
func (r *remote) Node() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.node
}

// keepNode records the node tag of a hello reply. Should two hellos have
// been given a tag each, the first is kept.
func (r *remote) keepNode(node string) {
	r.mu.Lock()
	if r.node != "" || node == "" {
		r.mu.Unlock()
		return
	}
	r.node = node
	fn := r.onNode
	r.mu.Unlock()
	if fn != nil {
		fn(node)
	}
}

// newClient returns an undialed client that says hello with the isolate's
// node tag. Without a tag yet, it waits while another connection is asking
// for one, or becomes the one asking; helloDone must then be called once
// the client's first call is over, whatever its outcome.
func (r *remote) newClient(ctx context.Context) (c *client.Client, helloDone func(), err error) {
	for {
		r.mu.Lock()
		node, asking := r.node, r.asking
		if node == "" && asking == nil {
			ch := make(chan struct{})
			r.asking = ch
			helloDone = sync.OnceFunc(func() {
				r.mu.Lock()
				r.asking = nil
				r.mu.Unlock()
				close(ch)
			})
		}
		r.mu.Unlock()
		if node != "" || helloDone != nil {
			break
		}
		select {
		case <-asking:
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("wait for the node tag: %w", ctx.Err())
		}
	}
	if helloDone == nil {
		helloDone = func() {}
	}
	opts := r.opts
	opts.Node = r.Node()
	opts.OnNode = r.keepNode
	return client.New(r.url, opts), helloDone, nil
}

// linkKey is the context key of a request's link.
type linkKey struct{}

// link is one request's connection to the sync server, dialed on the first
// call and closed by scope. A link is safe for concurrent use.
type link struct {
	r  *remote
	mu sync.Mutex
	c  *client.Client
}

// client returns the link's client, made on first use.
func (l *link) client(ctx context.Context) (*client.Client, func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c != nil {
		return l.c, func() {}, nil
	}
	c, helloDone, err := l.r.newClient(ctx)
	if err != nil {
		return nil, nil, err
	}
	l.c = c
	return c, helloDone, nil
}

// close hangs up, in the request's own turn: the goroutine may last have
// been woken by another request (a lock it waited for, released there).
func (l *link) close(ctx context.Context) {
	l.mu.Lock()
	c := l.c
	l.c = nil
	l.mu.Unlock()
	if c == nil {
		return
	}
	if !c.Connected() {
		_ = c.Close() // no socket: nothing to hang up
		return
	}
	if l.r.enterTurn != nil && !l.r.enterTurn(ctx) {
		return // the request is gone, and its socket with it
	}
	hangUp(c)
}

// scope gives every request through h a link to the sync server, closed
// when h returns. A nil remote adds nothing.
func (r *remote) scope(h http.Handler) http.Handler {
	if r == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		l := &link{r: r}
		ctx := context.WithValue(req.Context(), linkKey{}, l)
		defer l.close(ctx)
		h.ServeHTTP(w, req.WithContext(ctx))
	})
}

// call runs fn with the connection of ctx's request, or a connection of its
// own without one, during a turn of that request.
func (r *remote) call(ctx context.Context, op string, fn func(c *client.Client) error) error {
	l, _ := ctx.Value(linkKey{}).(*link)
	var (
		c         *client.Client
		helloDone func()
		err       error
	)
	if l != nil && l.r == r {
		c, helloDone, err = l.client(ctx)
	} else {
		c, helloDone, err = r.newClient(ctx)
		if err == nil {
			defer hangUp(c)
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	defer helloDone()
	// Enter the turn after any wait for the node tag: that wait ends in
	// the turn of the request that asked for it.
	if r.enterTurn != nil && !r.enterTurn(ctx) {
		return fmt.Errorf("%s: %w", op, errRequestGone)
	}
	return fn(c)
}

// NextRange leases the next range for tag.
func (r *remote) NextRange(ctx context.Context, tag string, last idgen.Range) (idgen.Range, error) {
	var rg idgen.Range
	err := r.call(ctx, "lease "+tag, func(c *client.Client) error {
		var err error
		rg, err = c.NextRange(ctx, tag, last)
		return err
	})
	return rg, err
}

// Push sends writes to the server.
func (r *remote) Push(ctx context.Context, items []client.PushItem) (client.PushOutcome, error) {
	var out client.PushOutcome
	err := r.call(ctx, "push", func(c *client.Client) error {
		var err error
		out, err = c.Push(ctx, items)
		return err
	})
	return out, err
}

// Get reads the server's current versions of documents.
func (r *remote) Get(ctx context.Context, ids []string) ([]client.Change, error) {
	var chs []client.Change
	err := r.call(ctx, "get", func(c *client.Client) error {
		var err error
		chs, err = c.Get(ctx, ids)
		return err
	})
	return chs, err
}

// hangUp closes c, waiting at most hangUpWait for the closing handshake. In
// the worker the close event may never arrive once the request that opened
// the socket has ended, and the request must not wait for it.
func hangUp(c *client.Client) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Close() // every call is answered; a failed close loses nothing
	}()
	t := time.NewTimer(hangUpWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
