package core

import (
	"context"
	"strconv"
	"strings"

	"github.com/hilodb/hilodb/core/naming"
)

// EmptyCollection is the collection of object literals for which no
// collection could be found, as RavenDB's "@empty" (naming.EmptyCollection):
// their ids are bare UUIDs, with no prefix.
const EmptyCollection = naming.EmptyCollection

// MetadataNodeType is the @metadata attribute holding the entity's type name,
// with which a session's LoadAny restores the type (RavenDB Node.js client's
// "Raven-Node-Type").
const MetadataNodeType = "Raven-Node-Type"

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
