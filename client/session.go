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
	"github.com/tidwall/gjson"
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
