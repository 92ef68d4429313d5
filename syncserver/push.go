package syncserver

// The push op: a client's writes, checked against the stored versions and
// applied in one transaction per push.

import (
	"github.com/hilodb/hilodb/auth"
	"github.com/hilodb/hilodb/syncserver/storage"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/buntdb"
	"github.com/tidwall/gjson"

	"github.com/hilodb/hilodb/internal/wire"
)

func (c *conn) pushOp(ctx context.Context, id int64, data []byte) (any, error) {
	changes, err := decodePush(data)
	if err != nil {
		return nil, err
	}
	if err := c.srv.CheckBatch(len(changes)); err != nil {
		return nil, err
	}
	if err := NeedRole(ctx, auth.Write, "pushing"); err != nil {
		// Refused item by item, nothing stored: the writes stay pending
		// on the client until a token that may write comes.
		pe := err.(*protoError)
		results := make([]wire.PushResult, len(changes))
		for i, ch := range changes {
			results[i] = wire.PushResult{ID: ch.ID, Error: &wire.Error{Code: pe.code, Num: pe.num, Message: pe.msg}}
		}
		return wire.PushReply{ID: id, OK: true, Results: results}, nil
	}
	// Each option is looked up alone: the official clients send them
	// before the changes, where a lookup stops, and a walk over every
	// member would cross the megabytes of changes.
	since := int64(-1) // the client's checkpoint, when it tells it
	if v := gjson.GetBytes(data, "since"); v.Exists() {
		if v.Type != gjson.Number || v.Int() < 0 || float64(v.Int()) != v.Num {
			return nil, BadRequest("since must be an integer >= 0")
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
	return false, BadRequest("%s must be true or false", name)
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

// decodePush reads a push request's changes with gjson (the frame is known
// to be valid JSON), keeping each document as the bytes it came in instead
// of decoding it. Fields of the wrong type are a bad_request, as
// encoding/json would make them.
func decodePush(data []byte) ([]wire.PushItem, error) {
	items, err := wire.DecodePush(data)
	if err != nil {
		return nil, BadRequest("malformed request: %v", err)
	}
	return items, nil
}

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
// (or the document is absent or a tombstone and baseRev is empty) and its
// rev's clock is greater than the stored one's (stale_rev otherwise, see
// revorder.go); an item whose rev is already the stored _rev is a retry
// and answered ok with that write's sequence. since is the client's checkpoint, -1 when it did not
// say.
//
// On a store that queues (storage.Queuer), the next push can be checked and
// queued while this one commits, and pushes commit in the order they were
// queued; on one that does not, queuePush runs the transaction before it
// returns.
//
// On buntdb the sequence is a counter per database, raised in the same
// transaction: prevSeq is its value before, last after. On etcd it is the
// commit's revision (see storage/etcdchanges.go), and prevSeq is since
// only when it is proven that nothing but this push changed the database
// after since (storage.Etcd.OnlyOwn); otherwise it is last, which moves no
// checkpoint.
func (s *Server) queuePush(ctx context.Context, db string, items []wire.PushItem, since int64) (finish func() (pushOutcome, error), err error) {
	results := make([]wire.PushResult, len(items))
	docs := make([]json.RawMessage, len(items))
	wall := s.now()
	for i, it := range items {
		results[i].ID = it.ID
		switch {
		case !validDocID(it.ID):
			results[i].Error = &wire.Error{Code: wire.CodeBadDoc, Num: wire.NumBadDoc, Message: "id must be 1 to 1024 bytes of UTF-8 without control characters"}
		case it.Rev == "" || len(it.Rev) > 256:
			results[i].Error = &wire.Error{Code: wire.CodeBadDoc, Num: wire.NumBadDoc, Message: "rev must be 1 to 256 bytes"}
		case checkPushedRev(it.Rev, wall) != nil:
			results[i].Error = checkPushedRev(it.Rev, wall)
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
	restamped := 0 // versions that had a conflict refused against them noted
	var prevSeq, lastSeq, commitRev int64
	var own map[string]bool // etcd: ids whose stored version the client holds
	var atCommit []bool     // etcd: results whose seq is the commit's revision
	now := wall.UnixMilli()
	checked := append([]wire.PushResult(nil), results...)
	wait, err := s.queueUpdate(ctx, func(tx storage.Tx) error {
		accepted, restamped = 0, 0
		copy(results, checked) // a rerun starts from the checks alone
		rt, byRev := tx.(storage.RevTx)
		if byRev {
			own = map[string]bool{}
			atCommit = make([]bool, len(items))
			rt.AfterCommit(func(rev int64) { commitRev = rev })
		}
		if p, ok := tx.(storage.Prefetcher); ok {
			keys := make([]string, 0, len(items)+1)
			if !byRev {
				keys = append(keys, storage.SeqCounterKey(db))
			}
			for i, it := range items {
				if results[i].Error == nil {
					keys = append(keys, storage.DocKey(db, it.ID))
				}
			}
			if err := p.Prefetch(keys); err != nil {
				return err
			}
		}
		var seq int64
		if !byRev {
			var err error
			if seq, err = storage.GetInt(tx, storage.SeqCounterKey(db)); err != nil {
				return err
			}
		}
		prevSeq = seq
		defer func() { lastSeq = seq }()
		// Records read or written by this batch, so two items for one id
		// see each other and a document is read once.
		batch := make(map[string]*storage.Record, len(items))
		writeFirst := !byRev        // see writeNew
		var written map[string]bool // etcd only
		if byRev {
			written = make(map[string]bool, len(items))
		}
		// A current version goes out once per document, and not past the
		// reply bound: a push of many conflicting items must not make a
		// reply (and the server's memory) many times its own size.
		sent := map[string]bool{}
		size, budget := 0, s.ReplyBudget()
		current := func(res *wire.PushResult, cur *storage.Record) {
			res.Seq = cur.Seq
			if sent[res.ID] || size+len(cur.Doc) > budget && size > 0 {
				res.CurrentOmitted = true
				return
			}
			sent[res.ID] = true
			res.Current = currentOf(cur, res.ID)
			size += len(res.Current)
		}
		for i, it := range items {
			res := &results[i]
			if res.Error != nil {
				continue
			}
			cur, read := batch[it.ID]
			if writeFirst && !read && !it.Deleted && it.BaseRev == "" {
				// Most pushed documents are new: write first and look at
				// what the write replaced, a lookup saved per document.
				// Here the transaction sees its own writes, so an id named
				// again in this push finds this write without the batch.
				// A document found there makes the rest of the push look
				// first: a retried push finds all of its documents.
				var fresh bool
				var err error
				if cur, fresh, err = writeNew(tx, db, it, docs[i], seq+1); err != nil {
					return err
				}
				if fresh {
					seq++
					res.OK, res.Seq = true, seq
					accepted++
					continue
				}
				read, writeFirst = true, false
			}
			if !read {
				rec, found, err := storage.GetRecord(tx, db, it.ID)
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
				// The version that won hears of it (lostwrites.go).
				if noted, ok := withLost(cur, it, docs[i]); ok {
					if !byRev {
						seq++
					}
					if err := restamp(tx, db, it.ID, cur, noted, seq, byRev); err != nil {
						return err
					}
					cur = noted
					batch[it.ID] = cur
					restamped++
					if byRev {
						atCommit[i], written[it.ID] = true, true
					}
				}
				current(res, cur)
				if byRev {
					delete(own, it.ID)
				}
				continue
			}
			if cur != nil && revClock(it.Rev) <= revClock(cur.Rev) {
				// A document's revisions only grow (revorder.go): an older
				// one may have named other content, which a replica that
				// holds it would keep.
				res.Error = staleRev(it.Rev, cur.Rev)
				current(res, cur)
				if byRev {
					delete(own, it.ID)
				}
				continue
			}
			rec := &storage.Record{Rev: it.Rev, Deleted: it.Deleted, Doc: docs[i]}
			if it.Deleted {
				rec.At = now
			}
			if byRev {
				// The sequence is the commit's revision, filled in after it.
				if _, _, err := tx.Set(storage.DocKey(db, it.ID), rec.Encode(), nil); err != nil {
					return err
				}
				own[it.ID], atCommit[i], written[it.ID] = true, true, true
			} else {
				seq++
				rec.Seq = seq
				if cur != nil {
					if _, err := tx.Delete(storage.SeqKey(db, cur.Seq)); err != nil && !errors.Is(err, buntdb.ErrNotFound) {
						return err
					}
				}
				if _, _, err := tx.Set(storage.DocKey(db, it.ID), rec.Encode(), nil); err != nil {
					return err
				}
				if err := setSeq(tx, db, seq, it.ID); err != nil {
					return err
				}
			}
			batch[it.ID] = rec
			res.OK, res.Seq = true, rec.Seq
			accepted++
		}
		if accepted+restamped > 0 && byRev {
			// A blind write: no transaction compares it (see lastWriteKey).
			_, _, err := tx.Set(storage.LastWriteKey(db), "", nil)
			return err
		}
		if accepted+restamped > 0 {
			return storage.SetInt(tx, storage.SeqCounterKey(db), seq)
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
		return s.pushDone(db, since, results, prevSeq, lastSeq, commitRev, accepted, restamped, own, atCommit), nil
	}, nil
}

// writeNew stores the pushed document it, which names no base version, as
// the record of sequence seq when no record of its id was there (on
// buntdb, whose transaction sees its own writes). fresh says it was
// written; otherwise the record found is put back and returned for the
// general checks (the data file then holds that record once more: the
// cost of a retried push, whose documents are all there). The caller
// raises the sequence counter on fresh.
func writeNew(tx storage.Tx, db string, it wire.PushItem, doc json.RawMessage, seq int64) (cur *storage.Record, fresh bool, err error) {
	key := storage.DocKey(db, it.ID)
	rec := storage.Record{Rev: it.Rev, Seq: seq, Doc: doc}
	prev, replaced, err := tx.Set(key, rec.Encode(), nil)
	if err != nil {
		return nil, false, err
	}
	if !replaced {
		return nil, true, setSeq(tx, db, seq, it.ID)
	}
	if _, _, err := tx.Set(key, prev, nil); err != nil {
		return nil, false, err
	}
	found, err := storage.DecodeStored(key, prev)
	if err != nil {
		return nil, false, err
	}
	return &found, false, nil
}

// setSeq stores the sequence key of a pushed document's write, with a copy
// of id: a pushed id is the push message's own bytes (wire.DecodePush), and
// the store keeps the value, which would keep the message.
func setSeq(tx storage.Tx, db string, seq int64, id string) error {
	_, _, err := tx.Set(storage.SeqKey(db, seq), strings.Clone(id), nil)
	return err
}

// queueUpdate queues fn on a store that queues (storage.Queuer); on another it
// runs fn to its end first. wait returns fn's outcome.
func (s *Server) queueUpdate(ctx context.Context, fn func(tx storage.Tx) error) (wait func() error, err error) {
	if q, ok := s.store.(storage.Queuer); ok {
		return q.QueueUpdate(ctx, fn)
	}
	done := s.store.Update(ctx, fn)
	return func() error { return done }, nil
}

// pushDone builds a committed push's outcome from what its transaction
// found, and counts it.
func (s *Server) pushDone(db string, since int64, results []wire.PushResult, prevSeq, lastSeq, commitRev int64, accepted, restamped int, own map[string]bool, atCommit []bool) pushOutcome {
	out := pushOutcome{results: results, prevSeq: prevSeq, last: lastSeq, wrote: accepted+restamped > 0}
	if es, ok := s.store.(*storage.Etcd); ok {
		for i := range results {
			if atCommit[i] {
				results[i].Seq = commitRev
			}
		}
		// Nothing proven yet: prevSeq == last moves no checkpoint.
		out.prevSeq, out.last = commitRev, commitRev
		if accepted > 0 && since >= 0 && since <= commitRev && es.OnlyOwn(db, since, commitRev, own) {
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
