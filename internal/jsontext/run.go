package jsontext

import (
	"encoding/binary"
	"math/bits"
)

// Word-wide byte masks for PlainRun.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
	quote = '"' * ones
	slash = '\\' * ones
	space = 0x20 * ones
)

// PlainRun returns the index of the first byte of b at or after i that a
// JSON string cannot hold as it is (a quote, a backslash or a control byte
// below 0x20), or len(b) if there is none. It reads eight bytes at a time:
// under WebAssembly, where a byte loop costs several instructions a byte
// (many more before the engine has optimized it), this is what makes the
// scanners' time per document small.
func PlainRun(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		// A byte of x is flagged when it is zero (or, after the first
		// flagged byte only, by the borrow from it), so the lowest flag of
		// each mask, and of their union, is exact.
		q, s := w^quote, w^slash
		m := (q-ones)&^q | (s-ones)&^s | (w-space)&^w
		if m &= highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}
