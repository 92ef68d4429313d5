package syncserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"

	"github.com/hilodb/hilodb/internal/wire"
	"github.com/hilodb/hilodb/syncserver/storage"
)

func init() {
	registerOp(wire.OpPush, (*conn).pushOp)
	registerOp(wire.OpPull, (*conn).pullOp)
	registerOp(wire.OpSubscribe, (*conn).subscribeOp)
	registerOp(wire.OpGet, (*conn).getOp)
}

// getOp returns the current version of each requested document (a
// tombstone for a deleted one; no rev for one the server never had).
func (c *conn) getOp(ctx context.Context, id int64, data []byte) (any, error) {
	var req wire.Get
	if err := decode(data, &req); err != nil {
		return nil, err
	}
	if err := c.srv.CheckBatch(len(req.IDs)); err != nil {
		return nil, err
	}
	seen := make(map[string]struct{}, len(req.IDs))
	for _, docID := range req.IDs {
		if _, dup := seen[docID]; dup {
			return nil, BadRequest("ids lists %s more than once; ask for each document once", Quote(Truncate(docID, 100)))
		}
		seen[docID] = struct{}{}
	}
	docs := make([]wire.Change, len(req.IDs))
	budget := c.srv.ReplyBudget()
	err := c.srv.store.View(func(tx storage.Tx) error {
		size := 0
		for i, docID := range req.IDs {
			docs[i].ID = docID
			size += len(docID) + 64
			if !validDocID(docID) {
				continue
			}
			rec, found, err := storage.GetRecord(tx, c.db, docID)
			if err != nil {
				return err
			}
			if found {
				docs[i] = rec.Change(docID)
				size += len(rec.Doc)
			}
			if size > budget && i > 0 {
				return &protoError{code: wire.CodeReplyTooBig, num: wire.NumReplyTooBig,
					msg: fmt.Sprintf("the documents asked for pass the reply bound of %d bytes at %s (the %d. id); ask for fewer at a time", budget, Quote(Truncate(docID, 100)), i+1)}
			}
		}
		return nil
	})
	if err != nil {
		var pe *protoError
		if errors.As(err, &pe) {
			return nil, pe
		}
		return nil, fmt.Errorf("get documents: %w", err)
	}
	return wire.GetReply{ID: id, OK: true, Docs: docs}, nil
}

func (c *conn) pullOp(ctx context.Context, id int64, data []byte) (any, error) {
	var req wire.Pull
	if err := decode(data, &req); err != nil {
		return nil, err
	}
	if err := c.srv.checkSince(c.db, req.Since); err != nil {
		return nil, err
	}
	reply, err := c.srv.pull(c.db, req.Since, req.Limit, req.MaxBytes)
	if err != nil {
		return nil, err
	}
	if req.Collections && !reply.More {
		// The definitions a collection.list after the last page would
		// fetch, in this reply instead.
		defs, err := c.srv.Collections(c.db)
		if err != nil {
			return nil, fmt.Errorf("list collections: %w", err)
		}
		if reply.Collections, err = json.Marshal(defs); err != nil {
			return nil, fmt.Errorf("encode collections: %w", err)
		}
	}
	if req.Indexes && !reply.More {
		list, err := c.srv.Indexes(c.db)
		if err != nil {
			return nil, fmt.Errorf("list indexes: %w", err)
		}
		if reply.Indexes, err = json.Marshal(list); err != nil {
			return nil, fmt.Errorf("encode indexes: %w", err)
		}
	}
	reply.ID = id
	return reply, nil
}

// subscribeOp starts streaming the changes after since to this connection,
// once the reply is sent. The stream ends with the connection; a client
// that falls 10 seconds behind in reading is disconnected and resumes from
// its checkpoint with a new subscribe.
func (c *conn) subscribeOp(ctx context.Context, id int64, data []byte) (any, error) {
	var req wire.Subscribe
	if err := decode(data, &req); err != nil {
		return nil, err
	}
	if err := c.srv.checkSince(c.db, req.Since); err != nil {
		return nil, err
	}
	if c.subscribed {
		return nil, BadRequest("this connection is subscribed already")
	}
	c.subscribed = true
	db := c.db
	wake := c.srv.hub.add(db)
	stop := make(chan struct{})
	done := make(chan struct{})
	start := func() {
		started := c.srv.spawn(func(sctx context.Context) {
			defer close(done)
			c.stream(sctx, db, req.Since, wake, stop)
		})
		if !started {
			close(done)
		}
	}
	c.onClose(func() {
		close(stop)
		<-done
		c.srv.hub.remove(db, wake)
	})
	return replyThen{reply: wire.OKReply{ID: id, OK: true}, then: start}, nil
}

