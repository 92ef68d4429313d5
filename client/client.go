package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hilodb/hilodb/internal/wire"
)

// Error is an error reply from the server: a stable code word, a number and
// a message (docs/protocol.md lists the codes).
type Error = wire.Error

// ErrDisconnected is returned for calls whose connection was lost before the
// reply arrived. The call may or may not have taken effect on the server.
var ErrDisconnected = errors.New("disconnected from sync server")

// ErrClosed is returned by calls after Close.
var ErrClosed = errors.New("sync client closed")

// ErrNoReply is returned for calls the server did not answer within
// Options.RequestTimeout. It wraps ErrDisconnected: the connection is dropped,
// and the call may or may not have taken effect.
var ErrNoReply error = noReply{}

// noReply is ErrNoReply: ErrDisconnected and what happened, as
// fmt.Errorf("%w: …") would wrap it, made without fmt, whose formatting
// code would otherwise be compiled and run at every program's start (V8
// compiles WebAssembly functions on their first call: an edge worker's
// first answer waits for it).
type noReply struct{}

func (noReply) Error() string { return ErrDisconnected.Error() + ": no reply in time" }
func (noReply) Unwrap() error { return ErrDisconnected }

// Options configure a Client.
type Options struct {
	// Database is the name of the database on the server.
	Database string
	// URLs are further servers of the same cluster (sync servers over one
	// etcd cluster, docs/operations.md): when the server in use cannot be
	// reached or stops answering, the client dials the next one, in turn.
	// Every server of a cluster hands out numbers from one state and keeps
	// one change sequence, so ids, checkpoints and preconditions hold
	// across the move.
	URLs []string
	// Token authorizes the client for Database.
	Token string
	// TokenFunc, if set, gives the token instead of Token, for signed
	// tokens that expire: it is called at each connect, again when the
	// server refuses a hello as unauthorized, and when the server says the
	// connection's token is about to expire, in which case the fresh token
	// goes to the live connection (an auth op): no reconnect, no call
	// under way lost. It must not call back into the client.
	TokenFunc func(ctx context.Context) (string, error)
	// Node is the node tag this client was given before; empty to be given
	// one on first connect.
	Node string
	// OnNode, if set, is called with the node tag once the server confirms
	// or assigns it, so the caller can keep it for the next session.
	OnNode func(node string)
	// MaxMessageBytes bounds one message read from the server. Default 64 MiB.
	MaxMessageBytes int64
	// RequestTimeout bounds the wait for a reply. A server that does not
	// answer within it (asleep, or behind a dead network that keeps the
	// socket open) fails the call with ErrNoReply and the connection is
	// dropped; the next call dials again. Default 15 seconds; negative:
	// wait as long as the call's context allows.
	RequestTimeout time.Duration
	// Heartbeat is how long a connection may receive nothing before it
	// sends a ping, so a dead one is noticed (and dropped) even when no
	// call is made, and a quiet one is kept open. A ping that gets no
	// reply within PingTimeout, while nothing else arrived either, drops
	// the connection: within 1.25 Heartbeat plus PingTimeout of the
	// network's end (1.35 seconds by default), also while small calls wait
	// for their replies. Behind large requests (64 KiB or more awaiting
	// replies) a ping is bounded by RequestTimeout instead, since the server
	// answers it only after them. Default 600 ms; negative: never.
	Heartbeat time.Duration
	// PingTimeout bounds the wait for a heartbeat ping's reply. Default:
	// Heartbeat, at most RequestTimeout.
	PingTimeout time.Duration
	// OnStatus, if set, is called with true once a connection is up (hello
	// answered) and with false once it is lost or dropped. It must not call
	// back into the client.
	OnStatus func(connected bool)
}

// Client talks to a sync server over one websocket, redialing when the
// connection is lost. It implements idgen.RangeSource.
//
// # Concurrency
//
// A Client is safe for concurrent use; calls are multiplexed on one
// connection by request id.
type Client struct {
	url  string   // the server dialed first
	urls []string // url, then Options.URLs
	cur  atomic.Int64
	opts Options

	nextID atomic.Int64

	mu     sync.Mutex
	sess   *session
	closed bool
	sub    *subscriber

	// shownMu guards what ServerTag, Node, PipelinesPushes and Connected
	// read. connect holds mu across a dial and a hello, which a stalled
	// server makes last RequestTimeout; these answer at once meanwhile.
	// Writers hold mu too.
	shownMu   sync.Mutex
	shown     *session // c.sess
	serverTag string
	node      string
	pipeline  bool // the server in use takes pushes pipelined (wire.HelloReply)
}

// Dial connects to the server at url (ws://host/v1/sync) and says hello.
func Dial(ctx context.Context, url string, opts Options) (*Client, error) {
	c := New(url, opts)
	if _, err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// New returns a client that connects on its first call, so it can be made
// while offline.
func New(url string, opts Options) *Client {
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = 64 << 20
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = 15 * time.Second
	}
	if opts.Heartbeat == 0 {
		opts.Heartbeat = 600 * time.Millisecond
	}
	if opts.PingTimeout <= 0 {
		opts.PingTimeout = max(opts.Heartbeat, 0)
	}
	if opts.RequestTimeout > 0 && opts.PingTimeout > opts.RequestTimeout {
		opts.PingTimeout = opts.RequestTimeout
	}
	urls := append([]string{url}, opts.URLs...)
	return &Client{url: url, urls: urls, opts: opts, node: opts.Node}
}

