package idgen

import "time"

// SetReserveRetry sets how long a generator waits before it tries a failed
// background lease again, until the returned func restores it. Tests that
// call it must not run in parallel.
func SetReserveRetry(d time.Duration) (restore func()) {
	old := reserveRetry
	reserveRetry = d
	return func() { reserveRetry = old }
}
