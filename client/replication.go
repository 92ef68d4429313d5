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

// PullReply is one batch of the change feed.
type PullReply = wire.PullReply

// Push sends a batch of writes and returns one result per item, in order.
func (c *Client) Push(ctx context.Context, items []PushItem) ([]PushResult, error) {
	var reply wire.PushReply
	err := c.call(ctx, func(id int64) any {
		return wire.Push{ID: id, Op: wire.OpPush, Changes: items}
	}, &reply)
	if err != nil {
		return nil, fmt.Errorf("push: %w", err)
	}
	if len(reply.Results) != len(items) {
		return nil, fmt.Errorf("push: %d results for %d items", len(reply.Results), len(items))
	}
	return reply.Results, nil
}

// Pull returns up to limit changes after sequence since (0 for all).
func (c *Client) Pull(ctx context.Context, since int64, limit int) (PullReply, error) {
	var reply wire.PullReply
	err := c.call(ctx, func(id int64) any {
		return wire.Pull{ID: id, Op: wire.OpPull, Since: since, Limit: limit}
	}, &reply)
	if err != nil {
		return reply, fmt.Errorf("pull: %w", err)
	}
	return reply, nil
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
	var msg wire.ChangesMsg
	if err := json.Unmarshal(data, &msg); err != nil {
		return
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	sub.fn(msg.Changes, msg.Last)
}
