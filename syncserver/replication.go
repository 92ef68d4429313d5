package syncserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/hilodb/hilodb/internal/wire"
	"github.com/tidwall/buntdb"
	"github.com/tidwall/gjson"
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
	if err := c.srv.checkBatch(len(req.IDs)); err != nil {
		return nil, err
	}
	seen := make(map[string]struct{}, len(req.IDs))
	for _, docID := range req.IDs {
		if _, dup := seen[docID]; dup {
			return nil, badRequest("ids lists %s more than once; ask for each document once", quote(truncate(docID, 100)))
		}
		seen[docID] = struct{}{}
	}
	docs := make([]wire.Change, len(req.IDs))
	budget := c.srv.replyBudget()
	err := c.srv.store.view(func(tx kvTx) error {
		size := 0
		for i, docID := range req.IDs {
			docs[i].ID = docID
			size += len(docID) + 64
			if !validDocID(docID) {
				continue
			}
			rec, found, err := getRecord(tx, c.db, docID)
			if err != nil {
				return err
			}
			if found {
				docs[i] = wire.Change{Seq: rec.Seq, ID: docID, Rev: rec.Rev, Doc: rec.Doc, Deleted: rec.Deleted}
				size += len(rec.Doc)
			}
			if size > budget && i > 0 {
				return &protoError{code: wire.CodeReplyTooBig, num: wire.NumReplyTooBig,
					msg: fmt.Sprintf("the documents asked for pass the reply bound of %d bytes at %s (the %d. id); ask for fewer at a time", budget, quote(truncate(docID, 100)), i+1)}
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

func (c *conn) pushOp(ctx context.Context, id int64, data []byte) (any, error) {
	changes, err := decodePush(data)
	if err != nil {
		return nil, err
	}
	if err := c.srv.checkBatch(len(changes)); err != nil {
		return nil, err
	}
	// Each option is looked up alone: the official clients send them
	// before the changes, where a lookup stops, and a walk over every
	// member would cross the megabytes of changes.
	since := int64(-1) // the client's checkpoint, when it tells it
	if v := gjson.GetBytes(data, "since"); v.Exists() {
		if v.Type != gjson.Number || v.Int() < 0 || float64(v.Int()) != v.Num {
			return nil, badRequest("since must be an integer >= 0")
		}
		since = v.Int()
	}
	brief, err := boolMember(gjson.GetBytes(data, "brief"), "brief") // a reply of the items not accepted (wire.BriefPushReply)
	if err != nil {
		return nil, err
	}
	seqsFrom, err := boolMember(gjson.GetBytes(data, "seqsFrom"), "seqsFrom") // with brief, wire.BriefPushReplyFrom where it applies
	if err != nil {
		return nil, err
	}
	finish, err := c.srv.queuePush(ctx, c.db, changes, since)
	if err != nil {
		return nil, err
	}
	answer := later(func() (any, error) {
		out, err := finish()
		if err != nil {
			return nil, err
		}
		return c.pushReply(id, brief, seqsFrom, out), nil
	})
	if c.queued {
		return answer, nil
	}
	return answer()
}

// boolMember reads an optional request member that is true or false.
func boolMember(v gjson.Result, name string) (bool, error) {
	switch v.Type {
	case gjson.True:
		return true, nil
	case gjson.False, gjson.Null:
		return false, nil
	}
	return false, badRequest("%s must be true or false", name)
}

// consecutiveFrom returns the sequence of the first accepted result when
// the accepted ones follow one another from it, in order.
func consecutiveFrom(results []wire.PushResult) (int64, bool) {
	var first, next int64
	for _, r := range results {
		if !r.OK {
			continue
		}
		if next == 0 {
			first, next = r.Seq, r.Seq
		}
		if r.Seq != next || r.Seq <= 0 {
			return 0, false
		}
		next++
	}
	return first, next != 0
}

// pushReply is the reply to a committed push: every result, or with brief
// the sequences and the items not accepted (with seqsFrom, the first
// accepted item's sequence alone when the others follow it). Once sent,
// the database's subscribers hear of the writes.
func (c *conn) pushReply(id int64, brief, seqsFrom bool, out pushOutcome) any {
	var reply any = wire.PushReply{ID: id, OK: true, Results: out.results, PrevSeq: out.prevSeq, Last: out.last}
	if brief {
		failed := []wire.FailedPush{}
		for i, r := range out.results {
			if !r.OK {
				failed = append(failed, wire.FailedPush{I: i, PushResult: r})
			}
		}
		first, run := int64(0), false
		if seqsFrom {
			first, run = consecutiveFrom(out.results)
		}
		if run {
			reply = wire.BriefPushReplyFrom{ID: id, OK: true, Brief: true, Failed: failed, SeqsFrom: first, PrevSeq: out.prevSeq, Last: out.last}
		} else {
			seqs := make([]int64, len(out.results)) // 0 for the items not accepted
			for i, r := range out.results {
				if r.OK {
					seqs[i] = r.Seq
				}
			}
			reply = wire.BriefPushReply{ID: id, OK: true, Brief: true, Failed: failed, Seqs: seqs, PrevSeq: out.prevSeq, Last: out.last}
		}
	}
	if !out.wrote {
		return reply // nothing new for subscribers
	}
	// Subscribers hear of the writes once the reply is sent, so this
	// connection's own feed never brings them back before their
	// acknowledgement.
	db := c.db
	return replyThen{reply: reply, then: func() { c.srv.hub.notify(db) }}
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
		defs, err := c.srv.collections(c.db)
		if err != nil {
			return nil, fmt.Errorf("list collections: %w", err)
		}
		if reply.Collections, err = json.Marshal(defs); err != nil {
			return nil, fmt.Errorf("encode collections: %w", err)
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
		return nil, badRequest("this connection is subscribed already")
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
		return badRequest("since must be >= 0")
	}
	var last int64
	var err error
	if es, ok := s.store.(*etcdStore); ok {
		last, err = es.currentRev(context.Background())
	} else {
		err = s.store.view(func(tx kvTx) error {
			var err error
			last, err = getInt(tx, seqCounterKey(db))
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("read sequence: %w", err)
	}
	if since > last {
		return badRequest("since %d is past the last sequence of database %s (%d); a checkpoint comes from a reply of this server", since, db, last)
	}
	return nil
}

// replyBudget is the most bytes of documents one reply carries (one
// document may pass it alone).
func (s *Server) replyBudget() int { return int(s.cfg.MaxMessageBytes) }

// stream sends changes after since whenever the hub signals new writes (on
// etcd: as its own etcd watch delivers them, see etcdStore.follow).
func (c *conn) stream(ctx context.Context, db string, since int64, wake <-chan struct{}, stop <-chan struct{}) {
	if es, ok := c.srv.store.(*etcdStore); ok {
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
		err := es.follow(fctx, db, since, func(changes []wire.Change, last int64) error {
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

// decodePush reads a push request's changes with gjson (the frame is known
// to be valid JSON), keeping each document as the bytes it came in instead
// of decoding it. Fields of the wrong type are a bad_request, as
// encoding/json would make them.
func decodePush(data []byte) ([]wire.PushItem, error) {
	items, err := wire.DecodePush(data)
	if err != nil {
		return nil, badRequest("malformed request: %v", err)
	}
	return items, nil
}

// Replication limits.
const (
	// proofWait bounds how long a push on etcd waits for the server's watch
	// to deliver its own commit before it answers without proving prevSeq.
	proofWait           = 200 * time.Millisecond
	defaultPullLimit    = 1000
	maxPullLimit        = 10000
	defaultPullBytes    = 4 << 20
	maxDocIDLen         = 1024
	defaultTombstoneTTL = 30 * 24 * time.Hour
)

// pushOutcome is what push did: one result per item, the change sequence
// before and after (see wire.PushReply) and whether anything was written.
type pushOutcome struct {
	results       []wire.PushResult
	prevSeq, last int64
	wrote         bool
}

// queuePush checks a push's items and queues the transaction that applies
// them; finish waits until it is durable (one fsync) and returns the
// outcome. Each item is accepted when the stored _rev equals its baseRev
// (or the document is absent or a tombstone and baseRev is empty); an item
// whose rev is already the stored _rev is a retry and answered ok with that
// write's sequence. since is the client's checkpoint, -1 when it did not
// say.
//
// On a store that queues (updateQueuer), the next push can be checked and
// queued while this one commits, and pushes commit in the order they were
// queued; on one that does not, queuePush runs the transaction before it
// returns.
//
// On buntdb the sequence is a counter per database, raised in the same
// transaction: prevSeq is its value before, last after. On etcd it is the
// commit's revision (see etcdchanges.go), and prevSeq is since only when it
// is proven that nothing but this push changed the database after since
// (changeLog.onlyOwn); otherwise it is last, which moves no checkpoint.
func (s *Server) queuePush(ctx context.Context, db string, items []wire.PushItem, since int64) (finish func() (pushOutcome, error), err error) {
	results := make([]wire.PushResult, len(items))
	docs := make([]json.RawMessage, len(items))
	for i, it := range items {
		results[i].ID = it.ID
		switch {
		case !validDocID(it.ID):
			results[i].Error = &wire.Error{Code: wire.CodeBadDoc, Num: wire.NumBadDoc, Message: "id must be 1 to 1024 bytes of UTF-8 without control characters"}
		case it.Rev == "" || len(it.Rev) > 256:
			results[i].Error = &wire.Error{Code: wire.CodeBadDoc, Num: wire.NumBadDoc, Message: "rev must be 1 to 256 bytes"}
		case !it.Deleted:
			// The message was checked whole (conn.handle): its documents
			// are valid JSON.
			d, err := normalizeValidDoc(it.Doc, it.ID, it.Rev)
			if err != nil {
				results[i].Error = &wire.Error{Code: wire.CodeBadDoc, Num: wire.NumBadDoc, Message: err.Error()}
			}
			docs[i] = d
		}
	}
	accepted := 0
	var prevSeq, lastSeq, commitRev int64
	var own map[string]bool // etcd: ids whose stored version the client holds
	var atCommit []bool     // etcd: results whose seq is the commit's revision
	now := s.now().UnixMilli()
	checked := append([]wire.PushResult(nil), results...)
	wait, err := s.queueUpdate(ctx, func(tx kvTx) error {
		accepted = 0
		copy(results, checked) // a rerun starts from the checks alone
		rt, byRev := tx.(revTx)
		if byRev {
			own = map[string]bool{}
			atCommit = make([]bool, len(items))
			rt.afterCommit(func(rev int64) { commitRev = rev })
		}
		if p, ok := tx.(prefetcher); ok {
			keys := make([]string, 0, len(items)+1)
			if !byRev {
				keys = append(keys, seqCounterKey(db))
			}
			for i, it := range items {
				if results[i].Error == nil {
					keys = append(keys, docKey(db, it.ID))
				}
			}
			if err := p.prefetch(keys); err != nil {
				return err
			}
		}
		var seq int64
		if !byRev {
			var err error
			if seq, err = getInt(tx, seqCounterKey(db)); err != nil {
				return err
			}
		}
		prevSeq = seq
		defer func() { lastSeq = seq }()
		// Records read or written by this batch, so two items for one id
		// see each other and a document is read once.
		batch := make(map[string]*docRecord, len(items))
		var written map[string]bool // etcd only
		if byRev {
			written = make(map[string]bool, len(items))
		}
		// A current version goes out once per document, and not past the
		// reply bound: a push of many conflicting items must not make a
		// reply (and the server's memory) many times its own size.
		sent := map[string]bool{}
		size, budget := 0, s.replyBudget()
		current := func(res *wire.PushResult, cur *docRecord) {
			res.Seq = cur.Seq
			if sent[res.ID] || size+len(cur.Doc) > budget && size > 0 {
				res.CurrentOmitted = true
				return
			}
			sent[res.ID] = true
			res.Current = cur.current(res.ID)
			size += len(res.Current)
		}
		for i, it := range items {
			res := &results[i]
			if res.Error != nil {
				continue
			}
			cur, read := batch[it.ID]
			if !read {
				rec, found, err := getRecord(tx, db, it.ID)
				if err != nil {
					return err
				}
				if found {
					cur = &rec
				}
				batch[it.ID] = cur // read once per push, however often named
			}
			switch {
			case cur != nil && cur.Rev == it.Rev:
				if !sameWrite(cur, it.Deleted, docs[i]) {
					res.Error = &wire.Error{Code: wire.CodeConflict, Num: wire.NumConflict, Message: fmt.Sprintf("conflict: the server has _rev %q with other content; a retry must send the same write", it.Rev)}
					current(res, cur)
					if byRev {
						delete(own, it.ID)
					}
					continue
				}
				res.OK, res.Seq = true, cur.Seq // a retry of a write already applied
				if byRev {
					own[it.ID] = true
					atCommit[i] = written[it.ID]
				}
				continue
			case cur == nil || cur.Deleted && it.BaseRev == "":
				if it.BaseRev != "" && cur == nil {
					// The client builds on a version this server never had.
					res.Error = &wire.Error{Code: wire.CodeConflict, Num: wire.NumConflict, Message: fmt.Sprintf("conflict, _rev values do not match: %q is not on the server", it.BaseRev)}
					continue
				}
				if it.Deleted {
					// Deleting what is not here (a document the client made
					// and deleted before it ever arrived): nothing to do.
					res.OK = true
					if cur != nil {
						res.Seq = cur.Seq
						if byRev {
							atCommit[i] = written[it.ID]
							// The stored tombstone is not the client's.
							delete(own, it.ID)
						}
					}
					continue
				}
			case cur.Rev != it.BaseRev:
				res.Error = &wire.Error{Code: wire.CodeConflict, Num: wire.NumConflict, Message: fmt.Sprintf("conflict, _rev values do not match: server has %q, write was based on %q", cur.Rev, it.BaseRev)}
				current(res, cur)
				if byRev {
					delete(own, it.ID)
				}
				continue
			}
			rec := &docRecord{Rev: it.Rev, Deleted: it.Deleted, Doc: docs[i]}
			if it.Deleted {
				rec.At = now
			}
			if byRev {
				// The sequence is the commit's revision, filled in after it.
				if _, _, err := tx.Set(docKey(db, it.ID), rec.encode(), nil); err != nil {
					return err
				}
				own[it.ID], atCommit[i], written[it.ID] = true, true, true
			} else {
				seq++
				rec.Seq = seq
				if cur != nil {
					if _, err := tx.Delete(seqKey(db, cur.Seq)); err != nil && !errors.Is(err, buntdb.ErrNotFound) {
						return err
					}
				}
				if _, _, err := tx.Set(docKey(db, it.ID), rec.encode(), nil); err != nil {
					return err
				}
				// A copy: it.ID is the push message's own bytes (wire.DecodePush),
				// and the store keeps the value, which would keep the message.
				if _, _, err := tx.Set(seqKey(db, seq), strings.Clone(it.ID), nil); err != nil {
					return err
				}
			}
			batch[it.ID] = rec
			res.OK, res.Seq = true, rec.Seq
			accepted++
		}
		if accepted > 0 && byRev {
			// A blind write: no transaction compares it (see lastWriteKey).
			_, _, err := tx.Set(lastWriteKey(db), "", nil)
			return err
		}
		if accepted > 0 {
			return setInt(tx, seqCounterKey(db), seq)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return func() (pushOutcome, error) {
		if err := wait(); err != nil {
			return pushOutcome{}, err
		}
		return s.pushDone(db, since, results, prevSeq, lastSeq, commitRev, accepted, own, atCommit), nil
	}, nil
}

// queueUpdate queues fn on a store that queues (updateQueuer); on another it
// runs fn to its end first. wait returns fn's outcome.
func (s *Server) queueUpdate(ctx context.Context, fn func(tx kvTx) error) (wait func() error, err error) {
	if q, ok := s.store.(updateQueuer); ok {
		return q.queueUpdate(ctx, fn)
	}
	done := s.store.update(ctx, fn)
	return func() error { return done }, nil
}

// pushDone builds a committed push's outcome from what its transaction
// found, and counts it.
func (s *Server) pushDone(db string, since int64, results []wire.PushResult, prevSeq, lastSeq, commitRev int64, accepted int, own map[string]bool, atCommit []bool) pushOutcome {
	out := pushOutcome{results: results, prevSeq: prevSeq, last: lastSeq, wrote: accepted > 0}
	if es, ok := s.store.(*etcdStore); ok {
		for i := range results {
			if atCommit[i] {
				results[i].Seq = commitRev
			}
		}
		// Nothing proven yet: prevSeq == last moves no checkpoint.
		out.prevSeq, out.last = commitRev, commitRev
		if accepted > 0 && since >= 0 && since <= commitRev && es.changes.onlyOwn(db, since, commitRev, own, proofWait) {
			out.prevSeq = since
		}
	}
	for i := range results {
		if results[i].Error != nil && results[i].Error.Code == wire.CodeConflict {
			s.metrics.countError(wire.CodeConflict)
		}
	}
	s.metrics.docsPushed.Add(int64(accepted))
	return out
}

// pull returns up to limit changes after since, in sequence order, stopping
// early once maxBytes of documents are collected (but always at least one).
func (s *Server) pull(db string, since int64, limit, maxBytes int) (wire.PullReply, error) {
	if since < 0 {
		return wire.PullReply{}, badRequest("since must be >= 0")
	}
	if limit <= 0 {
		limit = defaultPullLimit
	}
	limit = min(limit, maxPullLimit)
	if maxBytes <= 0 {
		maxBytes = defaultPullBytes
	}
	maxBytes = min(maxBytes, int(s.cfg.MaxMessageBytes/2))
	if es, ok := s.store.(*etcdStore); ok {
		out, _, err := es.pull(db, since, limit, maxBytes)
		if err != nil {
			return wire.PullReply{}, fmt.Errorf("pull changes: %w", err)
		}
		s.metrics.docsPulled.Add(int64(len(out.Changes)))
		return out, nil
	}
	out := wire.PullReply{OK: true, Changes: []wire.Change{}, Last: since}
	err := s.store.view(func(tx kvTx) error {
		var err error
		if out.PurgedSeq, err = getInt(tx, purgedKey(db)); err != nil {
			return err
		}
		// Room for the page at once: at most one change per sequence
		// after since, and at most limit.
		last, err := getInt(tx, seqCounterKey(db))
		if err != nil {
			return err
		}
		out.Changes = make([]wire.Change, 0, max(0, min(int64(limit), last-since)))
		size := 0
		pivot := seqKey(db, since+1)
		end := "rseq/" + db + "0" // '0' follows '/': past the last key of db
		if p, ok := tx.(prefetcher); ok {
			// A store with round trips reads the page's documents at once.
			var keys []string
			if err := tx.AscendRange("", pivot, end, func(_, id string) bool {
				keys = append(keys, docKey(db, id))
				return len(keys) < limit
			}); err != nil {
				return err
			}
			if err := p.prefetch(keys); err != nil {
				return err
			}
		}
		return tx.AscendRange("", pivot, end, func(key, id string) bool {
			if len(out.Changes) >= limit || size >= maxBytes {
				out.More = true
				return false
			}
			rec, found, gerr := getRecord(tx, db, id)
			if gerr != nil {
				err = gerr
				return false
			}
			if !found {
				return true
			}
			out.Changes = append(out.Changes, wire.Change{Seq: rec.Seq, ID: id, Rev: rec.Rev, Doc: rec.Doc, Deleted: rec.Deleted})
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
