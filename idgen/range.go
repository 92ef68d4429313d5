package idgen

import (
	"context"
	"errors"
	"time"
)

// ErrClosed is returned by a generator after Close.
var ErrClosed = errors.New("id generator closed")

// Range is a leased block of numbers Low…High (inclusive) for one HiLo tag,
// as the sync server hands it out.
type Range struct {
	Prefix      string    // id prefix including the separator, e.g. "orders/"
	Low, High   int64     // first and last number of the range
	LastSize    int64     // capacity of this range, sent back on the next lease
	ServerTag   string    // node tag of the server that leased it, e.g. "A"
	LastRangeAt time.Time // when the server leased it
}

// valid reports whether r holds at least one number a HiLo may hand out.
func (r Range) valid() bool { return r.Low >= 1 && r.High >= r.Low }

// RangeSource leases HiLo ranges. NextRange returns a new range for tag;
// last is the range the caller leased before (zero for the first), which
// the server uses to size the next one.
type RangeSource interface {
	NextRange(ctx context.Context, tag string, last Range) (Range, error)
}

// SizedRangeSource is implemented by range sources that can be asked for a
// range of at least want numbers (up to the server's largest range), so a
// bulk write about to take many numbers leases once instead of growing the
// range a round trip at a time. A HiLo asks so when a caller that said
// WithDemand has to wait for a lease.
type SizedRangeSource interface {
	RangeSource
	NextRangeFor(ctx context.Context, tag string, last Range, want int64) (Range, error)
}

// RangeReturner is implemented by range sources that take back the unused
// end of a range, so the numbers are not lost when a generator closes.
type RangeReturner interface {
	ReturnRange(ctx context.Context, tag string, end, last int64) error
}
