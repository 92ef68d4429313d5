package client

import (
	"encoding/json"
	"strconv"
	"unsafe"

	"github.com/hilodb/hilodb/internal/jsontext"
)

// The fast path of a pull reply's decoding. A reply is megabytes of
// changes, and gjson walks each document three times a byte at a time (to
// skip the array, to find the change, to find its "doc"); this reads the
// reply in one pass, each document's bytes once, finding a value's end
// with jsontext (strings eight bytes at a time). The documents are slices
// of the reply, and ids and revisions strings over its bytes: a reply is
// only read, never written, once received.
//
// It reads the shape the server writes (wire.PullReply.AppendJSON): member
// names without escapes, integers, plain strings, true and false. Anything
// else (an escape in a name, id or rev; a number with a fraction) makes it
// give up, and the reply is decoded by gjson instead; for a valid reply
// both give the same (FuzzDecodePullFast).

// pullDecoder reads one reply.
type pullDecoder struct {
	b []byte
	s string // b's bytes as a string: ids and revisions are cut from it
}

// decodePullFast decodes a pull reply into r (its changes with room for
// up to r.expect of them), or reports false and leaves r as it was.
func (r *pullReply) decodePullFast(data []byte) bool {
	d := pullDecoder{b: data, s: unsafe.String(unsafe.SliceData(data), len(data))}
	var (
		out                              PullReply
		seenChanges, seenID, seenLast    bool
		seenMore, seenPurged, gotChanges bool
		seenCollections, seenIndexes     bool
	)
	end, ok := d.object(0, func(name []byte, i int) (int, bool) {
		switch string(name) {
		case "changes":
			if !seenChanges {
				seenChanges = true
				var end int
				out.Changes, end, gotChanges = d.changes(i, r.expect)
				return end, gotChanges
			}
		case "id":
			return d.int(i, &out.ID, &seenID)
		case "last":
			return d.int(i, &out.Last, &seenLast)
		case "more":
			return d.bool(i, &out.More, &seenMore)
		case "purgedSeq":
			return d.int(i, &out.PurgedSeq, &seenPurged)
		case "collections":
			v, end, take, ok := d.firstValue(i, &seenCollections)
			if take {
				out.Collections = json.RawMessage(v) // a copy: the message's bytes are not kept
			}
			return end, ok
		case "indexes":
			v, end, take, ok := d.firstValue(i, &seenIndexes)
			if take {
				out.Indexes = json.RawMessage(v)
			}
			return end, ok
		}
		return jsontext.SkipValue(d.b, i)
	})
	if !ok || !gotChanges || jsontext.SkipSpace(data, end) != len(data) {
		return false
	}
	out.OK = true
	r.PullReply = out
	return true
}

// changes reads the array of changes at b[i].
func (d *pullDecoder) changes(i, expect int) ([]Change, int, bool) {
	b := d.b
	if i >= len(b) || b[i] != '[' {
		return nil, i, false
	}
	out := make([]Change, 0, min(expect, (len(b)-i)/minChangeLen))
	i = jsontext.SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, i + 1, true
	}
	for {
		var ch Change
		var seenSeq, seenID, seenRev, seenDeleted, seenDoc, seenDocRev, seenLost bool
		var docRev string
		end, ok := d.object(i, func(name []byte, i int) (int, bool) {
			switch string(name) {
			case "seq":
				return d.int(i, &ch.Seq, &seenSeq)
			case "id":
				return d.string(i, &ch.ID, &seenID)
			case "rev":
				return d.string(i, &ch.Rev, &seenRev)
			case "deleted":
				return d.bool(i, &ch.Deleted, &seenDeleted)
			case "lost":
				// Rare (a version a conflict was refused against): decoded
				// as any JSON.
				v, end, take, ok := d.firstValue(i, &seenLost)
				if take && ok {
					ok = json.Unmarshal([]byte(v), &ch.Lost) == nil
				}
				return end, ok
			case "doc":
				if seenDoc {
					return jsontext.SkipValue(b, i)
				}
				seenDoc = true
				// Walked member by member (about what skipping it costs),
				// to find its _rev: a store keeps a document whose _rev is
				// the change's as it is, and need not look again. A
				// document this walk does not read (a name with an escape)
				// is only skipped.
				end, ok := i, false
				if b[i] == '{' {
					end, ok = d.object(i, func(name []byte, i int) (int, bool) {
						end, ok := jsontext.SkipValue(b, i)
						if ok && !seenDocRev && string(name) == "_rev" {
							seenDocRev = true
							if end-i >= 2 && b[i] == '"' && jsontext.PlainRun(b[:end-1], i+1) == end-1 {
								docRev = d.s[i+1 : end-1]
							}
						}
						return end, ok
					})
				}
				if !ok {
					seenDocRev = false
					end, ok = jsontext.SkipValue(b, i)
				}
				if ok {
					ch.Doc = json.RawMessage(b[i:end:end])
				}
				return end, ok
			}
			return jsontext.SkipValue(b, i)
		})
		if !ok {
			return nil, end, false
		}
		ch.DocHasRev = seenDocRev && docRev == ch.Rev && ch.Rev != ""
		out = append(out, ch)
		i = jsontext.SkipSpace(b, end)
		if i >= len(b) {
			return nil, i, false
		}
		switch b[i] {
		case ',':
			i = jsontext.SkipSpace(b, i+1)
		case ']':
			return out, i + 1, true
		default:
			return nil, i, false
		}
	}
}

