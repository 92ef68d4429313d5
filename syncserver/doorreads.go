package syncserver

import (
	"fmt"

	"github.com/hilodb/hilodb/internal/wire"
)

// DistinctIDs refuses a read that names one document more than once: each
// copy would be rendered, and a small request could ask for one large
// document thousands of times. The websocket's get refuses the same.
func DistinctIDs(ids []string) error {
	seen := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		if _, dup := seen[id]; dup {
			return BadRequest("ids lists %s more than once; ask for each document once", Quote(Truncate(id, 100)))
		}
		seen[id] = struct{}{}
	}
	return nil
}

// StoredSize is what docs take in a reply, measured on the stored bytes
// before any is rendered: each document, its id and a member's framing.
func StoredSize(ids []string, docs []*StoredDoc) int {
	n := 0
	for i, d := range docs {
		n += len(ids[i]) + 64
		if d != nil {
			n += len(d.Doc) + len(d.Rev)
		}
	}
	return n
}

// CheckReply refuses a reply of size bytes holding n documents past the
// reply bound (one document may pass it alone).
func (s *Server) CheckReply(size, n int) error {
	if budget := s.ReplyBudget(); size > budget && n > 1 {
		return &protoError{code: wire.CodeReplyTooBig, num: wire.NumReplyTooBig,
			msg: fmt.Sprintf("the documents asked for pass the reply bound of %d bytes; ask for fewer at a time", budget)}
	}
	return nil
}
