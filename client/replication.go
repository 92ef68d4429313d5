package client

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/hilodb/hilodb/internal/wire"
	"github.com/tidwall/gjson"
)

// PushItem is one local write sent to the server (docs/protocol.md, push).
type PushItem = wire.PushItem

// PushResult is the server's answer for one PushItem.
type PushResult = wire.PushResult

// Change is one document's latest state in the server's change feed.
type Change = wire.Change

// LostWrite is a pushed write the server refused against a Change's version.
type LostWrite = wire.LostWrite

// PullReply is one batch of the change feed.
type PullReply = wire.PullReply

// PushOutcome is the server's answer to a push: one result per item, in
// order, and the database's change sequence before (PrevSeq) and after
// (Last) the push.
type PushOutcome struct {
	Results       []PushResult
	PrevSeq, Last int64
}

// Push sends a batch of writes and returns one result per item, in order.
// Each document must be a JSON object.
func (c *Client) Push(ctx context.Context, items []PushItem) (PushOutcome, error) {
	return c.PushSince(ctx, -1, items)
}

// PushSince is Push telling the server the client's checkpoint since, so
// that a server whose sequence has gaps (a cluster on etcd) can answer
// PrevSeq equal to it when nothing but this push changed the database
// after it (docs/protocol.md, push). A negative since tells nothing.
func (c *Client) PushSince(ctx context.Context, since int64, items []PushItem) (PushOutcome, error) {
	for _, it := range items {
		if !it.Deleted && (len(it.Doc) == 0 || !gjson.ValidBytes(it.Doc)) {
			return PushOutcome{}, fmt.Errorf("push %s: the document is not valid JSON", it.ID)
		}
	}
	return c.PushChecked(ctx, since, items)
}

// PushChecked is PushSince for documents the caller has already checked
// are valid JSON, as a core.Store does on every write: they are not
// checked again (a push of thousands spends a good share of its time
// there under WebAssembly). A document that is not valid JSON fails the
// whole push: the server answers bad_json for the request.
func (c *Client) PushChecked(ctx context.Context, since int64, items []PushItem) (PushOutcome, error) {
	size := 64
	for _, it := range items {
		size += len(it.Doc) + len(it.ID) + len(it.BaseRev) + len(it.Rev) + 48
	}
	reply := pushReply{n: len(items)}
	err := c.call(ctx, func(id int64) any { return appendPush(make([]byte, 0, size), id, since, items) }, &reply)
	if err != nil {
		return PushOutcome{}, fmt.Errorf("push: %w", err)
	}
	if len(reply.Results) != len(items) {
		return PushOutcome{}, fmt.Errorf("push: %d results for %d items", len(reply.Results), len(items))
	}
	for i := range reply.Results {
		if r := &reply.Results[i]; r.ID == "" {
			r.ID = items[i].ID // accepted, in a brief reply
		}
	}
	return reply.PushOutcome, nil
}

// appendPush encodes a push request (wire.AppendPushBrief: the documents
// are copied as they are, not decoded and encoded again; a server that
// knows brief replies lists only the items it did not accept).
func appendPush(b []byte, id, since int64, items []PushItem) rawFrame {
	return wire.AppendPushBrief(b, id, since, items)
}

// pushReply decodes a push reply of n items in either form, keeping each
// "current" document as the bytes it came in.
type pushReply struct {
	PushOutcome
	n int
}

func (r *pushReply) decodeReply(data []byte) error {
	res, prev, last, err := wire.DecodePushReplyN(data, r.n)
	if err != nil {
		return err
	}
	r.Results, r.PrevSeq, r.Last = res, prev, last
	return nil
}

// Pull returns up to limit changes after sequence since (0 for all).
func (c *Client) Pull(ctx context.Context, since int64, limit int) (PullReply, error) {
	return c.pull(ctx, wire.Pull{Since: since, Limit: limit})
}

// PullWithCollections is Pull that also asks for the database's collection
// definitions, which the server sends with the last page (More false), so
// that a pull to the end needs no Collections call after it. defs is nil
// when the reply has none: a page with more to come, or a server that does
// not send them (ask with Collections then).
func (c *Client) PullWithCollections(ctx context.Context, since int64, limit int) (reply PullReply, defs []CollectionDef, err error) {
	reply, err = c.pull(ctx, wire.Pull{Since: since, Limit: limit, Collections: true, Indexes: true})
	if err != nil || reply.Collections == nil {
		return reply, nil, err
	}
	defs = []CollectionDef{}
	if err := json.Unmarshal(reply.Collections, &defs); err != nil {
		return reply, nil, fmt.Errorf("pull: collections in the reply: %w", err)
	}
	return reply, defs, nil
}

func (c *Client) pull(ctx context.Context, req wire.Pull) (PullReply, error) {
	reply := pullReply{expect: min(max(req.Limit, 0), maxExpected)}
	err := c.call(ctx, func(id int64) any {
		req.ID, req.Op = id, wire.OpPull
		return req
	}, &reply)
	if err != nil {
		return reply.PullReply, fmt.Errorf("pull: %w", err)
	}
	return reply.PullReply, nil
}

// pullReply decodes a pull reply with gjson, keeping each document as the
// bytes it came in. expect is how many changes it may hold (the limit
// asked for): room for them is made at once, instead of growing the slice
// (and moving every change) a doubling at a time.
type pullReply struct {
	wire.PullReply
	expect int
}

// maxExpected bounds the changes a pull reply makes room for before it
// has read them.
const maxExpected = 10000

// minChangeLen is the fewest bytes a change takes in a reply's array:
// {"seq":1,"id":"x","rev":"y"} and a comma.
const minChangeLen = 30

func (r *pullReply) decodeReply(data []byte) error {
	if r.decodePullFast(data) {
		return nil
	}
	return r.decodePullGJSON(data)
}

