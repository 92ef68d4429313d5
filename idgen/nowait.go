package idgen

import (
	"context"
	"errors"
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

// WithDemand returns a context that tells NextID and NextNumber about n
// more numbers about to be taken in a row (a bulk write): a journal write
// made on the way covers them all, up to the end of the current range, so
// the bulk write journals once per range instead of a step at a time.
func WithDemand(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, demandKey{}, int64(n))
}

// demand is the count given to WithDemand, or 0.
func demand(ctx context.Context) int64 {
	v, _ := ctx.Value(demandKey{}).(int64)
	return v
}
