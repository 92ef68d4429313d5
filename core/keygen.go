package core

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"strconv"

	"github.com/hilodb/hilodb/core/uuid"
)

// Key generator types of KeyOptions.Type.
const (
	// KeyGenHiLo is hilodb's default: RavenDB-style HiLo ids such as
	// "orders/1-A" from the store's IDSource.
	KeyGenHiLo = "hilo"
	// KeyGenTraditional makes increasing decimal keys ("1", "2", …) from HiLo
	// numbers.
	KeyGenTraditional = "traditional"
	// KeyGenAutoincrement makes offset + k·increment keys from HiLo numbers.
	KeyGenAutoincrement = "autoincrement"
	// KeyGenPadded makes 16 lower-case hex digits from HiLo numbers, so that
	// string order is number order.
	KeyGenPadded = "padded"
	// KeyGenUUID makes random UUID keys.
	KeyGenUUID = "uuid"
)

// KeyOptions are a collection's ArangoDB keyOptions: how keys are made for
// documents stored without one, and whether callers may give their own.
// Pointers tell "not given" from zero, as ArangoDB does; Ptr makes them.
type KeyOptions struct {
	// Type is one of the KeyGen constants; empty means KeyGenHiLo.
	Type string `json:"type,omitempty"`
	// AllowUserKeys, when false, refuses documents that bring their own
	// _key or _id (error 1222). Default true.
	AllowUserKeys *bool `json:"allowUserKeys,omitempty"`
	// Increment is autoincrement's step: greater than zero and smaller than
	// 65536. Default 1.
	Increment *float64 `json:"increment,omitempty"`
	// Offset is autoincrement's first value: zero or greater. Default 0.
	Offset *float64 `json:"offset,omitempty"`
}

// Ptr returns a pointer to v, for the optional fields of KeyOptions and
// WriteOptions.
func Ptr[T any](v T) *T { return &v }

// keyGen is a validated KeyOptions.
type keyGen struct {
	typ           string
	allowUserKeys bool
	increment     uint64
	offset        uint64
}

// compile validates o as ArangoDB does and returns the generator. Errors
// are 1232 with ArangoDB's messages.
func (o KeyOptions) compile() (keyGen, error) {
	g := keyGen{typ: o.Type, allowUserKeys: true, increment: 1}
	if o.AllowUserKeys != nil {
		g.allowUserKeys = *o.AllowUserKeys
	}
	switch o.Type {
	case "":
		g.typ = KeyGenHiLo
	case KeyGenHiLo, KeyGenTraditional, KeyGenPadded, KeyGenUUID:
	case KeyGenAutoincrement:
		if o.Increment != nil {
			v := *o.Increment
			if !(v > 0) {
				return g, newError(ErrInvalidKeyGenerator, "", "", "increment value must be greater than zero")
			}
			if v >= 1<<16 || uint64(v) == 0 {
				return g, newError(ErrInvalidKeyGenerator, "", "", "increment value must be greater than zero and smaller than 65536")
			}
			g.increment = uint64(v)
		}
		if o.Offset != nil {
			v := *o.Offset
			if v < 0 || math.IsNaN(v) {
				return g, newError(ErrInvalidKeyGenerator, "", "", "offset value must be zero or greater")
			}
			if v >= math.MaxUint64 {
				return g, newError(ErrInvalidKeyGenerator, "", "", "offset value is too high")
			}
			g.offset = uint64(v)
		}
	default:
		return g, newError(ErrInvalidKeyGenerator, "", "", "invalid key generator type %q", o.Type)
	}
	return g, nil
}

// Validate reports whether o is a valid keyOptions, with ArangoDB's error
// 1232 and message when it is not.
func (o KeyOptions) Validate() error {
	_, err := o.compile()
	return err
}

// AutoincrementKey maps the n-th number (n ≥ 1) a client leased to an
// autoincrement key value: offset + (n-1)·increment when offset > 0, else
// n·increment — the same sequence ArangoDB's single-server generator walks
// (offset, offset+increment, … or increment, 2·increment, …). The map is
// one-to-one, so numbers leased to different clients give different keys.
// ok is false when the value would not fit in 64 bits.
func AutoincrementKey(n int64, offset, increment uint64) (v uint64, ok bool) {
	if n < 1 || increment == 0 {
		return 0, false
	}
	k := uint64(n)
	if offset > 0 {
		k--
	}
	hi, lo := bits.Mul64(k, increment)
	if hi != 0 {
		return 0, false
	}
	v = offset + lo
	if v < offset {
		return 0, false
	}
	return v, true
}

// PaddedKey returns n as 16 lower-case hex digits, so that string order is
// number order.
func PaddedKey(n uint64) string {
	const hexdig = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = hexdig[n&15]
		n >>= 4
	}
	return string(b[:])
}

// nextKey makes a key (not an id) for a document of a collection whose
// generator is not HiLo. tag is the collection's id prefix: the numbers come
// from its HiLo counter.
func (g keyGen) nextKey(ctx context.Context, nums NumberSource, tag string) (string, error) {
	if g.typ == KeyGenUUID {
		return uuid.New(), nil
	}
	if nums == nil {
		return "", newError(ErrNeedsServer, "", "", "no number source to make %s keys for %q", g.typ, tag)
	}
	n, _, err := nums.NextNumber(ctx, tag)
	if err != nil {
		return "", fmt.Errorf("generate key: %w", err)
	}
	switch g.typ {
	case KeyGenTraditional:
		return strconv.FormatInt(n, 10), nil
	case KeyGenPadded:
		return PaddedKey(uint64(n)), nil
	case KeyGenAutoincrement:
		v, ok := AutoincrementKey(n, g.offset, g.increment)
		if !ok {
			return "", newError(ErrOutOfKeys, "", "", "out of keys: autoincrement value for number %d does not fit in 64 bits", n)
		}
		return strconv.FormatUint(v, 10), nil
	}
	return "", newError(ErrInvalidKeyGenerator, "", "", "invalid key generator type %q", g.typ)
}