// URL returns the address of the server in use (or to be dialed next).
func (c *Client) URL() string {
	return c.urls[int(c.cur.Load())%len(c.urls)]
}

// ServerTag returns the server's node tag, empty before the first connect.
func (c *Client) ServerTag() string {
	c.shownMu.Lock()
	defer c.shownMu.Unlock()
	return c.serverTag
}

// PipelinesPushes reports whether the server last connected to takes a
// push sent before the previous one is answered without losing the
// checkpoint's chain (see wire.HelloReply.Pipeline); false before the first
// connect.
func (c *Client) PipelinesPushes() bool {
	c.shownMu.Lock()
	defer c.shownMu.Unlock()
	return c.pipeline
}

// Node returns this client's node tag, empty before the first connect unless
// given in Options.
func (c *Client) Node() string {
	c.shownMu.Lock()
	defer c.shownMu.Unlock()
	return c.node
}

// Connected reports whether a connection is up now.
func (c *Client) Connected() bool {
	c.shownMu.Lock()
	defer c.shownMu.Unlock()
	return c.shown.live()
}

func (c *Client) roundTrip(ctx context.Context, s *session, id int64, req, out any) error {
	var b []byte
	if raw, ok := req.(rawFrame); ok {
		b = raw
	} else {
		var err error
		if b, err = json.Marshal(req); err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
	}
	ch := make(chan []byte, 1)
	s.mu.Lock()
	s.pending[id] = ch
	s.mu.Unlock()
	s.inflight.Add(int64(len(b)))
	defer func() {
		s.inflight.Add(-int64(len(b)))
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}()
	var timeout <-chan time.Time
	if c.opts.RequestTimeout > 0 {
		t := time.NewTimer(c.opts.RequestTimeout)
		defer t.Stop()
		timeout = t.C
	}
	wctx := ctx
	if c.opts.RequestTimeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, c.opts.RequestTimeout)
		defer cancel()
	}
	if err := s.conn.WriteText(wctx, b); err != nil {
		if ctx.Err() == nil && wctx.Err() != nil {
			c.drop(s)
			return ErrNoReply
		}
		if ctx.Err() == nil {
			// The connection failed: the next call dials again instead of
			// writing to it, whether or not the reader has noticed yet.
			c.giveUp(s, "write failed")
		}
		return fmt.Errorf("send: %w: %w: %w", ErrDisconnected, errNotSent, err)
	}
	select {
	case data := <-ch:
		return readReply(data, out)
	case <-s.done:
		// A reply that came in before the connection ended (a refusal
		// followed by the server's close) is the answer: both cases can be
		// ready at once, and select picks either.
		select {
		case data := <-ch:
			return readReply(data, out)
		default:
		}
		s.mu.Lock()
		refusal := s.refusal
		s.mu.Unlock()
		if refusal != nil {
			return fmt.Errorf("%w: %w", ErrDisconnected, refusal)
		}
		return ErrDisconnected
	case <-timeout:
		c.drop(s)
		return ErrNoReply
	case <-ctx.Done():
		return ctx.Err()
	}
}

// rawFrame is a request already encoded as JSON (hot paths build their
// frames by hand instead of through encoding/json).
type rawFrame []byte

// replyDecoder is a reply that decodes itself (with gjson, on hot paths).
type replyDecoder interface {
	decodeReply(data []byte) error
}

// errNotSent marks a request whose write failed: a server acts on a
// message only once all of it has arrived, so it did not act on this one.
var errNotSent = errors.New("request not sent")

// call connects if needed and performs one request. build gets the request
// id. A request whose write failed (the connection had ended, and the
// reader had not noticed yet: a sleeping laptop, a cut proxy) goes once
// more on a new connection: nothing of it reached the server.
func (c *Client) call(ctx context.Context, build func(id int64) any, out any) error {
	for attempt := 0; ; attempt++ {
		s, err := c.connect(ctx)
		if err != nil {
			return err
		}
		id := c.nextID.Add(1)
		err = c.roundTrip(ctx, s, id, build(id), out)
		if attempt == 0 && errors.Is(err, errNotSent) && ctx.Err() == nil {
			continue
		}
		return err
	}
}

// Ping asks the server for an empty reply, which keeps the connection from
// being closed as idle.
func (c *Client) Ping(ctx context.Context) error {
	if err := c.call(ctx, func(id int64) any { return wire.Ping{ID: id, Op: wire.OpPing} }, nil); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// Close closes the connection. Calls after Close fail with ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	s := c.sess
	c.setSession(nil)
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	err := s.conn.Close("")
	<-s.done
	if err != nil {
		return fmt.Errorf("close: %w", err)
	}
	return nil
}
