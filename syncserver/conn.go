package syncserver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/tidwall/gjson"

	"github.com/hilodb/hilodb/internal/wire"
	"github.com/hilodb/hilodb/syncserver/storage"
)

// opHandler handles one request of its op on connection c. id is the
// request's id, data the whole request frame (valid JSON, an object). It
// returns the reply to send (marshaled as JSON) or an error; a *protoError
// reaches the client as it is, any other error as "internal". Handlers run on
// the connection's goroutine, one request at a time, so they may read and
// change c's per-connection state (c.db, c.node) without locking.
type opHandler func(c *conn, ctx context.Context, id int64, data []byte) (reply any, err error)

// opHandlers routes requests on their op; see registerOp.
var opHandlers = map[string]opHandler{}

// registerOp adds the handler of op. It is called from init functions (the
// core ops in ops.go; other files register their own) and panics on a
// duplicate, which is a programming error.
func registerOp(op string, h opHandler) {
	if _, dup := opHandlers[op]; dup {
		panic("syncserver: op " + op + " registered twice")
	}
	opHandlers[op] = h
}

// wsConn is the part of a websocket connection a conn uses
// (*websocket.Conn; tests substitute their own).
type wsConn interface {
	Reader(ctx context.Context) (websocket.MessageType, io.Reader, error)
	SetReadLimit(n int64)
	Write(ctx context.Context, typ websocket.MessageType, p []byte) error
	Close(code websocket.StatusCode, reason string) error
	CloseNow() error
}

var _ wsConn = (*websocket.Conn)(nil)

// conn is one websocket client. Requests are handled in order of arrival.
type conn struct {
	srv      *Server
	ws       wsConn
	remote   string
	loopback bool
	since    time.Time

	requests   atomic.Int64
	lastActive atomic.Int64 // unix nanoseconds of the last frame received

	// db and node are set by hello. The connection's goroutine reads them
	// freely; writes happen under srv.connsMu so the dashboard can read them.
	db   string
	node string
	acc  access // what hello's (or the last auth's) token may do

	authGen   atomic.Int64    // counts the tokens armed (watchExpiry)
	expTimers []*time.Timer   // the armed token's warning and close, under srv.connsMu
	baseCtx   context.Context // the connection's context, for messages from timers

	tokens   float64 // rate-limit bucket
	tokensAt time.Time

	closing    bool // a refusal closed the connection
	subscribed bool // a subscribe started the live stream

	helloDone atomic.Bool      // hello succeeded
	held      int64            // bytes of Server.buffered this connection holds
	leased    map[string]int64 // HiLo tag → end of the latest range leased on this connection

	closersMu sync.Mutex
	closers   []func()

	// queued says the store queues transactions (storage.Queuer): a push is
	// then answered by a goroutine of its own once durable, while the
	// connection reads and checks the next push (answerLater).
	queued bool
	// inFlight are the done channels of the pushes read and not yet
	// answered, oldest first; only the connection's goroutine touches it.
	inFlight []chan struct{}
}

// maxPushesInFlight bounds the pushes one connection has read and not yet
// answered: one committing and the next checked and queued behind it, as a
// client that pipelines two at a time sends them. A third is read once the
// first is answered.
const maxPushesInFlight = 2

func newConn(s *Server, ws wsConn, r *http.Request) *conn {
	now := time.Now()
	c := &conn{srv: s, ws: ws, remote: r.RemoteAddr, loopback: fromLoopback(r), since: now,
		tokens: float64(s.cfg.RateBurst), tokensAt: now}
	_, c.queued = s.store.(storage.Queuer)
	c.lastActive.Store(now.UnixNano())
	return c
}

// onClose registers fn to run when the connection ends (to drop a
// subscription, say). Functions run in reverse order of registration, on the
// connection's goroutine, before the Server's Close returns.
func (c *conn) onClose(fn func()) {
	c.closersMu.Lock()
	c.closers = append(c.closers, fn)
	c.closersMu.Unlock()
}

