package wire

import (
	"strconv"

	"github.com/hilodb/hilodb/internal/jsontext"
)

// The pull codec's server end, written by hand as the push codec is: a
// change carries a stored document, which is compact JSON already, so it is
// copied as bytes instead of checked and compacted again the way
// encoding/json treats a json.RawMessage. The shapes are PullReply's and
// ChangesMsg's, the same JSON as encoding/json makes of them.

// AppendJSON appends the reply as JSON to b. Each document must be valid,
// compact JSON (as the server stores it).
func (r PullReply) AppendJSON(b []byte) []byte {
	b = grow(b, r.Changes)
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, r.ID, 10)
	b = append(b, `,"ok":`...)
	b = strconv.AppendBool(b, r.OK)
	b = appendChanges(b, r.Changes)
	b = append(b, `,"last":`...)
	b = strconv.AppendInt(b, r.Last, 10)
	b = append(b, `,"more":`...)
	b = strconv.AppendBool(b, r.More)
	if r.PurgedSeq != 0 {
		b = append(b, `,"purgedSeq":`...)
		b = strconv.AppendInt(b, r.PurgedSeq, 10)
	}
	if r.Collections != nil {
		b = append(b, `,"collections":`...)
		b = append(b, r.Collections...)
	}
	if r.Indexes != nil {
		b = append(b, `,"indexes":`...)
		b = append(b, r.Indexes...)
	}
	return append(b, '}')
}

// AppendJSON appends the message as JSON to b, as PullReply.AppendJSON.
func (m ChangesMsg) AppendJSON(b []byte) []byte {
	b = grow(b, m.Changes)
	b = append(b, `{"op":`...)
	b = jsontext.AppendString(b, m.Op)
	b = appendChanges(b, m.Changes)
	b = append(b, `,"last":`...)
	b = strconv.AppendInt(b, m.Last, 10)
	return append(b, '}')
}

// grow makes room in b for changes and what surrounds them.
func grow(b []byte, changes []Change) []byte {
	n := 96
	for i := range changes {
		n += len(changes[i].Doc) + len(changes[i].ID) + len(changes[i].Rev) + 64
		for _, l := range changes[i].Lost {
			n += len(l.Rev) + len(l.Doc) + 40
		}
	}
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		b = nb
	}
	return b
}

// appendChanges appends `,"changes":[…]`.
func appendChanges(b []byte, changes []Change) []byte {
	b = append(b, `,"changes":[`...)
	for i := range changes {
		c := &changes[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"seq":`...)
		b = strconv.AppendInt(b, c.Seq, 10)
		b = append(b, `,"id":`...)
		b = jsontext.AppendString(b, c.ID)
		b = append(b, `,"rev":`...)
		b = jsontext.AppendString(b, c.Rev)
		if len(c.Doc) > 0 {
			b = append(b, `,"doc":`...)
			b = append(b, c.Doc...)
		}
		if c.Deleted {
			b = append(b, `,"deleted":true`...)
		}
		if len(c.Lost) > 0 {
			b = appendLost(b, c.Lost)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendLost appends `,"lost":[…]`.
func appendLost(b []byte, lost []LostWrite) []byte {
	b = append(b, `,"lost":[`...)
	for i, l := range lost {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"rev":`...)
		b = jsontext.AppendString(b, l.Rev)
		if l.Deleted {
			b = append(b, `,"deleted":true`...)
		}
		if len(l.Doc) > 0 {
			b = append(b, `,"doc":`...)
			b = append(b, l.Doc...)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}