// checkSince refuses a checkpoint that is negative or past db's last
// sequence (on etcd, past etcd's current revision): the server never gave it
// out, and reading from it would move the client's checkpoint somewhere it
// never was.
func (s *Server) checkSince(db string, since int64) error {
	if since < 0 {
		return BadRequest("since must be >= 0")
	}
	var last int64
	var err error
	if es, ok := s.store.(*storage.Etcd); ok {
		last, err = es.CurrentRev(context.Background())
	} else {
		err = s.store.View(func(tx storage.Tx) error {
			var err error
			last, err = storage.GetInt(tx, storage.SeqCounterKey(db))
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("read sequence: %w", err)
	}
	if since > last {
		return BadRequest("since %d is past the last sequence of database %s (%d); a checkpoint comes from a reply of this server", since, db, last)
	}
	return nil
}

// ReplyBudget is the most bytes of documents one reply carries (one
// document may pass it alone).
func (s *Server) ReplyBudget() int { return int(s.cfg.MaxMessageBytes) }

// stream sends changes after since whenever the hub signals new writes (on
// etcd: as its own etcd watch delivers them, see etcdStore.follow).
func (c *conn) stream(ctx context.Context, db string, since int64, wake <-chan struct{}, stop <-chan struct{}) {
	if es, ok := c.srv.store.(*storage.Etcd); ok {
		fctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-stop:
				cancel()
			case <-fctx.Done():
			}
		}()
		sendErr := errors.New("send changes")
		err := es.Follow(fctx, db, since, defaultPullLimit, defaultPullBytes, func(changes []wire.Change, last int64) error {
			if err := c.send(fctx, wire.ChangesMsg{Op: wire.OpChanges, Changes: changes, Last: last}); err != nil {
				return sendErr
			}
			c.srv.metrics.docsPulled.Add(int64(len(changes)))
			return nil
		})
		switch {
		case fctx.Err() != nil:
		case errors.Is(err, sendErr):
			// Too slow or gone: drop it rather than wait.
			c.srv.metrics.countError("slow_subscriber")
			c.ws.Close(websocket.StatusPolicyViolation, "slow subscriber")
		case err != nil:
			c.srv.log.Error("stream changes", "err", err, "db", db)
			c.ws.Close(websocket.StatusInternalError, "internal")
		}
		return
	}
	for {
		reply, err := c.srv.pull(db, since, defaultPullLimit, defaultPullBytes)
		if err != nil {
			c.srv.log.Error("stream changes", "err", err, "db", db)
			c.ws.Close(websocket.StatusInternalError, "internal")
			return
		}
		if len(reply.Changes) > 0 {
			if err := c.send(ctx, wire.ChangesMsg{Op: wire.OpChanges, Changes: reply.Changes, Last: reply.Last}); err != nil {
				// Too slow or gone: drop it rather than wait.
				c.srv.metrics.countError("slow_subscriber")
				c.ws.Close(websocket.StatusPolicyViolation, "slow subscriber")
				return
			}
			since = reply.Last
			if reply.More {
				continue
			}
		}
		select {
		case <-wake:
		case <-stop:
			return
		case <-ctx.Done():
			return
		}
	}
}

// Replication limits.
const (
	defaultPullLimit    = 1000
	maxPullLimit        = 10000
	defaultPullBytes    = 4 << 20
	maxDocIDLen         = 1024
	defaultTombstoneTTL = 30 * 24 * time.Hour
)

// pull returns up to limit changes after since, in sequence order, stopping
// early once maxBytes of documents are collected (but always at least one).
func (s *Server) pull(db string, since int64, limit, maxBytes int) (wire.PullReply, error) {
	if since < 0 {
		return wire.PullReply{}, BadRequest("since must be >= 0")
	}
	if limit <= 0 {
		limit = defaultPullLimit
	}
	limit = min(limit, maxPullLimit)
	if maxBytes <= 0 {
		maxBytes = defaultPullBytes
	}
	maxBytes = min(maxBytes, int(s.cfg.MaxMessageBytes/2))
	if es, ok := s.store.(*storage.Etcd); ok {
		out, _, err := es.Pull(db, since, limit, maxBytes)
		if err != nil {
			return wire.PullReply{}, fmt.Errorf("pull changes: %w", err)
		}
		s.metrics.docsPulled.Add(int64(len(out.Changes)))
		return out, nil
	}
	out := wire.PullReply{OK: true, Changes: []wire.Change{}, Last: since}
	err := s.store.View(func(tx storage.Tx) error {
		var err error
		if out.PurgedSeq, err = storage.GetInt(tx, storage.PurgedKey(db)); err != nil {
			return err
		}
		// Room for the page at once: at most one change per sequence
		// after since, and at most limit.
		last, err := storage.GetInt(tx, storage.SeqCounterKey(db))
		if err != nil {
			return err
		}
		out.Changes = make([]wire.Change, 0, max(0, min(int64(limit), last-since)))
		size := 0
		pivot := storage.SeqKey(db, since+1)
		end := "rseq/" + db + "0" // '0' follows '/': past the last key of db
		if p, ok := tx.(storage.Prefetcher); ok {
			// A store with round trips reads the page's documents at once.
			var keys []string
			if err := tx.AscendRange("", pivot, end, func(_, id string) bool {
				keys = append(keys, storage.DocKey(db, id))
				return len(keys) < limit
			}); err != nil {
				return err
			}
			if err := p.Prefetch(keys); err != nil {
				return err
			}
		}
		return tx.AscendRange("", pivot, end, func(key, id string) bool {
			if len(out.Changes) >= limit || size >= maxBytes {
				out.More = true
				return false
			}
			rec, found, gerr := storage.GetRecord(tx, db, id)
			if gerr != nil {
				err = gerr
				return false
			}
			if !found {
				return true
			}
			out.Changes = append(out.Changes, rec.Change(id))
			out.Last = rec.Seq
			size += len(rec.Doc) + len(id) + 64
			return true
		})
	})
	if err != nil {
		return wire.PullReply{}, fmt.Errorf("pull changes: %w", err)
	}
	s.metrics.docsPulled.Add(int64(len(out.Changes)))
	return out, nil
}
