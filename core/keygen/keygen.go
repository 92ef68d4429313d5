package keygen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"

	"github.com/hilodb/hilodb/core/uuid"
)

// Key generator types of Options.Type.
const (
	// HiLo is hilodb's default: RavenDB-style HiLo ids such as "orders/1-A"
	// from the store's id source.
	HiLo = "hilo"
	// Traditional makes increasing decimal keys ("1", "2", …) from HiLo
	// numbers.
	Traditional = "traditional"
	// Autoincrement makes offset + k·increment keys from HiLo numbers.
	Autoincrement = "autoincrement"
	// Padded makes 16 lower-case hex digits from HiLo numbers, so that
	// string order is number order.
	Padded = "padded"
	// UUID makes random UUID keys.
	UUID = "uuid"
)

// The kinds of a generator's errors (Error.Kind).
var (
	// ErrInvalid: the options are not a valid keyOptions (ArangoDB's 1232).
	ErrInvalid = errors.New("invalid key generator")
	// ErrOutOfKeys: the generator has no key left (ArangoDB's 1225).
	ErrOutOfKeys = errors.New("out of keys")
	// ErrNoNumbers: the generator needs HiLo numbers and has no source.
	ErrNoNumbers = errors.New("no number source")
)

// Error is a generator's error: its kind and ArangoDB's message.
type Error struct {
	Kind    error // ErrInvalid, ErrOutOfKeys or ErrNoNumbers
	Message string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the kind, so errors.Is(err, ErrInvalid) works.
func (e *Error) Unwrap() error { return e.Kind }

func newError(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// NumberSource hands out HiLo numbers for a tag, with the node tag of the
// server that leased the range; *idgen.Generator implements it. The
// traditional, autoincrement and padded generators draw their numbers from
// it, so every key is made from a number no other client holds.
type NumberSource interface {
	NextNumber(ctx context.Context, tag string) (n int64, serverTag string, err error)
}

// Options are a collection's ArangoDB keyOptions: how keys are made for
// documents stored without one, and whether callers may give their own.
// Pointers tell "not given" from zero, as ArangoDB does.
type Options struct {
	// Type is one of the generator types above; empty means HiLo.
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

// Generator is a validated Options.
type Generator struct {
	Type          string // one of the generator types, never empty
	AllowUserKeys bool
	Increment     uint64 // autoincrement's step
	Offset        uint64 // autoincrement's first value
}

// Compile validates o as ArangoDB does and returns the generator. Its
// errors are of kind ErrInvalid, with ArangoDB's messages.
func (o Options) Compile() (Generator, error) {
	g := Generator{Type: o.Type, AllowUserKeys: true, Increment: 1}
	if o.AllowUserKeys != nil {
		g.AllowUserKeys = *o.AllowUserKeys
	}
	switch o.Type {
	case "":
		g.Type = HiLo
	case HiLo, Traditional, Padded, UUID:
	case Autoincrement:
		if o.Increment != nil {
			v := *o.Increment
			if !(v > 0) {
				return g, newError(ErrInvalid, "increment value must be greater than zero")
			}
			if v >= 1<<16 || uint64(v) == 0 {
				return g, newError(ErrInvalid, "increment value must be greater than zero and smaller than 65536")
			}
			g.Increment = uint64(v)
		}
		if o.Offset != nil {
			v := *o.Offset
			if v < 0 || math.IsNaN(v) {
				return g, newError(ErrInvalid, "offset value must be zero or greater")
			}
			if v >= math.MaxUint64 {
				return g, newError(ErrInvalid, "offset value is too high")
			}
			g.Offset = uint64(v)
		}
	default:
		return g, newError(ErrInvalid, "invalid key generator type %q", o.Type)
	}
	return g, nil
}

// Validate reports whether o is a valid keyOptions, with an error of kind
// ErrInvalid and ArangoDB's message when it is not.
func (o Options) Validate() error {
	_, err := o.Compile()
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

// NextKey makes a key (not an id) for a document of a collection whose
// generator is not HiLo. tag is the collection's id prefix: the numbers come
// from its HiLo counter.
func (g Generator) NextKey(ctx context.Context, nums NumberSource, tag string) (string, error) {
	if g.Type == UUID {
		return uuid.New(), nil
	}
	if nums == nil {
		return "", newError(ErrNoNumbers, "no number source to make %s keys for %q", g.Type, tag)
	}
	n, _, err := nums.NextNumber(ctx, tag)
	if err != nil {
		return "", fmt.Errorf("generate key: %w", err)
	}
	switch g.Type {
	case Traditional:
		return strconv.FormatInt(n, 10), nil
	case Padded:
		return PaddedKey(uint64(n)), nil
	case Autoincrement:
		v, ok := AutoincrementKey(n, g.Offset, g.Increment)
		if !ok {
			return "", newError(ErrOutOfKeys, "out of keys: autoincrement value for number %d does not fit in 64 bits", n)
		}
		return strconv.FormatUint(v, 10), nil
	}
	return "", newError(ErrInvalid, "invalid key generator type %q", g.Type)
}