func (c *conn) runClosers() {
	c.closersMu.Lock()
	fns := c.closers
	c.closers = nil
	c.closersMu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

func (c *conn) serve(ctx context.Context) {
	c.baseCtx = ctx
	defer c.ws.CloseNow()
	defer c.runClosers()
	if idle := c.srv.cfg.IdleTimeout; idle > 0 {
		stop := make(chan struct{})
		done := make(chan struct{})
		if !c.srv.spawn(func(ctx context.Context) { c.watchIdle(ctx, idle, stop, done) }) {
			return // the server is closing
		}
		c.onClose(func() { close(stop); <-done })
	}
	hello := time.AfterFunc(c.srv.cfg.HelloTimeout, func() { c.helloExpired(ctx) })
	defer hello.Stop()
	defer c.release()
	defer c.drain() // the pushes in flight are answered (or fail to be) first
	for {
		typ, data, err := c.read(ctx)
		if err != nil {
			switch {
			case errors.Is(err, errBusy):
				c.srv.log.Warn("refused: server holds its most buffered bytes", "remote", c.remote, "limit", c.srv.cfg.MaxBufferedBytes)
				c.refuse(ctx, 0, &protoError{code: wire.CodeServerBusy, num: wire.NumServerBusy,
					msg: "the server is holding as many incoming bytes as it allows; try again later", close: websocket.StatusTryAgainLater})
			case errors.Is(err, websocket.ErrMessageTooBig) || websocket.CloseStatus(err) == websocket.StatusMessageTooBig:
				c.srv.metrics.countError(wire.CodeTooBig)
				c.srv.log.Warn("refused: message too big", "remote", c.remote, "limit", c.readLimit())
				c.ws.Close(websocket.StatusMessageTooBig, "message too big")
			}
			return
		}
		c.lastActive.Store(time.Now().UnixNano())
		c.requests.Add(1)
		c.srv.metrics.requests.Add(1)
		if !c.allow(time.Now()) {
			c.replyError(ctx, requestID(data), &protoError{code: wire.CodeRateLimited, num: wire.NumRateLimited,
				msg: "too many requests on this connection; slow down"})
			continue
		}
		if pe := c.allowSubject(); pe != nil {
			c.replyError(ctx, requestID(data), pe)
			continue
		}
		if typ != websocket.MessageText {
			c.replyError(ctx, 0, &protoError{code: wire.CodeBadRequest, num: wire.NumBadRequest, msg: "binary frames are not accepted; send JSON text"})
			continue
		}
		c.handle(ctx, data)
		c.release()
		if c.closing {
			return
		}
	}
}

// errBusy ends a read that would take the server past
// Config.MaxBufferedBytes.
var errBusy = errors.New("server holds its most buffered bytes")

// read reads one message into a buffer whose every byte is first taken from
// the server's budget of buffered bytes (c.release gives them back), so
// connections together never make the server hold more than the budget,
// partial messages included.
func (c *conn) read(ctx context.Context) (websocket.MessageType, []byte, error) {
	typ, r, err := c.ws.Reader(ctx)
	if err != nil {
		return 0, nil, err
	}
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			grow := max(int64(cap(buf)), 512)
			if !c.srv.buffered.take(grow) {
				return typ, nil, errBusy
			}
			c.held += grow
			nb := make([]byte, len(buf), int64(cap(buf))+grow)
			copy(nb, buf)
			buf = nb
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return typ, buf, nil
		}
		if err != nil {
			return typ, nil, err
		}
	}
}

// release gives back the buffered bytes the connection holds.
func (c *conn) release() {
	if c.held > 0 {
		c.srv.buffered.give(c.held)
		c.held = 0
	}
}

// readLimit is the largest message accepted now: small until hello.
func (c *conn) readLimit() int64 {
	if c.helloDone.Load() {
		return c.srv.cfg.MaxMessageBytes
	}
	return helloReadLimit
}

// helloExpired closes the connection, with a hello_timeout error first,
// unless hello has succeeded.
func (c *conn) helloExpired(ctx context.Context) {
	if c.helloDone.Load() {
		return
	}
	c.srv.metrics.countError(wire.CodeHelloTimeout)
	c.srv.log.Debug("closing connection that sent no hello", "remote", c.remote)
	c.send(ctx, wire.ErrorReply{ID: 0, OK: false, Error: &wire.Error{Code: wire.CodeHelloTimeout, Num: wire.NumHelloTimeout,
		Message: "no hello within " + c.srv.cfg.HelloTimeout.String() + "; closing"}})
	c.ws.Close(websocket.StatusPolicyViolation, wire.CodeHelloTimeout)
}

// budget is a count of bytes that may not pass a limit.
type budget struct {
	limit int64
	used  atomic.Int64
}

