package core

import "time"

// SetClockNow replaces a clock's wall clock, for tests.
func SetClockNow(c *Clock, now func() time.Time) { c.now = now }
