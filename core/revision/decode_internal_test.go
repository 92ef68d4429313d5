package revision

import (
	"fmt"
	"testing"
)

// refDecode is Decode as a loop over the digits, checking each.
func refDecode(rev string) (v uint64, node string, err error) {
	if len(rev) <= ClockLen {
		return 0, "", fmt.Errorf("%w %q: too short", ErrMalformed, rev)
	}
	if revIndex[rev[0]] < 0 || revIndex[rev[0]] > 15 {
		return 0, "", fmt.Errorf("%w %q", ErrMalformed, rev)
	}
	for i := 0; i < ClockLen; i++ {
		d := revIndex[rev[i]]
		if d < 0 {
			return 0, "", fmt.Errorf("%w %q: byte %q at offset %d", ErrMalformed, rev, rev[i], i)
		}
		v = v<<6 | uint64(d)
	}
	return v, rev[ClockLen:], nil
}

// FuzzDecodeAgainstLoop holds Decode to the loop: the same value,
// node and error text for any input.
func FuzzDecodeAgainstLoop(f *testing.F) {
	for _, s := range []string{"_l6zhVDW---A", "", "_l6zhVDW---", "Zl6zhVDW---A", "_l6zh!DW---A", "9999999999-x", "P----------node"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rev string) {
		v, node, err := Decode(rev)
		wv, wnode, werr := refDecode(rev)
		if v != wv || node != wnode || (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
			t.Fatalf("Decode(%q) = %d %q %v, want %d %q %v", rev, v, node, err, wv, wnode, werr)
		}
	})
}
