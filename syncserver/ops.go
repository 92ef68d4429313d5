package syncserver

import (
	"context"
	"strconv"
	"time"

	"github.com/hilodb/hilodb/internal/wire"
	"github.com/hilodb/hilodb/syncserver/storage"
)

// The core ops of protocol v1. Other files register their ops in their own
// init functions with registerOp.
func init() {
	registerOp(wire.OpHello, (*conn).hello)
	registerOp(wire.OpPing, (*conn).ping)
	registerOp(wire.OpHiloNext, (*conn).hiloNext)
	registerOp(wire.OpHiloReturn, (*conn).hiloReturn)
	registerOp(wire.OpIdentityNext, (*conn).identityNext)
	registerOp(wire.OpIdentityNextBatch, (*conn).identityNextBatch)
	registerOp(wire.OpIdentitySeed, (*conn).identitySeed)
}

func (c *conn) hello(ctx context.Context, id int64, data []byte) (any, error) {
	if c.db != "" {
		return nil, BadRequest("hello was already sent on this connection")
	}
	var req wire.Hello
	if err := decode(data, &req); err != nil {
		return nil, err
	}
	if !storage.ValidDBName(req.DB) {
		return nil, &protoError{code: wire.CodeIllegalName, num: wire.NumIllegalName, msg: "illegal database name " + Quote(Truncate(req.DB, 80)) + ": want a letter, then letters, digits, _ or -, at most 64 bytes"}
	}
	acc, err := c.srv.authorizeAccess(req.DB, req.Token, c.loopback)
	if err != nil {
		return nil, err
	}
	node, err := c.srv.assignNode(ctx, req.Node)
	if err != nil {
		return nil, err
	}
	if err := c.srv.touchDBFor(ctx, req.DB, acc); err != nil {
		return nil, err
	}
	release, err := c.srv.holdConn(subjectOf(acc))
	if err != nil {
		return nil, err
	}
	c.onClose(release)
	c.srv.connsMu.Lock()
	c.db, c.node, c.acc = req.DB, node, acc
	c.srv.connsMu.Unlock()
	c.helloDone.Store(true)
	c.ws.SetReadLimit(c.srv.cfg.MaxMessageBytes)
	c.srv.log.Debug("hello", "remote", c.remote, "db", req.DB, "node", node)
	_, onEtcd := c.srv.store.(*storage.Etcd)
	// The token's expiry is watched once the reply is out: its warning
	// never comes before it.
	return replyThen{reply: wire.HelloReply{ID: id, OK: true, ServerTag: c.srv.cfg.ServerTag, Node: node, Pipeline: !onEtcd}, then: c.watchExpiry}, nil
}

func (c *conn) ping(ctx context.Context, id int64, data []byte) (any, error) {
	return wire.OKReply{ID: id, OK: true}, nil
}

func (c *conn) hiloNext(ctx context.Context, id int64, data []byte) (any, error) {
	var req wire.HiloNext
	if err := decode(data, &req); err != nil {
		return nil, err
	}
	if err := CheckTag(req.Tag); err != nil {
		return nil, err
	}
	var at time.Time
	if req.LastRangeAt != "" {
		t, err := time.Parse(time.RFC3339Nano, req.LastRangeAt)
		if err != nil {
			return nil, BadRequest("lastRangeAt: want RFC 3339 time, got %s", Quote(Truncate(req.LastRangeAt, 64)))
		}
		at = t
	}
	if req.Want < 0 || req.Want > storage.MaxSafeNumber {
		return nil, BadRequest("want must be between 0 and %d", int64(storage.MaxSafeNumber))
	}
	r, err := c.srv.NextRange(ctx, c.db, req.Tag, c.node, LastLease{Size: req.LastSize, Max: req.LastMax, At: at, Want: req.Want})
	if err != nil {
		return nil, err
	}
	c.noteLease(req.Tag, r.High)
	return wire.HiloNextReply{
		ID: id, OK: true, Prefix: req.Tag + "/", Low: r.Low, High: r.High, LastSize: r.Size,
		ServerTag: c.srv.cfg.ServerTag, LastRangeAt: wire.FormatRangeTime(r.At),
	}, nil
}

