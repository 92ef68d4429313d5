package uuid

import (
	"sync"
	"time"

	"github.com/hilodb/hilodb/internal/hostrand"
)

// v7 holds the last time and counter NewV7 used, so that the UUIDs of
// one process sort in the order they were made, also within a millisecond.
var v7 struct {
	mu    sync.Mutex
	ms    int64
	count uint16 // 12 bits: rand_a of RFC 9562 §6.2, method 1
}

// NewV7 returns a time-ordered UUID (RFC 9562, version 7) in its
// lower-case 36-character form, e.g. "0195f3a2-7c1e-7000-8a3b-1f2e3d4c5b6a":
// 48 bits of Unix milliseconds, a 12-bit counter that orders the UUIDs made
// in one millisecond, and 62 random bits. A store that has never leased a
// HiLo range makes its ids from them offline ("todos/0195f3a2-…"): they
// cannot be told apart from nothing the server hands out, and two devices
// collide only if they draw the same 62 random bits in the same
// millisecond at the same counter. Ids made from them sort by the time
// they were made, as HiLo ids of one range do.
//
// It is safe for concurrent use.
func NewV7() string {
	var u [16]byte
	hostrand.Read(u[:])
	v7.mu.Lock()
	ms := time.Now().UnixMilli()
	if ms <= v7.ms {
		// The same millisecond (or a clock set back): count on from the
		// last, moving to the next millisecond when the counter is full.
		ms = v7.ms
		v7.count++
		if v7.count > 0x0fff {
			ms++
			v7.count = 0
		}
	} else {
		v7.count = uint16(u[6]&0x07)<<8 | uint16(u[7]) // a random start below half, room to count
	}
	v7.ms = ms
	count := v7.count
	v7.mu.Unlock()
	u[0], u[1], u[2], u[3], u[4], u[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	u[6] = 0x70 | byte(count>>8)
	u[7] = byte(count)
	u[8] = u[8]&0x3f | 0x80
	return UUID(u).String()
}
