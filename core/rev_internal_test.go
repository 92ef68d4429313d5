package core

import "testing"

// refDecodeRev is DecodeRev as a loop over the digits, checking each.
func refDecodeRev(rev string) (v uint64, node string, err error) {
	if len(rev) <= revClockLen {
		return 0, "", newError(ErrBadJSON, "", rev, "malformed _rev %q: too short", rev)
	}
	if revIndex[rev[0]] < 0 || revIndex[rev[0]] > 15 {
		return 0, "", newError(ErrBadJSON, "", rev, "malformed _rev %q", rev)
	}
	for i := 0; i < revClockLen; i++ {
		d := revIndex[rev[i]]
		if d < 0 {
			return 0, "", newError(ErrBadJSON, "", rev, "malformed _rev %q: byte %q at offset %d", rev, rev[i], i)
		}
		v = v<<6 | uint64(d)
	}
	return v, rev[revClockLen:], nil
}

// FuzzDecodeRevAgainstLoop holds DecodeRev to the loop: the same value,
// node and error text for any input.
func FuzzDecodeRevAgainstLoop(f *testing.F) {
	for _, s := range []string{"_l6zhVDW---A", "", "_l6zhVDW---", "Zl6zhVDW---A", "_l6zh!DW---A", "9999999999-x", "P----------node"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rev string) {
		v, node, err := DecodeRev(rev)
		wv, wnode, werr := refDecodeRev(rev)
		if v != wv || node != wnode || (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
			t.Fatalf("DecodeRev(%q) = %d %q %v, want %d %q %v", rev, v, node, err, wv, wnode, werr)
		}
	})
}
