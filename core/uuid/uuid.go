package uuid

import (
	"errors"
	"fmt"

	"github.com/hilodb/hilodb/internal/hostrand"
)

// New returns a random (version 4) UUID in its lower-case 36-character
// form, e.g. "bc151542-8fa7-45ac-bc04-509b343a8720".
func New() string {
	var u [16]byte
	hostrand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return UUID(u).String()
}

// UUID is a 128-bit identifier. An entity whose identity property is a UUID
// maps to the document id prefix + separator + its string form, as RavenDB's
// Guid identities do; the zero UUID asks for a new random one (package
// core/session).
type UUID [16]byte

// String returns u in the lower-case 8-4-4-4-12 form.
func (u UUID) String() string {
	const hexdig = "0123456789abcdef"
	var b [36]byte
	j := 0
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b[j] = '-'
			j++
		}
		b[j], b[j+1] = hexdig[c>>4], hexdig[c&15]
		j += 2
	}
	return string(b[:])
}

// MarshalText implements encoding.TextMarshaler.
func (u UUID) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (u *UUID) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*u = v
	return nil
}

// ErrMalformed is the error Parse returns (wrapped, with the text) for
// anything but the 36-character form of a UUID.
var ErrMalformed = errors.New("malformed UUID")

// Parse parses the 36-character form of a UUID, either case.
func Parse(s string) (UUID, error) {
	var u UUID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, fmt.Errorf("%w %q", ErrMalformed, s)
	}
	j := 0
	for i := 0; i < 36; i += 2 {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++ // the dash checked above
		}
		hi, lo := unhex(s[i]), unhex(s[i+1])
		if hi < 0 || lo < 0 {
			return UUID{}, fmt.Errorf("%w %q", ErrMalformed, s)
		}
		u[j] = byte(hi<<4 | lo)
		j++
	}
	return u, nil
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
