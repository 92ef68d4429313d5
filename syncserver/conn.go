package syncserver

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/coder/websocket"
	"github.com/hilodb/hilodb/internal/wire"
	"github.com/tidwall/gjson"
)

// conn is one websocket client. Requests are handled in order of arrival.
type conn struct {
	srv    *Server
	ws     *websocket.Conn
	remote string

	db   string // set by hello
	node string
}

func (c *conn) serve(ctx context.Context) {
	defer c.ws.CloseNow()
	for {
		typ, data, err := c.ws.Read(ctx)
		if err != nil {
			if errors.Is(err, websocket.ErrMessageTooBig) || isTooBig(err) {
				c.srv.metrics.countError(wire.CodeTooBig)
				c.ws.Close(websocket.StatusMessageTooBig, "message too big")
			}
			return
		}
		if typ != websocket.MessageText {
			c.replyError(ctx, 0, &protoError{code: wire.CodeBadRequest, num: wire.NumBadRequest, msg: "binary frames are not accepted; send JSON text"})
			continue
		}
		c.handle(ctx, data)
	}
}

func isTooBig(err error) bool {
	return websocket.CloseStatus(err) == websocket.StatusMessageTooBig
}

// handle routes one message on its op.
func (c *conn) handle(ctx context.Context, data []byte) {
	if !gjson.ValidBytes(data) {
		c.replyError(ctx, 0, &protoError{code: wire.CodeBadJSON, num: wire.NumBadJSON, msg: "malformed JSON"})
		return
	}
	msg := gjson.ParseBytes(data)
	if !msg.IsObject() {
		c.replyError(ctx, 0, &protoError{code: wire.CodeBadRequest, num: wire.NumBadRequest, msg: "a message must be a JSON object"})
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
	var reply any
	var err error
	switch op {
	case wire.OpHello:
		reply, err = c.hello(ctx, id, data)
	case wire.OpHiloNext:
		reply, err = c.hiloNext(ctx, id, data)
	case wire.OpHiloReturn:
		reply, err = c.hiloReturn(ctx, id, data)
	case wire.OpIdentityNext:
		reply, err = c.identityNext(ctx, id, data)
	case wire.OpIdentitySeed:
		reply, err = c.identitySeed(ctx, id, data)
	default:
		err = &protoError{code: wire.CodeUnknownOp, num: wire.NumUnknownOp, msg: "unknown op " + quote(op)}
	}
	if err != nil {
		c.replyError(ctx, id, c.srv.asProtoError(err))
		return
	}
	c.write(ctx, reply)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// decode unmarshals a request, turning type mismatches into bad_request.
func decode(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return badRequest("malformed request: %v", err)
	}
	return nil
}

func (c *conn) hello(ctx context.Context, id int64, data []byte) (any, error) {
	if c.db != "" {
		return nil, badRequest("hello was already sent on this connection")
	}
	var req wire.Hello
	if err := decode(data, &req); err != nil {
		return nil, err
	}
	if !validDBName(req.DB) {
		return nil, &protoError{code: wire.CodeIllegalName, num: wire.NumIllegalName, msg: "illegal database name " + quote(req.DB) + ": want a letter, then letters, digits, _ or -, at most 64 bytes"}
	}
	if err := c.srv.authorize(req.DB, req.Token, c.remote); err != nil {
		c.srv.metrics.countError(wire.CodeUnauthorized)
		go func() {
			// Give the reply a moment to leave, then hang up.
			time.Sleep(100 * time.Millisecond)
			c.ws.Close(websocket.StatusPolicyViolation, "unauthorized")
		}()
		return nil, err
	}
	node, err := c.srv.assignNode(ctx, req.Node)
	if err != nil {
		return nil, err
	}
	if err := c.srv.touchDB(ctx, req.DB); err != nil {
		return nil, err
	}
	c.db, c.node = req.DB, node
	return wire.HelloReply{ID: id, OK: true, ServerTag: c.srv.cfg.ServerTag, Node: node}, nil
}

func (c *conn) hiloNext(ctx context.Context, id int64, data []byte) (any, error) {
	var req wire.HiloNext
	if err := decode(data, &req); err != nil {
		return nil, err
	}
	if err := validTag(req.Tag); err != nil {
		return nil, err
	}
	var at time.Time
	if req.LastRangeAt != "" {
		t, err := time.Parse(time.RFC3339Nano, req.LastRangeAt)
		if err != nil {
			return nil, badRequest("lastRangeAt: want RFC 3339 time, got %s", quote(req.LastRangeAt))
		}
		at = t
	}
	r, err := c.srv.nextRange(ctx, c.db, req.Tag, req.LastSize, req.LastMax, at)
	if err != nil {
		return nil, err
	}
	return wire.HiloNextReply{
		ID: id, OK: true, Prefix: req.Tag + "/", Low: r.Low, High: r.High, LastSize: r.Size,
		ServerTag: c.srv.cfg.ServerTag, LastRangeAt: r.At.Format(wire.TimeLayout),
	}, nil
}

func (c *conn) hiloReturn(ctx context.Context, id int64, data []byte) (any, error) {
	var req wire.HiloReturn
	if err := decode(data, &req); err != nil {
		return nil, err
	}
	if err := validTag(req.Tag); err != nil {
		return nil, err
	}
	if _, err := c.srv.returnRange(ctx, c.db, req.Tag, req.End, req.Last); err != nil {
		return nil, err
	}
	return wire.OKReply{ID: id, OK: true}, nil
}

func (c *conn) identityNext(ctx context.Context, id int64, data []byte) (any, error) {
	var req wire.IdentityNext
	if err := decode(data, &req); err != nil {
		return nil, err
	}
	if err := validTag(req.Name); err != nil {
		return nil, err
	}
	v, err := c.srv.nextIdentity(ctx, c.db, req.Name)
	if err != nil {
		return nil, err
	}
	return wire.IdentityReply{ID: id, OK: true, Value: v}, nil
}

func (c *conn) identitySeed(ctx context.Context, id int64, data []byte) (any, error) {
	var req wire.IdentitySeed
	if err := decode(data, &req); err != nil {
		return nil, err
	}
	if err := validTag(req.Name); err != nil {
		return nil, err
	}
	v, err := c.srv.seedIdentity(ctx, c.db, req.Name, req.Value, req.Force)
	if err != nil {
		return nil, err
	}
	return wire.IdentityReply{ID: id, OK: true, Value: v}, nil
}

func (c *conn) replyError(ctx context.Context, id int64, pe *protoError) {
	c.srv.metrics.countError(pe.code)
	c.write(ctx, wire.ErrorReply{ID: id, OK: false, Error: &wire.Error{Code: pe.code, Num: pe.num, Message: pe.msg}})
}

func (c *conn) write(ctx context.Context, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		c.srv.log.Error("encode reply", "err", err)
		return
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = c.ws.Write(wctx, websocket.MessageText, b)
}
