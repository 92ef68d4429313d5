package client

import (
	"context"
	"fmt"

	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/internal/wire"
)

var (
	_ idgen.RangeSource   = (*Client)(nil)
	_ idgen.RangeReturner = (*Client)(nil)
)

// NextRange leases the next HiLo range for tag; last is the previous range
// (zero for the first), which sizes the next one.
func (c *Client) NextRange(ctx context.Context, tag string, last idgen.Range) (idgen.Range, error) {
	return c.NextRangeFor(ctx, tag, last, 0)
}

// NextRangeFor leases the next HiLo range for tag holding at least want
// numbers (up to the server's largest range, 1,048,576), or sized as
// NextRange when want is 0. It implements idgen.SizedRangeSource.
func (c *Client) NextRangeFor(ctx context.Context, tag string, last idgen.Range, want int64) (idgen.Range, error) {
	var at string
	if !last.LastRangeAt.IsZero() {
		at = wire.FormatRangeTime(last.LastRangeAt)
	}
	var reply wire.HiloNextReply
	err := c.call(ctx, func(id int64) any {
		return wire.HiloNext{ID: id, Op: wire.OpHiloNext, Tag: tag, LastSize: last.LastSize, LastMax: last.High, LastRangeAt: at, Want: max(want, 0)}
	}, &reply)
	if err != nil {
		return idgen.Range{}, fmt.Errorf("hilo.next %s: %w", tag, err)
	}
	t, _ := wire.ParseRangeTime(reply.LastRangeAt)
	return idgen.Range{Prefix: reply.Prefix, Low: reply.Low, High: reply.High, LastSize: reply.LastSize, ServerTag: reply.ServerTag, LastRangeAt: t}, nil
}

// ReturnRange gives back the numbers after last of the range ending at end.
func (c *Client) ReturnRange(ctx context.Context, tag string, end, last int64) error {
	err := c.call(ctx, func(id int64) any {
		return wire.HiloReturn{ID: id, Op: wire.OpHiloReturn, Tag: tag, End: end, Last: last}
	}, nil)
	if err != nil {
		return fmt.Errorf("hilo.return %s: %w", tag, err)
	}
	return nil
}

// NextIdentity returns the next value of the cluster-wide identity name.
func (c *Client) NextIdentity(ctx context.Context, name string) (int64, error) {
	var reply wire.IdentityReply
	err := c.call(ctx, func(id int64) any {
		return wire.IdentityNext{ID: id, Op: wire.OpIdentityNext, Name: name}
	}, &reply)
	if err != nil {
		return 0, fmt.Errorf("identity.next %s: %w", name, err)
	}
	return reply.Value, nil
}

// NextIdentities allocates the next value of each name in one server
// transaction and returns them in the order of names; a name given several
// times gets successive values. The server bounds how many names one call
// may carry (batch_too_big).
func (c *Client) NextIdentities(ctx context.Context, names []string) ([]int64, error) {
	var reply wire.IdentityBatchReply
	err := c.call(ctx, func(id int64) any {
		return wire.IdentityNextBatch{ID: id, Op: wire.OpIdentityNextBatch, Names: names}
	}, &reply)
	if err != nil {
		return nil, fmt.Errorf("identity.nextBatch: %w", err)
	}
	if len(reply.Values) != len(names) {
		return nil, fmt.Errorf("identity.nextBatch: got %d values for %d names", len(reply.Values), len(names))
	}
	return reply.Values, nil
}

// SeedIdentity sets identity name to value: without force only upwards (the
// current, higher value is returned otherwise); with force exactly.
func (c *Client) SeedIdentity(ctx context.Context, name string, value int64, force bool) (int64, error) {
	var reply wire.IdentityReply
	err := c.call(ctx, func(id int64) any {
		return wire.IdentitySeed{ID: id, Op: wire.OpIdentitySeed, Name: name, Value: value, Force: force}
	}, &reply)
	if err != nil {
		return 0, fmt.Errorf("identity.seed %s: %w", name, err)
	}
	return reply.Value, nil
}