// take reserves n bytes, or reports false when that would pass the limit.
func (b *budget) take(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

func (b *budget) give(n int64) { b.used.Add(-n) }

// watchIdle closes the connection, with an idle_timeout error first, once
// nothing arrived for idle. It returns when stop is closed.
func (c *conn) watchIdle(ctx context.Context, idle time.Duration, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTimer(idle)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		left := idle - time.Since(time.Unix(0, c.lastActive.Load()))
		if left > 0 {
			t.Reset(left)
			continue
		}
		c.srv.log.Debug("closing idle connection", "remote", c.remote)
		// Not replyError: this goroutine is not the connection's.
		c.sendError(ctx, 0, &protoError{code: wire.CodeIdleTimeout, num: wire.NumIdleTimeout, msg: "connection idle for " + idle.String() + "; closing (send ping to stay connected)"})
		c.ws.Close(websocket.StatusGoingAway, "idle timeout")
		<-stop
		return
	}
}

// allow takes one token from the connection's rate-limit bucket.
func (c *conn) allow(now time.Time) bool {
	rate := c.srv.cfg.RateLimit
	if rate < 0 {
		return true
	}
	c.tokens = min(float64(c.srv.cfg.RateBurst), c.tokens+now.Sub(c.tokensAt).Seconds()*rate)
	c.tokensAt = now
	if c.tokens < 1 {
		return false
	}
	c.tokens--
	return true
}

// requestID is the id of a request, or 0 when it has no usable one.
func requestID(data []byte) int64 {
	v := gjson.GetBytes(data, "id")
	if v.Type != gjson.Number || v.Num < 0 || v.Num != float64(v.Int()) {
		return 0
	}
	return v.Int()
}

// handle routes one message on its op.
func (c *conn) handle(ctx context.Context, data []byte) {
	// Check the depth before anything recursive looks at the frame.
	if !depthWithin(data, maxJSONDepth) {
		c.replyError(ctx, 0, &protoError{code: wire.CodeTooDeep, num: wire.NumTooDeep, msg: "JSON nested too deeply"})
		return
	}
	// Text frames must be UTF-8; encoding/json would quietly turn bad bytes
	// into U+FFFD, so a tag could differ from what the client meant.
	if !utf8.Valid(data) || !gjson.ValidBytes(data) {
		// The id a client writes first is often still readable (a push
		// with one broken document): answer it, so that the client's call
		// fails with this error rather than waiting for a reply.
		c.replyError(ctx, requestID(data), &protoError{code: wire.CodeBadJSON, num: wire.NumBadJSON, msg: "malformed JSON (or not UTF-8)"})
		return
	}
	// Nothing changes data while the request is handled.
	msg := wire.ParseInPlace(data)
	if !msg.IsObject() {
		c.replyError(ctx, 0, &protoError{code: wire.CodeBadRequest, num: wire.NumBadRequest, msg: "a message must be a JSON object"})
		return
	}
	if field, bad := unpairedSurrogate(data, msg); bad {
		c.replyError(ctx, requestID(data), &protoError{code: wire.CodeBadRequest, num: wire.NumBadRequest,
			msg: field + " holds an unpaired UTF-16 surrogate escape (\\ud800-\\udfff); ids, tags and names must be valid Unicode"})
		return
	}
	idv := msg.Get("id")
	id := idv.Int()
	if idv.Type != gjson.Number || float64(id) != idv.Num || id < 0 {
		c.replyError(ctx, 0, &protoError{code: wire.CodeBadRequest, num: wire.NumBadRequest, msg: "id must be a non-negative integer"})
		return
	}
	op := msg.Get("op").String()
	if c.db == "" && op != wire.OpHello {
		c.replyError(ctx, id, &protoError{code: wire.CodeHelloRequired, num: wire.NumHelloRequired, msg: "send hello first"})
		return
	}
	h, ok := opHandlers[op]
	if !ok {
		c.replyError(ctx, id, &protoError{code: wire.CodeUnknownOp, num: wire.NumUnknownOp, msg: "unknown op " + Quote(Truncate(op, 64))})
		return
	}
	if op != wire.OpPush {
		// Any other request sees the effects of the pushes before it.
		c.drain()
	}
	reply, err := h(c, withRole(ctx, c.acc.role), id, data)
	if err != nil {
		c.refuse(ctx, id, c.srv.asProtoError(err))
		return
	}
	if l, ok := reply.(later); ok {
		c.answerLater(ctx, id, l)
		return
	}
	c.answer(ctx, reply)
}
