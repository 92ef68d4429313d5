package syncserver

// The order of a document's revisions: a revision, once used for a
// document, must never name other content, or a replica that holds it
// keeps the old content for good (it takes an equal _rev for the same
// version). Revisions are hybrid logical clock values with a node tag
// (revision.Encode); every write a door accepts must carry a clock greater
// than the stored version's, so a document's revisions only grow.

import (
	"fmt"
	"time"

	"github.com/hilodb/hilodb/core/revision"
	"github.com/hilodb/hilodb/internal/wire"
)

// maxRevAhead bounds how far past the server's wall clock a pushed
// revision's clock may be. Without it one push of the largest clock would
// make the document unwritable: no later revision could be greater.
const maxRevAhead = 24 * time.Hour

// maxRevNodeLen bounds a revision's node tag: a server tag or a client's
// local stand-in (see revision.IsNodeTag, revision.NewClock).
const maxRevNodeLen = 16

// checkPushedRev refuses a pushed revision that is not a hilodb revision
// (11 clock characters and a node tag, both of the revision alphabet:
// letters, digits, '-' and '_'), or whose clock is more than maxRevAhead
// past now.
func checkPushedRev(rev string, now time.Time) *wire.Error {
	v, node, err := revision.Decode(rev)
	if err != nil || !revNodeTag(node) {
		return &wire.Error{Code: wire.CodeBadDoc, Num: wire.NumBadDoc, Message: fmt.Sprintf("rev %q is not a hilodb revision: 11 clock characters, then a node tag of 1 to %d letters, digits, '-' or '_'", Truncate(rev, 64), maxRevNodeLen)}
	}
	if ms := int64(v >> 20); ms > now.Add(maxRevAhead).UnixMilli() {
		return &wire.Error{Code: wire.CodeBadDoc, Num: wire.NumBadDoc, Message: fmt.Sprintf("rev %q is from %s, more than %s past the server's clock: check the client's clock", rev, time.UnixMilli(ms).UTC().Format(time.RFC3339), maxRevAhead)}
	}
	return nil
}

func revNodeTag(node string) bool {
	if len(node) == 0 || len(node) > maxRevNodeLen {
		return false
	}
	for i := 0; i < len(node); i++ {
		if c := node[i]; !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// revClock returns the clock of a stored revision; one written before
// revisions were checked, which is no hilodb revision, counts as 0.
func revClock(rev string) uint64 {
	v, _, err := revision.Decode(rev)
	if err != nil {
		return 0
	}
	return v
}

// staleRev is the refusal of a pushed revision rev that is not newer
// than the stored one, cur.
func staleRev(rev, cur string) *wire.Error {
	return &wire.Error{Code: wire.CodeStaleRev, Num: wire.NumStaleRev, Message: fmt.Sprintf("rev %q is not newer than the stored _rev %q: a revision, once used, never names other content; make a new one", rev, cur)}
}
