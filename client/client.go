package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/internal/wire"
	"github.com/tidwall/gjson"
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
var ErrNoReply = fmt.Errorf("%w: no reply in time", ErrDisconnected)

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

var (
	_ idgen.RangeSource   = (*Client)(nil)
	_ idgen.RangeReturner = (*Client)(nil)
)

// session is one live connection and its outstanding calls.
type session struct {
	conn    conn
	url     int // index in Client.urls
	mu      sync.Mutex
	pending map[int64]chan []byte
	done    chan struct{}
	err     error

	refusal  *wire.Error  // the server's reason for closing, if it gave one
	dead     atomic.Bool  // given up on (no reply, or a failed write); done follows
	lastRecv atomic.Int64 // unix nanoseconds of the last message received
	inflight atomic.Int64 // bytes of the requests sent and not yet answered
	up       atomic.Bool  // hello answered: OnStatus(true) was called
	// refreshing: a fresh token is on its way (refreshToken)
	refreshing atomic.Bool
	downOnce   sync.Once
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

// live reports whether s can carry a call: it was not given up on, and its
// reader has not ended. The reader wakes waiting calls before it forgets
// the session, so a caller woken by a cut connection may ask again before
// c.sess is cleared: ended is checked, not only c.sess.
func (s *session) live() bool {
	if s == nil || s.dead.Load() {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// setSession makes s the session in use; c.mu is held.
func (c *Client) setSession(s *session) {
	c.sess = s
	c.shownMu.Lock()
	c.shown = s
	c.shownMu.Unlock()
}

// connect returns the live session, dialing and saying hello if there is none.
func (c *Client) connect(ctx context.Context) (*session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if c.sess.live() {
		return c.sess, nil
	}
	c.setSession(nil)
	// Each server in turn, from the one in use, until one says hello.
	var errs []error
	start := int(c.cur.Load())
	for i := range c.urls {
		idx := (start + i) % len(c.urls)
		s, err := c.connectTo(ctx, idx)
		if err != nil && c.opts.TokenFunc != nil && isUnauthorized(err) && ctx.Err() == nil {
			// The token may have expired since it was made: once more,
			// with a fresh one.
			s, err = c.connectTo(ctx, idx)
		}
		if err == nil {
			c.cur.Store(int64(idx))
			return s, nil
		}
		var werr *wire.Error
		if errors.As(err, &werr) || ctx.Err() != nil {
			return nil, err // the server answered: another would say the same
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// connectTo dials c.urls[idx] and says hello; c.mu is held.
func (c *Client) connectTo(ctx context.Context, idx int) (*session, error) {
	url := c.urls[idx]
	if c.opts.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.RequestTimeout)
		defer cancel()
	}
	cn, err := dial(ctx, url, c.opts.MaxMessageBytes)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w: %w", url, ErrDisconnected, err)
	}
	s := &session{conn: cn, url: idx, pending: make(map[int64]chan []byte), done: make(chan struct{})}
	s.lastRecv.Store(time.Now().UnixNano())
	go c.readLoop(s)
	var reply wire.HelloReply
	token, err := c.token(ctx)
	if err == nil {
		id := c.nextID.Add(1)
		err = c.roundTrip(ctx, s, id, wire.Hello{ID: id, Op: wire.OpHello, DB: c.opts.Database, Token: token, Node: c.node}, &reply)
	}
	if err != nil {
		// In the background: the server may already have hung up.
		go cn.Close("hello failed")
		return nil, fmt.Errorf("hello: %w", err)
	}
	c.shownMu.Lock()
	c.serverTag, c.node, c.pipeline = reply.ServerTag, reply.Node, reply.Pipeline
	c.shownMu.Unlock()
	c.setSession(s)
	if c.opts.OnNode != nil {
		c.opts.OnNode(reply.Node)
	}
	s.up.Store(true)
	if c.opts.OnStatus != nil {
		c.opts.OnStatus(true)
	}
	if c.opts.Heartbeat > 0 {
		go c.heartbeat(s)
	}
	return s, nil
}

// pingBudget is the most bytes of requests awaiting their replies with
// which a heartbeat ping is still expected back within PingTimeout: a
// server answers in order, after reading (and, for some, storing) what
// came before the ping.
const pingBudget = 64 << 10

// heartbeat pings s whenever it received nothing for a Heartbeat (looking
// four times a Heartbeat), until it ends. A ping without a reply within
// PingTimeout, with nothing else received meanwhile and at most pingBudget
// bytes of requests before it, drops s.
func (c *Client) heartbeat(s *session) {
	t := time.NewTicker(max(c.opts.Heartbeat/4, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		if time.Since(time.Unix(0, s.lastRecv.Load())) < c.opts.Heartbeat {
			continue
		}
		// A server still reading or storing a large request answers the
		// ping after it: then only RequestTimeout (roundTrip) bounds it.
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if s.inflight.Load() <= pingBudget {
			ctx, cancel = context.WithTimeout(ctx, c.opts.PingTimeout)
		}
		sent := time.Now().UnixNano()
		id := c.nextID.Add(1)
		err := c.roundTrip(ctx, s, id, wire.Ping{ID: id, Op: wire.OpPing}, nil)
		cancel()
		if err == nil {
			continue
		}
		if errors.Is(err, context.DeadlineExceeded) && s.lastRecv.Load() < sent {
			c.drop(s)
		}
		if s.dead.Load() {
			return
		}
	}
}

// drop gives up on s, which stopped answering: later calls dial again, and
// its outstanding calls fail.
func (c *Client) drop(s *session) {
	if c.giveUp(s, "no reply") {
		// A server that stopped answering is tried last next time.
		c.cur.CompareAndSwap(int64(s.url), int64((s.url+1)%len(c.urls)))
	}
}

// giveUp marks s dead, reports it lost and closes it, once: it reports
// whether this call did.
func (c *Client) giveUp(s *session, reason string) bool {
	if s.dead.Swap(true) {
		return false
	}
	c.down(s)
	// In the background: closing waits for a handshake the peer won't do.
	go s.conn.Close(reason)
	return true
}

// down reports s lost, once, if it had been reported up.
func (c *Client) down(s *session) {
	s.downOnce.Do(func() {
		if s.up.Load() && c.opts.OnStatus != nil {
			c.opts.OnStatus(false)
		}
	})
}

func (c *Client) readLoop(s *session) {
	var err error
	for {
		var data []byte
		data, err = s.conn.ReadText(context.Background())
		if err != nil {
			break
		}
		s.lastRecv.Store(time.Now().UnixNano())
		if gjson.GetBytes(data, "id").Int() == 0 && gjson.GetBytes(data, "ok").Type == gjson.False {
			// The server says why it is about to close the connection
			// (forbidden_origin, idle_timeout, server_busy…): calls under
			// way fail with that instead of a bare disconnect.
			var er wire.ErrorReply
			if json.Unmarshal(data, &er) == nil && er.Error != nil {
				s.mu.Lock()
				s.refusal = er.Error
				s.mu.Unlock()
			}
			continue
		}
		idv := gjson.GetBytes(data, "id")
		if !idv.Exists() && gjson.GetBytes(data, "op").String() == wire.OpTokenExpiring {
			go c.refreshToken(s)
			continue
		}
		if !idv.Exists() {
			// A server-initiated message (live changes): it has an op, no id.
			c.dispatchServerMessage(data)
			continue
		}
		id := idv.Int()
		s.mu.Lock()
		ch := s.pending[id]
		delete(s.pending, id)
		s.mu.Unlock()
		if ch != nil {
			ch <- data
		}
	}
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	// Wake waiters first: connect may hold c.mu while it waits for hello.
	close(s.done)
	c.mu.Lock()
	if c.sess == s {
		c.setSession(nil)
	}
	c.mu.Unlock()
	c.down(s)
}

// roundTrip sends req (whose id is id) on s and decodes the reply into out.
// readReply turns a reply into out, or into the error it carries.
func readReply(data []byte, out any) error {
	if !gjson.GetBytes(data, "ok").Bool() {
		var er wire.ErrorReply
		if err := json.Unmarshal(data, &er); err != nil || er.Error == nil {
			return fmt.Errorf("malformed error reply: %s", data)
		}
		return er.Error
	}
	if out == nil {
		return nil
	}
	if d, ok := out.(replyDecoder); ok {
		if err := d.decodeReply(data); err != nil {
			return fmt.Errorf("decode reply: %w", err)
		}
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode reply: %w", err)
	}
	return nil
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

// NextRange leases the next HiLo range for tag; last is the previous range
// (zero for the first), which sizes the next one.
func (c *Client) NextRange(ctx context.Context, tag string, last idgen.Range) (idgen.Range, error) {
	return c.NextRangeFor(ctx, tag, last, 0)
}

// NextRangeFor leases the next HiLo range for tag holding at least want
// numbers (up to the server's largest range, 1,048,576), or sized as
// NextRange when want is 0. It implements idgen.SizedRangeSource.
func (c *Client) NextRangeFor(ctx context.Context, tag string, last idgen.Range, want int64) (idgen.Range, error) {
	var at string
	if !last.LastRangeAt.IsZero() {
		at = wire.FormatRangeTime(last.LastRangeAt)
	}
	var reply wire.HiloNextReply
	err := c.call(ctx, func(id int64) any {
		return wire.HiloNext{ID: id, Op: wire.OpHiloNext, Tag: tag, LastSize: last.LastSize, LastMax: last.High, LastRangeAt: at, Want: max(want, 0)}
	}, &reply)
	if err != nil {
		return idgen.Range{}, fmt.Errorf("hilo.next %s: %w", tag, err)
	}
	t, _ := wire.ParseRangeTime(reply.LastRangeAt)
	return idgen.Range{Prefix: reply.Prefix, Low: reply.Low, High: reply.High, LastSize: reply.LastSize, ServerTag: reply.ServerTag, LastRangeAt: t}, nil
}

// ReturnRange gives back the numbers after last of the range ending at end.
func (c *Client) ReturnRange(ctx context.Context, tag string, end, last int64) error {
	err := c.call(ctx, func(id int64) any {
		return wire.HiloReturn{ID: id, Op: wire.OpHiloReturn, Tag: tag, End: end, Last: last}
	}, nil)
	if err != nil {
		return fmt.Errorf("hilo.return %s: %w", tag, err)
	}
	return nil
}

// NextIdentity returns the next value of the cluster-wide identity name.
func (c *Client) NextIdentity(ctx context.Context, name string) (int64, error) {
	var reply wire.IdentityReply
	err := c.call(ctx, func(id int64) any {
		return wire.IdentityNext{ID: id, Op: wire.OpIdentityNext, Name: name}
	}, &reply)
	if err != nil {
		return 0, fmt.Errorf("identity.next %s: %w", name, err)
	}
	return reply.Value, nil
}

// NextIdentities allocates the next value of each name in one server
// transaction and returns them in the order of names; a name given several
// times gets successive values. The server bounds how many names one call
// may carry (batch_too_big).
func (c *Client) NextIdentities(ctx context.Context, names []string) ([]int64, error) {
	var reply wire.IdentityBatchReply
	err := c.call(ctx, func(id int64) any {
		return wire.IdentityNextBatch{ID: id, Op: wire.OpIdentityNextBatch, Names: names}
	}, &reply)
	if err != nil {
		return nil, fmt.Errorf("identity.nextBatch: %w", err)
	}
	if len(reply.Values) != len(names) {
		return nil, fmt.Errorf("identity.nextBatch: got %d values for %d names", len(reply.Values), len(names))
	}
	return reply.Values, nil
}

// Ping asks the server for an empty reply, which keeps the connection from
// being closed as idle.
func (c *Client) Ping(ctx context.Context) error {
	if err := c.call(ctx, func(id int64) any { return wire.Ping{ID: id, Op: wire.OpPing} }, nil); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// SeedIdentity sets identity name to value: without force only upwards (the
// current, higher value is returned otherwise); with force exactly.
func (c *Client) SeedIdentity(ctx context.Context, name string, value int64, force bool) (int64, error) {
	var reply wire.IdentityReply
	err := c.call(ctx, func(id int64) any {
		return wire.IdentitySeed{ID: id, Op: wire.OpIdentitySeed, Name: name, Value: value, Force: force}
	}, &reply)
	if err != nil {
		return 0, fmt.Errorf("identity.seed %s: %w", name, err)
	}
	return reply.Value, nil
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
