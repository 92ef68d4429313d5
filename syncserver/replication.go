package syncserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/hilodb/hilodb/internal/jsontext"
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
	results, prev, last, err := c.srv.push(ctx, c.db, changes)
	if err != nil {
		return nil, err
	}
	reply := wire.PushReply{ID: id, OK: true, Results: results, PrevSeq: prev, Last: last}
	if last == prev {
		return reply, nil // nothing new for subscribers
	}
	// Subscribers hear of the writes once the reply is sent, so this
	// connection's own feed never brings them back before their
	// acknowledgement.
	db := c.db
	return replyThen{reply: reply, then: func() { c.srv.hub.notify(db) }}, nil
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
// sequence: the server never gave it out, and reading from it would move
// the client's checkpoint somewhere it never was.
func (s *Server) checkSince(db string, since int64) error {
	if since < 0 {
		return badRequest("since must be >= 0")
	}
	var last int64
	err := s.store.view(func(tx kvTx) error {
		var err error
		last, err = getInt(tx, seqCounterKey(db))
		return err
	})
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

// stream sends changes after since whenever the hub signals new writes.
func (c *conn) stream(ctx context.Context, db string, since int64, wake <-chan struct{}, stop <-chan struct{}) {
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

// compactLoop removes expired tombstones every interval until ctx ends.
func (s *Server) compactLoop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := s.CompactTombstones(ctx); err != nil {
				s.log.Error("compact tombstones", "err", err)
			} else if n > 0 {
				s.log.Info("compacted tombstones", "removed", n)
			}
		}
	}
}

// CompactTombstones removes the tombstones older than Config.TombstoneTTL
// now and returns how many it removed.
func (s *Server) CompactTombstones(ctx context.Context) (int, error) {
	return s.compactTombstones(ctx, s.now())
}

// Replication limits.
const (
	defaultPullLimit    = 1000
	maxPullLimit        = 10000
	defaultPullBytes    = 4 << 20
	maxDocIDLen         = 1024
	defaultTombstoneTTL = 30 * 24 * time.Hour
)

// docRecord is the server's state of one replicated document. A tombstone
// has Deleted set and no Doc; At (Unix milliseconds) dates it for compaction.
type docRecord struct {
	Rev     string          `json:"rev"`
	Seq     int64           `json:"seq"`
	Deleted bool            `json:"deleted,omitempty"`
	At      int64           `json:"at,omitempty"`
	Doc     json.RawMessage `json:"doc,omitempty"`
}

func docKey(db, id string) string { return "rdoc/" + db + "/" + id }
func seqKey(db string, seq int64) string {
	return "rseq/" + db + "/" + fmt.Sprintf("%020d", seq)
}

// seqCounterPrefix prefixes each database's change sequence counter; a
// repair raises it like the other counters, so no sequence is reused.
const seqCounterPrefix = "rctr/"

func seqCounterKey(db string) string { return seqCounterPrefix + db }
func purgedKey(db string) string     { return "rpurged/" + db }

// encode writes the record as compact JSON by hand: the document is copied
// as it is (already compact), not decoded and encoded again.
func (r *docRecord) encode() string {
	b := make([]byte, 0, len(r.Doc)+len(r.Rev)+64)
	b = append(b, `{"rev":`...)
	b = jsontext.AppendString(b, r.Rev)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	if r.Deleted {
		b = append(b, `,"deleted":true`...)
	}
	if r.At != 0 {
		b = append(b, `,"at":`...)
		b = strconv.AppendInt(b, r.At, 10)
	}
	if len(r.Doc) > 0 {
		b = append(b, `,"doc":`...)
		b = append(b, r.Doc...)
	}
	return string(append(b, '}'))
}

// getRecord reads the record of id; found is false when there is none.
func getRecord(tx kvTx, db, id string) (rec docRecord, found bool, err error) {
	v, err := tx.Get(docKey(db, id))
	if errors.Is(err, buntdb.ErrNotFound) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, err
	}
	if !gjson.Valid(v) {
		return rec, false, fmt.Errorf("decode stored %s: not JSON", docKey(db, id))
	}
	m := gjson.Parse(v)
	rec.Rev = m.Get("rev").String()
	rec.Seq = m.Get("seq").Int()
	rec.Deleted = m.Get("deleted").Bool()
	rec.At = m.Get("at").Int()
	if d := m.Get("doc"); d.Exists() {
		rec.Doc = json.RawMessage(d.Raw)
	}
	return rec, true, nil
}

// current renders a record as the conflict reply's "current": the stored
// document with _id and _rev inside, or a tombstone.
func (r *docRecord) current(id string) json.RawMessage {
	if r.Deleted {
		b, _ := json.Marshal(map[string]any{"_id": id, "_rev": r.Rev, "_deleted": true})
		return b
	}
	return r.Doc
}

