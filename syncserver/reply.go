package syncserver

import (
	"context"
	"encoding/json"
	"time"

	"github.com/coder/websocket"

	"github.com/hilodb/hilodb/internal/wire"
)

// answer sends a handler's reply, then starts its work to follow (replyThen).
func (c *conn) answer(ctx context.Context, reply any) {
	if rt, ok := reply.(replyThen); ok {
		c.send(ctx, rt.reply)
		rt.then()
		return
	}
	c.send(ctx, reply)
}

// later is a handler's reply that is ready once its queued transaction is
// durable (a push on a store that queues): it waits for that and returns
// the reply or the request's error.
type later func() (any, error)

// answerLater answers a request with l's reply from a goroutine of its
// own, after every reply before it, so that the connection reads and
// queues the next push while this one commits. The buffered bytes of the
// request stay held until it is answered.
func (c *conn) answerLater(ctx context.Context, id int64, l later) {
	if len(c.inFlight) >= maxPushesInFlight {
		<-c.inFlight[0]
		c.inFlight = c.inFlight[1:]
	}
	var prev chan struct{}
	if n := len(c.inFlight); n > 0 {
		prev = c.inFlight[n-1]
	}
	done := make(chan struct{})
	c.inFlight = append(c.inFlight, done)
	held := c.held
	c.held = 0
	go func() {
		defer close(done)
		defer c.srv.buffered.give(held)
		reply, err := l()
		if prev != nil {
			<-prev
		}
		if err != nil {
			pe := c.srv.asProtoError(err)
			c.sendError(ctx, id, pe)
			if pe.close != 0 {
				c.srv.log.Warn("refused connection", "code", pe.code, "remote", c.remote, "reason", pe.msg)
				c.ws.Close(pe.close, pe.code)
			}
			return
		}
		c.answer(ctx, reply)
	}()
}

// drain waits until every request read so far is answered.
func (c *conn) drain() {
	for _, done := range c.inFlight {
		<-done
	}
	c.inFlight = c.inFlight[:0]
}

// replyThen is a handler's reply with work to start once it is sent (a
// subscription's stream must not overtake the reply to subscribe).
type replyThen struct {
	reply any
	then  func()
}

// refuse sends an error reply and, when the error says so, closes the
// connection.
func (c *conn) refuse(ctx context.Context, id int64, pe *protoError) {
	c.replyError(ctx, id, pe)
	if pe.close == 0 {
		return
	}
	c.srv.log.Warn("refused connection", "code", pe.code, "remote", c.remote, "reason", pe.msg)
	c.closing = true
	c.ws.Close(pe.close, pe.code)
}

// replyError answers a request with an error, after the pushes in flight;
// only the connection's goroutine calls it.
func (c *conn) replyError(ctx context.Context, id int64, pe *protoError) {
	c.drain()
	c.sendError(ctx, id, pe)
}

// sendError sends an error reply and counts it.
func (c *conn) sendError(ctx context.Context, id int64, pe *protoError) {
	c.srv.metrics.countError(pe.code)
	c.send(ctx, wire.ErrorReply{ID: id, OK: false, Error: &wire.Error{Code: pe.code, Num: pe.num, Message: pe.msg}})
}

// jsonAppender is a reply that writes its own JSON (wire.PullReply and
// wire.ChangesMsg: their documents are copied as stored, not compacted
// again by encoding/json).
type jsonAppender interface {
	AppendJSON(b []byte) []byte
}

// send writes one message. It is safe to call from other goroutines than the
// connection's (for server-initiated messages). A client that does not read
// within 10 seconds is disconnected.
func (c *conn) send(ctx context.Context, v any) error {
	var b []byte
	if a, ok := v.(jsonAppender); ok {
		b = a.AppendJSON(nil)
	} else {
		var err error
		if b, err = json.Marshal(v); err != nil {
			c.srv.log.Error("encode reply", "err", err)
			return err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return c.ws.Write(wctx, websocket.MessageText, b)
}
