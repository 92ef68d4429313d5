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

// WaitBackground waits for the generator's background work under way: a
// lease for the reserve, or a journal write ahead (JournalAhead).
func (h *HiLo) WaitBackground() { h.wg.Wait() }
