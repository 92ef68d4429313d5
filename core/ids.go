package core

import (
	"context"
	"strconv"
	"strings"
)

// IDSource hands out HiLo ids for an id prefix ("orders" → "orders/1-A").
// *idgen.Generator implements it.
type IDSource interface {
	NextID(ctx context.Context, tag string) (string, error)
}

// NumberSource hands out HiLo numbers for a tag, with the node tag of the
// server that leased the range. The keyOptions generators traditional,
// autoincrement and padded draw their numbers from it, so every key is made
// from a number no other client holds. *idgen.Generator implements it.
type NumberSource interface {
	NextNumber(ctx context.Context, tag string) (n int64, serverTag string, err error)
}

// IdentitySource allocates cluster-wide identities on the sync server, as
// RavenDB's identities: next is value+1 starting at 1, atomic on the server.
// *client.Client implements it. Its errors are returned wrapped in an *Error
// with code needs_server.
type IdentitySource interface {
	// NextIdentity returns the next value of identity name.
	NextIdentity(ctx context.Context, name string) (int64, error)
	// NextIdentities returns one next value per entry of names, in order, in
	// one transaction on the server. A name may repeat: each entry gets its
	// own value.
	NextIdentities(ctx context.Context, names []string) ([]int64, error)
	// SeedIdentity sets identity name to value: without force only upwards
	// (the current, higher value is returned otherwise); with force exactly.
	SeedIdentity(ctx context.Context, name string, value int64, force bool) (int64, error)
}

// idKind is how the id a caller gives is turned into the stored id (the
// strategies of docs/ids.md).
type idKind int

const (
	idGenerate idKind = iota // no id: the collection's generator (HiLo by default)
	idUUID                   // "": a bare UUID
	idGiven                  // a semantic id, used as given
	idNodeSeq                // ends in the separator: this node's own sequence
	idIdentity               // ends in "|": an identity from the sync server
)

// classifyID says which strategy an id asks for. present is false for a
// missing or null id.
func classifyID(id string, present bool, sep string) idKind {
	switch {
	case !present:
		return idGenerate
	case id == "":
		return idUUID
	case strings.HasSuffix(id, "|"):
		return idIdentity
	case strings.HasSuffix(id, sep):
		return idNodeSeq
	}
	return idGiven
}

// IsFinalID reports whether id names a document as it is, rather than in
// one of the forms that ask for an id when the document is written: ""
// (a UUID), ending in sep (this node's sequence) or in "|" (an identity
// from the sync server).
func IsFinalID(id, sep string) bool { return classifyID(id, true, sep) == idGiven }

// identityName returns the identity an id ending in "|" or the separator
// counts from: "companies|" and "companies/" both name "companies", which is
// also the name NextIdentityFor and SeedIdentityFor take.
func identityName(id, sep string) string {
	if s, ok := strings.CutSuffix(id, "|"); ok {
		return s
	}
	s, _ := strings.CutSuffix(id, sep)
	return s
}

// nodeSeqDigits is the width of the number in a node-sequence id, as
// RavenDB's server-side ids: companies/0000000000000000027-A.
const nodeSeqDigits = 19

// FormatNodeSeqID returns the id a node makes for prefix (which ends in the
// separator, e.g. "companies/") from its sequence number n: the number
// zero-padded to 19 digits, "-", and the node tag.
func FormatNodeSeqID(prefix string, n uint64, node string) string {
	var buf [64]byte
	b := append(buf[:0], prefix...)
	var digits [20]byte
	d := strconv.AppendUint(digits[:0], n, 10)
	for i := len(d); i < nodeSeqDigits; i++ {
		b = append(b, '0')
	}
	b = append(b, d...)
	b = append(b, '-')
	b = append(b, node...)
	return string(b)
}

// NewUUID returns a random (version 4) UUID in its lower-case 36-character
// form, e.g. "bc151542-8fa7-45ac-bc04-509b343a8720".
func NewUUID() string {
	var u [16]byte
	randomBytes(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return UUID(u).String()
}

// UUID is a 128-bit identifier. An entity whose identity property is a UUID
// maps to the document id prefix + separator + its string form, as RavenDB's
// Guid identities do; the zero UUID asks for a new random one.
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
	v, err := ParseUUID(string(b))
	if err != nil {
		return err
	}
	*u = v
	return nil
}

// ParseUUID parses the 36-character form of a UUID, either case.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, newError(ErrBadParameter, s, "", "malformed UUID %q", s)
	}
	j := 0
	for i := 0; i < 36; i += 2 {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++ // the dash checked above
		}
		hi, lo := unhex(s[i]), unhex(s[i+1])
		if hi < 0 || lo < 0 {
			return UUID{}, newError(ErrBadParameter, s, "", "malformed UUID %q", s)
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