// decodePullGJSON decodes any pull reply with gjson.
func (r *pullReply) decodePullGJSON(data []byte) error {
	// One walk over the reply: asking gjson for each field in turn walked
	// the megabytes of changes once per field after them.
	var changes, id, last, more, purged, collections gjson.Result
	gjson.ParseBytes(data).ForEach(func(k, v gjson.Result) bool {
		switch k.String() {
		case "changes":
			wire.FirstOf(&changes, v)
		case "id":
			wire.FirstOf(&id, v)
		case "last":
			wire.FirstOf(&last, v)
		case "more":
			wire.FirstOf(&more, v)
		case "purgedSeq":
			wire.FirstOf(&purged, v)
		case "collections":
			wire.FirstOf(&collections, v)
		}
		return true
	})
	if !changes.IsArray() {
		return fmt.Errorf("no changes in %.200s", data)
	}
	r.OK = true
	r.ID = id.Int()
	r.Last = last.Int()
	r.More = more.Bool()
	r.PurgedSeq = purged.Int()
	if collections.Exists() {
		r.Collections = json.RawMessage(collections.Raw)
	}
	r.Changes = decodeChanges(changes, r.expect)
	return nil
}

// decodeChanges reads a JSON array of changes, walking each change once,
// into a slice with room for up to expect of them: as many as the array's
// text could hold (a change takes at least minChangeLen bytes), so a
// small reply makes small room.
func decodeChanges(arr gjson.Result, expect int) []Change {
	out := make([]Change, 0, min(expect, len(arr.Raw)/minChangeLen))
	arr.ForEach(func(_, v gjson.Result) bool {
		var seq, id, rev, deleted, doc, lost gjson.Result
		v.ForEach(func(k, f gjson.Result) bool {
			switch k.String() {
			case "lost":
				wire.FirstOf(&lost, f)
			case "seq":
				wire.FirstOf(&seq, f)
			case "id":
				wire.FirstOf(&id, f)
			case "rev":
				wire.FirstOf(&rev, f)
			case "deleted":
				wire.FirstOf(&deleted, f)
			case "doc":
				wire.FirstOf(&doc, f)
			}
			return true
		})
		ch := Change{Seq: seq.Int(), ID: id.String(), Rev: rev.String(), Deleted: deleted.Bool()}
		if doc.Exists() {
			ch.Doc = json.RawMessage(doc.Raw)
		}
		if lost.IsArray() && json.Unmarshal([]byte(lost.Raw), &ch.Lost) != nil {
			ch.Lost = nil // a malformed list is no list
		}
		out = append(out, ch)
		return true
	})
	return out
}

// subscriber receives live changes of the current connection.
type subscriber struct {
	mu sync.Mutex
	fn func(changes []Change, last int64)
}

// Subscribe asks the server to stream changes after since on the current
// connection; fn is called with each batch, in order, from the client's
// reader (it must not block for long: it holds up the connection). The
// subscription ends with the connection: after ErrDisconnected, subscribe
// again from the last checkpoint fn saw.
func (c *Client) Subscribe(ctx context.Context, since int64, fn func(changes []Change, last int64)) error {
	c.mu.Lock()
	c.sub = &subscriber{fn: fn}
	c.mu.Unlock()
	err := c.call(ctx, func(id int64) any {
		return wire.Subscribe{ID: id, Op: wire.OpSubscribe, Since: since}
	}, nil)
	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	return nil
}

// Done returns a channel closed when the current connection ends, or nil
// when there is none.
func (c *Client) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == nil {
		return nil
	}
	return c.sess.done
}

func (c *Client) dispatchServerMessage(data []byte) {
	if gjson.GetBytes(data, "op").String() != wire.OpChanges {
		return // unknown server messages are ignored, so servers can add more
	}
	c.mu.Lock()
	sub := c.sub
	c.mu.Unlock()
	if sub == nil {
		return
	}
	// The same shape as a pull reply's changes and last: read the same way.
	r := pullReply{expect: maxExpected}
	if !r.decodePullFast(data) {
		msg := gjson.ParseBytes(data)
		changes := msg.Get("changes")
		if !changes.IsArray() {
			return
		}
		r.Changes, r.Last = decodeChanges(changes, 0), msg.Get("last").Int()
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	sub.fn(r.Changes, r.Last)
}

// Get returns the server's current version of each document, in the order
// of ids: a Change with an empty Rev for an id the server has no version
// of, Deleted for a deleted one.
func (c *Client) Get(ctx context.Context, ids []string) ([]Change, error) {
	// The server takes each id once; a repeated one shares its answer.
	uniq := make([]string, 0, len(ids))
	at := make(map[string]int, len(ids))
	for _, id := range ids {
		if _, ok := at[id]; !ok {
			at[id] = len(uniq)
			uniq = append(uniq, id)
		}
	}
	var reply getReply
	err := c.call(ctx, func(id int64) any {
		return wire.Get{ID: id, Op: wire.OpGet, IDs: uniq}
	}, &reply)
	if err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	if len(reply.docs) != len(uniq) {
		return nil, fmt.Errorf("get: %d documents for %d ids", len(reply.docs), len(uniq))
	}
	if len(uniq) == len(ids) {
		return reply.docs, nil
	}
	out := make([]Change, len(ids))
	for i, id := range ids {
		out[i] = reply.docs[at[id]]
	}
	return out, nil
}

type getReply struct{ docs []Change }

func (r *getReply) decodeReply(data []byte) error {
	docs := gjson.GetBytes(data, "docs")
	if !docs.IsArray() {
		return fmt.Errorf("no docs in %.200s", data)
	}
	r.docs = decodeChanges(docs, 0)
	return nil
}
