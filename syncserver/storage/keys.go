package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// The key layout of the server's state, which a repair, a restore and the
// etcd store read as the server writes it. <db> is a database name, <tag> a
// HiLo tag or identity name, <id> a document id.
const (
	// HiloPrefix prefixes hilo/<db>/<tag>: a HiloDoc.
	HiloPrefix = "hilo/"
	// IdentPrefix prefixes ident/<db>/<name>: the last identity value, in
	// decimal.
	IdentPrefix = "ident/"
	// NodeSeqKey holds the counter node tags are spelled from.
	NodeSeqKey = "meta/nodeseq"
	// NodePrefix prefixes node/<tag>: when the tag was given out.
	NodePrefix = "node/"
	// DBPrefix prefixes db/<db>: when the database was first used.
	DBPrefix = "db/"
	// SeqCounterPrefix prefixes rctr/<db>, each database's change sequence
	// counter; a repair raises it like the other counters, so no sequence
	// is reused.
	SeqCounterPrefix = "rctr/"
	// SrvSeqPrefix prefixes the counters of server-made document ids
	// (RavenDB's "orders/" ids), raised by a repair like the others.
	SrvSeqPrefix = "srvseq/"
)

// MaxSafeNumber is the largest integer a JavaScript number holds exactly:
// no counter goes past it.
const MaxSafeNumber = 1<<53 - 1

// HiloKey is the key of db's HiLo tag.
func HiloKey(db, tag string) string { return HiloPrefix + db + "/" + tag }

// IdentityKey is the key of db's identity name.
func IdentityKey(db, name string) string { return IdentPrefix + db + "/" + name }

// DocKey is the key of the record (a Record) of db's document id.
func DocKey(db, id string) string { return "rdoc/" + db + "/" + id }

// SeqKey is the key of db's change feed entry at seq (data file only).
func SeqKey(db string, seq int64) string {
	return "rseq/" + db + "/" + fmt.Sprintf("%020d", seq)
}

// SeqCounterKey is the key of db's change sequence counter.
func SeqCounterKey(db string) string { return SeqCounterPrefix + db }

// PurgedKey is the key of the highest sequence of db's removed tombstones.
func PurgedKey(db string) string { return "rpurged/" + db }

// HiloDoc is the stored state of one HiLo tag: Max is the highest number
// taken (the next lease starts after it); Low is the first number of the
// latest lease and Node the node tag that leased it, so a return can be
// checked against them; Top is the highest number ever handed out, which a
// return never lowers (a client's lastMax can be no higher).
type HiloDoc struct {
	Max  int64  `json:"Max"`
	Low  int64  `json:"Low,omitempty"`
	Top  int64  `json:"Top,omitempty"`
	Node string `json:"Node,omitempty"`
	// Meta is the @metadata of the Raven/Hilo/{tag} document a RavenDB
	// client stored (its type, say), kept as RavenDB keeps it.
	Meta json.RawMessage `json:"Meta,omitempty"`
}

// Highest is the highest number ever handed out for the tag (files written
// before Top was kept have Max).
func (d *HiloDoc) Highest() int64 { return max(d.Top, d.Max) }

// ValidDBName accepts a letter, then letters, digits, _ or -, at most 64
// bytes: safe as a key part and never a path.
func ValidDBName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if i == 0 && !letter {
			return false
		}
		if !letter && !(c >= '0' && c <= '9') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// ValidNodeTag accepts 1 to 8 upper-case letters and digits.
func ValidNodeTag(s string) bool {
	if len(s) == 0 || len(s) > 8 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// MaxTagLen bounds HiLo tags and identity names.
const MaxTagLen = 512

// CheckTag accepts a HiLo tag or identity name: non-empty valid UTF-8
// without control characters, '|' or the key separator '/' (a tag is the
// part before it), at most MaxTagLen bytes.
func CheckTag(s string) error {
	if len(s) == 0 || len(s) > MaxTagLen || !utf8.ValidString(s) {
		return fmt.Errorf("tag must be 1 to %d bytes of UTF-8", MaxTagLen)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '/' || r == '|' {
			b, _ := json.Marshal(s)
			return errors.New("tag " + string(b) + ": control characters, '/' and '|' are not allowed")
		}
	}
	return nil
}