func (c *conn) hiloReturn(ctx context.Context, id int64, data []byte) (any, error) {
	var req wire.HiloReturn
	if err := decode(data, &req); err != nil {
		return nil, err
	}
	if err := CheckTag(req.Tag); err != nil {
		return nil, err
	}
	if req.End < 1 || req.Last < 0 || req.Last > req.End {
		return nil, BadRequest("need 0 <= last <= end and end >= 1")
	}
	// Only the connection that leased the range gives it back: another
	// client (even one claiming the same node tag) could be handing out
	// those numbers.
	if c.leased[req.Tag] != req.End {
		c.srv.metrics.countError("hilo_return_ignored")
		return wire.OKReply{ID: id, OK: true}, nil
	}
	ok, err := c.srv.returnRange(ctx, c.db, req.Tag, c.node, req.End, req.Last)
	if err != nil {
		return nil, err
	}
	if ok {
		delete(c.leased, req.Tag)
	} else {
		c.srv.metrics.countError("hilo_return_ignored")
	}
	return wire.OKReply{ID: id, OK: true}, nil
}

// maxLeasesTracked bounds the tags a connection remembers its latest lease
// of; a lease past it cannot be returned (its numbers are only skipped).
const maxLeasesTracked = 1024

// noteLease records that this connection leased the range of tag ending at
// high, so it may return it.
func (c *conn) noteLease(tag string, high int64) {
	if c.leased == nil {
		c.leased = make(map[string]int64)
	}
	if _, ok := c.leased[tag]; ok || len(c.leased) < maxLeasesTracked {
		c.leased[tag] = high
	}
}

func (c *conn) identityNext(ctx context.Context, id int64, data []byte) (any, error) {
	var req wire.IdentityNext
	if err := decode(data, &req); err != nil {
		return nil, err
	}
	if err := CheckTag(req.Name); err != nil {
		return nil, err
	}
	v, err := c.srv.NextIdentity(ctx, c.db, req.Name)
	if err != nil {
		return nil, err
	}
	return wire.IdentityReply{ID: id, OK: true, Value: v}, nil
}

func (c *conn) identityNextBatch(ctx context.Context, id int64, data []byte) (any, error) {
	var req wire.IdentityNextBatch
	if err := decode(data, &req); err != nil {
		return nil, err
	}
	if len(req.Names) == 0 {
		return nil, BadRequest("names must hold at least one identity name")
	}
	if err := c.srv.CheckBatch(len(req.Names)); err != nil {
		return nil, err
	}
	for _, name := range req.Names {
		if err := CheckTag(name); err != nil {
			return nil, err
		}
	}
	vs, err := c.srv.nextIdentities(ctx, c.db, req.Names)
	if err != nil {
		return nil, err
	}
	return wire.IdentityBatchReply{ID: id, OK: true, Values: vs}, nil
}

func (c *conn) identitySeed(ctx context.Context, id int64, data []byte) (any, error) {
	var req wire.IdentitySeed
	if err := decode(data, &req); err != nil {
		return nil, err
	}
	if err := CheckTag(req.Name); err != nil {
		return nil, err
	}
	v, err := c.srv.SeedIdentity(ctx, c.db, req.Name, req.Value, req.Force)
	if err != nil {
		return nil, err
	}
	return wire.IdentityReply{ID: id, OK: true, Value: v}, nil
}

// CheckBatch refuses a request carrying more than Config.MaxBatch items.
func (s *Server) CheckBatch(n int) error {
	if n > s.cfg.MaxBatch {
		return &protoError{code: wire.CodeBatchTooBig, num: wire.NumBatchTooBig,
			msg: "a request may carry at most " + strconv.Itoa(s.cfg.MaxBatch) + " items; got " + strconv.Itoa(n)}
	}
	return nil
}
