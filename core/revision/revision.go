package revision

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hilodb/hilodb/internal/hostrand"
)

// revAlphabet is ArangoDB's alphabet for encoded hybrid logical clock values.
// Its order is not byte order ('_' comes before the capitals here and after
// them in ASCII, the digits last here and first there): revisions compare
// by their decoded values, never as strings.
const revAlphabet = "-_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// ClockLen is the length of the clock part of a revision: 11 characters
// of 6 bits hold any 64-bit value.
const ClockLen = 11

var revIndex = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for i := 0; i < len(revAlphabet); i++ {
		t[revAlphabet[i]] = int8(i)
	}
	return t
}()

// ErrMalformed is the error Decode returns (wrapped, with the text and
// what is wrong with it) for text that is not a revision.
var ErrMalformed = errors.New("malformed _rev")

// Clock is a hybrid logical clock: each value is (milliseconds since the
// epoch << 20) | a 20-bit counter, strictly increasing for the life of the
// Clock even if the wall clock steps back. Together with the node tag it makes
// revisions that no two nodes ever share.
//
// A Clock is safe for concurrent use.
type Clock struct {
	last atomic.Uint64
	now  func() time.Time
	node atomic.Pointer[string]
}

// NewClock returns a clock whose revisions end in node. An empty node gets a
// random lower-case stand-in (server node tags are upper-case, so the two
// never meet) until SetNode is called.
func NewClock(node string) *Clock {
	c := &Clock{now: time.Now}
	if node == "" {
		node = randomLocalTag()
	}
	c.node.Store(&node)
	return c
}

// SetNode changes the node tag used in revisions from now on. An empty node
// is ignored.
func (c *Clock) SetNode(node string) {
	if node == "" {
		return
	}
	c.node.Store(&node)
}

// Node returns the node tag used in revisions.
func (c *Clock) Node() string { return *c.node.Load() }

// HasNodeTag reports whether the clock's node tag is one a sync server hands
// out (see IsNodeTag) rather than the random local stand-in.
func (c *Clock) HasNodeTag() bool { return IsNodeTag(c.Node()) }

// IsNodeTag reports whether tag has the form of a node tag given by the sync
// server: 1 to 8 upper-case letters and digits. The local stand-in NewClock
// makes for an empty node is lower-case, so it never passes.
func IsNodeTag(tag string) bool {
	if len(tag) == 0 || len(tag) > 8 {
		return false
	}
	for i := 0; i < len(tag); i++ {
		if c := tag[i]; !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Now returns the time of the wall clock the clock reads (time.Now unless
// SetNow replaced it).
func (c *Clock) Now() time.Time { return c.now() }

// SetNow replaces the wall clock the clock reads, for tests and
// simulations. Call it before the clock is shared: it is not synchronized.
func (c *Clock) SetNow(now func() time.Time) { c.now = now }

// Tick returns the next clock value, greater than every value this clock
// returned or observed before.
func (c *Clock) Tick() uint64 {
	return c.TickAt(c.now().UnixMilli())
}

// TickAt is Tick with the wall clock read as ms (Unix milliseconds) by the
// caller: a transaction reads it once for all the revisions it makes.
func (c *Clock) TickAt(ms int64) uint64 {
	for {
		old := c.last.Load()
		next := old + 1
		if wall := uint64(ms) << 20; wall > old {
			next = wall
		}
		if c.last.CompareAndSwap(old, next) {
			return next
		}
	}
}

// TickN reserves n consecutive clock values (n ≥ 1), with the wall clock
// read as ms by the caller, and returns the first: first..first+n-1 are
// all greater than every value returned or observed before, and no other
// call returns any of them. A transaction of many writes takes its
// revisions' values this way, one atomic step for all of them.
func (c *Clock) TickN(ms int64, n uint64) uint64 {
	for {
		old := c.last.Load()
		first := old + 1
		if wall := uint64(ms) << 20; wall > old {
			first = wall
		}
		if c.last.CompareAndSwap(old, first+n-1) {
			return first
		}
	}
}

// Observe moves the clock past v, a value seen in another node's revision,
// so that revisions made here afterwards order after it.
func (c *Clock) Observe(v uint64) {
	for {
		old := c.last.Load()
		if v <= old || c.last.CompareAndSwap(old, v) {
			return
		}
	}
}

// NextRev returns a new revision: the encoded clock value followed by the
// node tag. It makes one allocation.
func (c *Clock) NextRev() string {
	return Encode(c.Tick(), c.Node())
}

// Encode returns the revision for clock value v made on node.
func Encode(v uint64, node string) string {
	var buf [ClockLen + 16]byte
	b := buf[:ClockLen]
	if len(node) > len(buf)-ClockLen {
		b = make([]byte, ClockLen, ClockLen+len(node))
	}
	EncodeClock(b, v)
	return string(append(b, node...))
}

// EncodeClock writes the ClockLen characters of clock value v into
// b[:ClockLen], without an allocation: the revision's clock part, which the
// node tag follows.
func EncodeClock(b []byte, v uint64) {
	for i := ClockLen - 1; i >= 0; i-- {
		b[i] = revAlphabet[v&63]
		v >>= 6
	}
}

// Decode splits a revision made by Encode or NextRev into its clock value
// and node tag. It returns an error wrapping ErrMalformed for text that is
// not such a revision.
func Decode(rev string) (v uint64, node string, err error) {
	if len(rev) <= ClockLen {
		return 0, "", fmt.Errorf("%w %q: too short", ErrMalformed, rev)
	}
	// Every applied remote change decodes its _rev (Clock.Observe): the
	// eleven digits are read without a branch each, and checked together.
	_ = rev[ClockLen-1]
	d0, d1, d2, d3 := revIndex[rev[0]], revIndex[rev[1]], revIndex[rev[2]], revIndex[rev[3]]
	d4, d5, d6, d7 := revIndex[rev[4]], revIndex[rev[5]], revIndex[rev[6]], revIndex[rev[7]]
	d8, d9, d10 := revIndex[rev[8]], revIndex[rev[9]], revIndex[rev[10]]
	if d0|d1|d2|d3|d4|d5|d6|d7|d8|d9|d10 < 0 || d0 > 15 {
		return 0, "", badRev(rev)
	}
	v = uint64(d0)<<60 | uint64(d1)<<54 | uint64(d2)<<48 | uint64(d3)<<42 |
		uint64(d4)<<36 | uint64(d5)<<30 | uint64(d6)<<24 | uint64(d7)<<18 |
		uint64(d8)<<12 | uint64(d9)<<6 | uint64(d10)
	return v, rev[ClockLen:], nil
}

// badRev says what is wrong with a revision's clock digits.
func badRev(rev string) error {
	// The first character holds only the top 4 bits of 64.
	if revIndex[rev[0]] < 0 || revIndex[rev[0]] > 15 {
		return fmt.Errorf("%w %q", ErrMalformed, rev)
	}
	for i := 0; i < ClockLen; i++ {
		if revIndex[rev[i]] < 0 {
			return fmt.Errorf("%w %q: byte %q at offset %d", ErrMalformed, rev, rev[i], i)
		}
	}
	return fmt.Errorf("_rev %q: no fault found", rev) // not reached
}

// randomLocalTag returns "l" and 7 random lower-case letters and digits.
func randomLocalTag() string {
	const alpha = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b [8]byte
	hostrand.Read(b[:])
	b[0] = 'l'
	for i := 1; i < len(b); i++ {
		b[i] = alpha[int(b[i])%len(alpha)]
	}
	return string(b[:])
}