// validDocID accepts 1 to 1024 bytes of UTF-8 without control characters.
func validDocID(id string) bool {
	if len(id) == 0 || len(id) > maxDocIDLen || !utf8.ValidString(id) {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x20 || id[i] == 0x7f {
			return false
		}
	}
	return true
}

// sameWrite reports whether a write of deleted and doc is the one stored in
// cur (a retry), comparing content rather than bytes when they differ.
func sameWrite(cur *docRecord, deleted bool, doc json.RawMessage) bool {
	if cur.Deleted || deleted {
		return cur.Deleted == deleted
	}
	if bytes.Equal(cur.Doc, doc) {
		return true
	}
	a, errA := decodeNumbers(cur.Doc)
	b, errB := decodeNumbers(doc)
	return errA == nil && errB == nil && reflect.DeepEqual(a, b)
}

func decodeNumbers(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// normalizeDoc checks that doc is a JSON object without repeated top-level
// members and returns it with _id and _rev set to id and rev.
func normalizeDoc(doc json.RawMessage, id, rev string) (json.RawMessage, error) {
	doc = bytes.TrimSpace(doc)
	if len(doc) == 0 || doc[0] != '{' || !gjson.ValidBytes(doc) {
		return nil, errors.New("doc must be a JSON object")
	}
	// Readers disagree on a repeated member (the first wins here, the last
	// in JavaScript), so a document could say two things at once.
	var dup string
	repeated := false
	seen := map[string]struct{}{}
	gjson.ParseBytes(doc).ForEach(func(k, _ gjson.Result) bool {
		if _, ok := seen[k.Str]; ok {
			dup, repeated = k.Str, true
			return false
		}
		seen[k.Str] = struct{}{}
		return true
	})
	if repeated {
		return nil, fmt.Errorf("doc has the member %s more than once", quote(truncate(dup, 100)))
	}
	if gjson.GetBytes(doc, "_id").String() == id && gjson.GetBytes(doc, "_rev").String() == rev {
		// Stored compact: the data file's records must not hold raw
		// newlines, and the feed should not carry the client's spacing.
		if !bytes.ContainsAny(doc, " \t\r\n") {
			return doc, nil // compact already (clients send it so)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, doc); err != nil {
			return nil, fmt.Errorf("doc must be a JSON object: %w", err)
		}
		return buf.Bytes(), nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, fmt.Errorf("doc must be a JSON object: %w", err)
	}
	m["_id"], _ = json.Marshal(id)
	m["_rev"], _ = json.Marshal(rev)
	return json.Marshal(m)
}

// push applies a batch of writes in one transaction and one fsync. Each item
// is accepted when the stored _rev equals its baseRev (or the document is
// absent or a tombstone and baseRev is empty); an item whose rev is already
// the stored _rev is a retry and answered ok with that write's sequence.
func (s *Server) push(ctx context.Context, db string, items []wire.PushItem) (results []wire.PushResult, prevSeq, lastSeq int64, err error) {
	results = make([]wire.PushResult, len(items))
	docs := make([]json.RawMessage, len(items))
	for i, it := range items {
		results[i].ID = it.ID
		switch {
		case !validDocID(it.ID):
			results[i].Error = &wire.Error{Code: wire.CodeBadDoc, Num: wire.NumBadDoc, Message: "id must be 1 to 1024 bytes of UTF-8 without control characters"}
		case it.Rev == "" || len(it.Rev) > 256:
			results[i].Error = &wire.Error{Code: wire.CodeBadDoc, Num: wire.NumBadDoc, Message: "rev must be 1 to 256 bytes"}
		case !it.Deleted:
			d, err := normalizeDoc(it.Doc, it.ID, it.Rev)
			if err != nil {
				results[i].Error = &wire.Error{Code: wire.CodeBadDoc, Num: wire.NumBadDoc, Message: err.Error()}
			}
			docs[i] = d
		}
	}
	accepted := 0
	now := s.now().UnixMilli()
	checked := append([]wire.PushResult(nil), results...)
	err = s.store.update(ctx, func(tx kvTx) error {
		accepted = 0
		copy(results, checked) // a rerun starts from the checks alone
		if p, ok := tx.(prefetcher); ok {
			keys := []string{seqCounterKey(db)}
			for i, it := range items {
				if results[i].Error == nil {
					keys = append(keys, docKey(db, it.ID))
				}
			}
			if err := p.prefetch(keys); err != nil {
				return err
			}
		}
		seq, err := getInt(tx, seqCounterKey(db))
		if err != nil {
			return err
		}
		prevSeq = seq
		defer func() { lastSeq = seq }()
		// Records read or written by this batch, so two items for one id
		// see each other and a document is read once.
		batch := map[string]*docRecord{}
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
					continue
				}
				res.OK, res.Seq = true, cur.Seq // a retry of a write already applied
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
					}
					continue
				}
			case cur.Rev != it.BaseRev:
				res.Error = &wire.Error{Code: wire.CodeConflict, Num: wire.NumConflict, Message: fmt.Sprintf("conflict, _rev values do not match: server has %q, write was based on %q", cur.Rev, it.BaseRev)}
				current(res, cur)
				continue
			}
			seq++
			rec := &docRecord{Rev: it.Rev, Seq: seq, Deleted: it.Deleted, Doc: docs[i]}
			if it.Deleted {
				rec.At = now
			}
			if cur != nil {
				if _, err := tx.Delete(seqKey(db, cur.Seq)); err != nil && !errors.Is(err, buntdb.ErrNotFound) {
					return err
				}
			}
			if _, _, err := tx.Set(docKey(db, it.ID), rec.encode(), nil); err != nil {
				return err
			}
			if _, _, err := tx.Set(seqKey(db, seq), it.ID, nil); err != nil {
				return err
			}
			batch[it.ID] = rec
			res.OK, res.Seq = true, seq
			accepted++
		}
		if accepted > 0 {
			return setInt(tx, seqCounterKey(db), seq)
		}
		return nil
	})
	if err != nil {
		return nil, 0, 0, err
	}
	for i := range results {
		if results[i].Error != nil && results[i].Error.Code == wire.CodeConflict {
			s.metrics.countError(wire.CodeConflict)
		}
	}
	s.metrics.docsPushed.Add(int64(accepted))
	return results, prevSeq, lastSeq, nil
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
	out := wire.PullReply{OK: true, Changes: []wire.Change{}, Last: since}
	err := s.store.view(func(tx kvTx) error {
		var err error
		if out.PurgedSeq, err = getInt(tx, purgedKey(db)); err != nil {
			return err
		}
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

// compactTombstones removes tombstones older than the configured time and
// raises each database's purged sequence, so clients behind it resync.
func (s *Server) compactTombstones(ctx context.Context, now time.Time) (int, error) {
	cutoff := now.Add(-s.tombstoneTTL()).UnixMilli()
	type victim struct {
		db, id string
		seq    int64
	}
	var victims []victim
	err := s.store.view(func(tx kvTx) error {
		var err error
		tx.AscendKeys("rdoc/*", func(key, val string) bool {
			if !gjson.Get(val, "deleted").Bool() || gjson.Get(val, "at").Int() > cutoff {
				return true
			}
			rest := key[len("rdoc/"):]
			i := indexByte(rest, '/')
			if i < 0 {
				return true
			}
			victims = append(victims, victim{db: rest[:i], id: rest[i+1:], seq: gjson.Get(val, "seq").Int()})
			return true
		})
		return err
	})
	if err != nil || len(victims) == 0 {
		return 0, err
	}
	removed := 0
	err = s.store.update(ctx, func(tx kvTx) error {
		removed = 0
		for _, v := range victims {
			rec, found, err := getRecord(tx, v.db, v.id)
			if err != nil {
				return err
			}
			if !found || !rec.Deleted || rec.Seq != v.seq {
				continue // written again since the scan
			}
			if _, err := tx.Delete(docKey(v.db, v.id)); err != nil {
				return err
			}
			if _, err := tx.Delete(seqKey(v.db, v.seq)); err != nil && !errors.Is(err, buntdb.ErrNotFound) {
				return err
			}
			purged, err := getInt(tx, purgedKey(v.db))
			if err != nil {
				return err
			}
			if v.seq > purged {
				if err := setInt(tx, purgedKey(v.db), v.seq); err != nil {
					return err
				}
			}
			removed++
		}
		return nil
	})
	return removed, err
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func (s *Server) tombstoneTTL() time.Duration {
	if s.cfg.TombstoneTTL > 0 {
		return s.cfg.TombstoneTTL
	}
	return defaultTombstoneTTL
}

// hub wakes the live subscribers of a database after accepted writes. A
// wake-up is a signal, not data: each subscriber pulls from its own
// checkpoint, so a slow one never holds up the others or piles up memory.
type hub struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

func newHub() *hub { return &hub{subs: make(map[string]map[chan struct{}]struct{})} }

func (h *hub) add(db string) chan struct{} {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs[db] == nil {
		h.subs[db] = make(map[chan struct{}]struct{})
	}
	h.subs[db][ch] = struct{}{}
	h.mu.Unlock()
	return ch
}

func (h *hub) remove(db string, ch chan struct{}) {
	h.mu.Lock()
	delete(h.subs[db], ch)
	h.mu.Unlock()
}

func (h *hub) notify(db string) {
	h.mu.Lock()
	for ch := range h.subs[db] {
		select {
		case ch <- struct{}{}:
		default: // already signalled
		}
	}
	h.mu.Unlock()
}

// notifyAll wakes the subscribers of every database.
func (h *hub) notifyAll() {
	h.mu.Lock()
	for _, subs := range h.subs {
		for ch := range subs {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	h.mu.Unlock()
}
