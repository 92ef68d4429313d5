package core

import "time"

// SetClockNow replaces a clock's wall clock, for tests.
func SetClockNow(c *Clock, now func() time.Time) { c.now = now }

// TickN reserves n clock values at the wall clock's time, for tests.
func TickN(c *Clock, n uint64) uint64 { return c.tickN(c.now().UnixMilli(), n) }
