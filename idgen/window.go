package idgen

import (
	"math/bits"
	"strconv"
	"sync/atomic"
	"unsafe"
)

// window is one leased range, in use or held in reserve. next is advanced
// atomically; a value past r.High means the range is spent.
type window struct {
	r          Range
	next       atomic.Int64 // last number taken
	mark       atomic.Int64 // numbers up to mark are journaled (with a Journal); written under HiLo.jmu
	prefetchAt int64        // taking this number starts the next lease; 0: never
	aheadAt    atomic.Int64 // taking this number starts the next journal write in the background (JournalAhead); noAhead: none due
	suffix     string       // "-" + server tag
	arena      atomic.Pointer[arena]
}

func newWindow(r Range, resumeAfter int64, prefetch float64) *window {
	w := &window{r: r, suffix: "-" + r.ServerTag}
	w.next.Store(resumeAfter)
	w.mark.Store(resumeAfter)
	w.aheadAt.Store(noAhead)
	if prefetch > 0 {
		left := int64(float64(r.High-r.Low+1) * prefetch)
		if left < 1 {
			left = 1
		}
		if at := r.High - left + 1; at > resumeAfter {
			w.prefetchAt = at
		} else {
			w.prefetchAt = resumeAfter + 1
		}
	}
	return w
}

// arenaSize is the size of the blocks ids are cut from. One allocation
// serves about arenaSize/len(id) ids; the price is that an id kept alive
// keeps its whole block alive (at most arenaSize bytes).
const arenaSize = 512

// arena is a block that ids are cut from. Bytes below off are taken; each
// id's bytes are written once, by the caller who reserved them, before the
// string is made, and never again, so the strings are immutable.
type arena struct {
	buf []byte
	off atomic.Int64
}

// format returns prefix+n+suffix. The id is cut from the window's current
// arena block (no allocation for most ids), and the digits are written
// straight into it.
func (w *window) format(n int64) string {
	nd := decimalLen(uint64(n))
	size := int64(len(w.r.Prefix) + nd + len(w.suffix))
	if size > arenaSize/4 || n < 0 {
		b := make([]byte, 0, size)
		b = strconv.AppendInt(append(b, w.r.Prefix...), n, 10)
		return string(append(b, w.suffix...))
	}
	for {
		a := w.arena.Load()
		if a != nil {
			if end := a.off.Add(size); end <= arenaSize {
				b := a.buf[end-size : end : end]
				p := copy(b, w.r.Prefix)
				putDecimal(b[p:p+nd], uint64(n))
				for i := 0; i < len(w.suffix); i++ {
					b[p+nd+i] = w.suffix[i]
				}
				return unsafe.String(&b[0], len(b))
			}
		}
		w.arena.CompareAndSwap(a, &arena{buf: make([]byte, arenaSize)})
	}
}

// decimalLen returns the number of decimal digits of v, from its bit
// length (1233/4096 ≈ log10 2) and one comparison.
func decimalLen(v uint64) int {
	if v == 0 {
		return 1
	}
	t := bits.Len64(v) * 1233 >> 12
	if v < pow10[t] {
		return t
	}
	return t + 1
}

var pow10 = [20]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

// putDecimal writes v into b, which is exactly decimalLen(v) long.
func putDecimal(b []byte, v uint64) {
	i := len(b)
	for v >= 100 {
		q := v / 100
		r := (v - q*100) * 2
		i -= 2
		b[i], b[i+1] = digitPairs[r], digitPairs[r+1]
		v = q
	}
	if v >= 10 {
		b[i-2], b[i-1] = digitPairs[v*2], digitPairs[v*2+1]
		return
	}
	b[i-1] = byte('0' + v)
}
