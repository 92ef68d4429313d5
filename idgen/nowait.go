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

type noWaitKey struct{}

// NoWait returns a context under which NextID and NextNumber answer only
// from numbers at hand and fail with ErrWouldWait otherwise, never waiting:
// for callers that must not block (a JavaScript event loop).
func NoWait(ctx context.Context) context.Context {
	return context.WithValue(ctx, noWaitKey{}, true)
}

func noWait(ctx context.Context) bool { return IsNoWait(ctx) }

// IsNoWait reports whether ctx was made by NoWait, for other sources of
// numbers that must honour it.
func IsNoWait(ctx context.Context) bool {
	v, _ := ctx.Value(noWaitKey{}).(bool)
	return v
}

type demandKey struct{}

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
	d := &demandLeft{}
	d.n.Store(int64(max(n, 0)))
	return context.WithValue(ctx, demandKey{}, d)
}

// demandOf is ctx's WithDemand count, or nil.
func demandOf(ctx context.Context) *demandLeft {
	d, _ := ctx.Value(demandKey{}).(*demandLeft)
	return d
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