// object walks the object at b[i] (after any space): for each member it
// calls member with the member's name (its text between the quotes) and
// where its value starts, and member returns where the value ends. It
// returns where the object ends. A name with an escape is not read here.
func (d *pullDecoder) object(i int, member func(name []byte, i int) (int, bool)) (int, bool) {
	b := d.b
	i = jsontext.SkipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return i, false
	}
	i = jsontext.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		end, ok := jsontext.SkipValue(b, i)
		if !ok {
			return end, false
		}
		name := b[i+1 : end-1]
		if hasBackslash(name) {
			return i, false
		}
		i = jsontext.SkipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		i = jsontext.SkipSpace(b, i+1)
		if i >= len(b) {
			return i, false
		}
		if end, ok = member(name, i); !ok || end == i {
			return end, false
		}
		i = jsontext.SkipSpace(b, end)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = jsontext.SkipSpace(b, i+1)
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

// firstValue finds the end of the value at b[i] and whether to take it: not
// when it was seen before (a repeated member counts as first given). v is
// its text.
func (d *pullDecoder) firstValue(i int, seen *bool) (v string, end int, take, ok bool) {
	end, ok = jsontext.SkipValue(d.b, i)
	if !ok || *seen {
		return "", end, false, ok
	}
	*seen = true
	return d.s[i:end], end, true, true
}

// int reads an integer written without fraction or exponent into dst.
func (d *pullDecoder) int(i int, dst *int64, seen *bool) (int, bool) {
	v, end, take, ok := d.firstValue(i, seen)
	if !take {
		return end, ok
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || v[0] == '+' || len(v) > 1 && (v[0] == '0' || v[0] == '-' && v[1] == '0') {
		return end, false
	}
	*dst = n
	return end, true
}

// bool reads true or false into dst.
func (d *pullDecoder) bool(i int, dst *bool, seen *bool) (int, bool) {
	v, end, take, ok := d.firstValue(i, seen)
	if !take {
		return end, ok
	}
	switch v {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		return end, false
	}
	return end, true
}

// string reads a string without escapes or control bytes into dst (its
// bytes, as gjson takes such a string).
func (d *pullDecoder) string(i int, dst *string, seen *bool) (int, bool) {
	v, end, take, ok := d.firstValue(i, seen)
	if !take {
		return end, ok
	}
	if len(v) < 2 || v[0] != '"' || jsontext.PlainRun(d.b[:end-1], i+1) != end-1 {
		return end, false
	}
	*dst = v[1 : len(v)-1]
	return end, true
}

// hasBackslash reports whether a member name has an escape. Names are a
// few bytes: a loop here costs less than a call to bytes.IndexByte, whose
// start-up is most of its cost on them under WebAssembly.
func hasBackslash(name []byte) bool {
	for _, c := range name {
		if c == '\\' {
			return true
		}
	}
	return false
}
