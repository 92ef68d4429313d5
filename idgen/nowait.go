package idgen

import (
	"context"
	"errors"
	"sync/atomic"
)

// ErrWouldWait is returned, under NoWait, by a call that would have to wait
// for a lease or a journal write. Nothing was taken: call again without
// NoWait.
var ErrWouldWait = errors.New("would wait for a lease or the journal")

// takeOpts is what NoWait and WithDemand tell a take, kept under one
// context key so that a take looks the context up once.
type takeOpts struct {
	noWait bool
	demand *demandLeft
}

type takeKey struct{}

// takeOptsOf returns what ctx tells a take (the zero value: nothing).
func takeOptsOf(ctx context.Context) takeOpts {
	o, _ := ctx.Value(takeKey{}).(takeOpts)
	return o
}

// NoWait returns a context under which NextID and NextNumber answer only
// from numbers at hand and fail with ErrWouldWait otherwise, never waiting:
// for callers that must not block (a JavaScript event loop).
func NoWait(ctx context.Context) context.Context {
	o := takeOptsOf(ctx)
	o.noWait = true
	return context.WithValue(ctx, takeKey{}, o)
}

// IsNoWait reports whether ctx was made by NoWait, for other sources of
// numbers that must honour it.
func IsNoWait(ctx context.Context) bool { return takeOptsOf(ctx).noWait }

// demandLeft counts down the numbers a WithDemand context has yet to take.
type demandLeft struct{ n atomic.Int64 }

// WithDemand returns a context that tells NextID and NextNumber about n
// more numbers about to be taken in a row (a bulk write); each take under
// it counts one off. A journal write made on the way covers what is left,
// up to the end of the current range, so the bulk write journals once per
// range instead of a step at a time; and a lease it needs (foreground or
// the background one that Prefetch and Reserve start) asks a
// SizedRangeSource for at least what the ranges at hand are short of, so
// the bulk write leases once instead of growing the range a round trip at
// a time.
func WithDemand(ctx context.Context, n int) context.Context {
	o := takeOptsOf(ctx)
	o.demand = &demandLeft{}
	o.demand.n.Store(int64(max(n, 0)))
	return context.WithValue(ctx, takeKey{}, o)
}

// left is what is yet to be taken, counting the take under way; 0 for nil.
func (d *demandLeft) left() int64 {
	if d == nil {
		return 0
	}
	return max(d.n.Load(), 0)
}

// took counts one number off (nil: nothing to count).
func (d *demandLeft) took() {
	if d != nil {
		d.n.Add(-1)
	}
}
