package core

import (
	"bytes"
	"encoding/json"
	"unsafe"

	"github.com/hilodb/hilodb/internal/jsontext"
	"github.com/tidwall/gjson"
)

// sysAttrs are the system attributes a caller's document brings.
type sysAttrs struct {
	id, key, rev          string
	hasID, hasKey, hasRev bool
	// plain says the document is in compact form (no whitespace between
	// its own tokens or around it) and has none of the members encodeDoc
	// drops or moves: its stored form is the document itself with the
	// system attributes added at the end.
	plain bool
}

// scanBody checks that body is one JSON object and reads its _id, _key and
// _rev. A null _id or _key counts as absent; any other non-string is an
// illegal key (1221).
func scanBody(body []byte) (sysAttrs, *Error) {
	it := jsontext.NewMembers(body, 1)
	return scanMembers(&it)
}

// scanElement is scanBody for the object at text[i] (its opening brace),
// an element of the array text: the object ends at its closing brace,
// whatever follows it. end is the index after that brace, or -1 when the
// object is not valid JSON (e then says so).
func scanElement(text []byte, i int) (a sysAttrs, end int, e *Error) {
	it := jsontext.NewElementMembers(text, i)
	a, e = scanMembers(&it)
	if it.Bad() {
		return a, -1, e
	}
	return a, it.End(), e
}

// scanMembers reads the system attributes of the object it walks.
func scanMembers(it *jsontext.Members) (sysAttrs, *Error) {
	var a sysAttrs
	reserved := false
	var err *Error
	for {
		k, v, esc, ok := it.Next()
		if !ok {
			break
		}
		if !esc && (len(k) < 4 || k[1] != '_' && k[1] != '@') {
			continue // not a system attribute: the common case, decided cheaply
		}
		if isReserved(k, esc) {
			reserved = true
		}
		if err != nil {
			continue // the first illegal key is the one reported; go on checking the JSON
		}
		var name string
		switch {
		case jsontext.NameIs(k, esc, "_id"):
			name = "_id"
		case jsontext.NameIs(k, esc, "_key"):
			name = "_key"
		case jsontext.NameIs(k, esc, "_rev"):
			name = "_rev"
		default:
			continue
		}
		switch v[0] {
		case 'n':
			continue // null counts as absent
		case '"':
		default:
			if name != "_rev" {
				err = newError(ErrIllegalKey, "", "", "illegal document key: %s must be a string", name)
			}
			continue
		}
		str := jsontext.Unquote(v, bytes.IndexByte(v, '\\') >= 0)
		switch name {
		case "_id":
			a.id, a.hasID = str, true
		case "_key":
			a.key, a.hasKey = str, true
		case "_rev":
			a.rev, a.hasRev = str, true
		}
	}
	if it.Bad() {
		return sysAttrs{}, newError(ErrBadJSON, "", "", "malformed JSON: a document must be a JSON object")
	}
	if err != nil {
		return sysAttrs{}, err
	}
	a.plain = !it.Loose() && !reserved
	return a, nil
}

// isReserved reports whether the key raw names a member encodeDoc drops or
// moves.
func isReserved(raw []byte, esc bool) bool {
	for _, name := range [...]string{"_id", "_key", "_rev", "_oldRev", "@metadata"} {
		if jsontext.NameIs(raw, esc, name) {
			return true
		}
	}
	return false
}

// ReadHeader returns the _rev and the collection (@metadata.@collection)
// of a document as the store returns it.
func ReadHeader(doc string) (rev, collection string) {
	h := readHeader(doc)
	return h.Rev, h.Meta.Collection
}

// readHeader reads the _rev and @metadata.@collection of a stored document.
func readHeader(doc string) header {
	var h header
	res := gjson.GetMany(doc, "_rev", `\@metadata.\@collection`)
	h.Rev = res[0].String()
	h.Meta.Collection = res[1].String()
	return h
}

// encodedOverhead is what encodeDoc adds to a body besides its strings:
// `,"_id":""`, `,"_key":""`, `,"_rev":""`, `,"@metadata":{`,
// `"@collection":""` and `}}`, less the body's closing brace.
const encodedOverhead = 9 + 10 + 10 + 14 + 16 + 2 - 1

// docString returns the stored form of a document encodeDoc made: out's
// own bytes when nothing else will hold them (out is never written
// again), a copy when the caller is given out too (Result.New), which it
// may write to.
func docString(out []byte, handedOut bool) string {
	if handedOut || len(out) == 0 {
		return string(out)
	}
	return unsafe.String(&out[0], len(out))
}

// encodeDoc writes the stored form of body: its attributes in their order
// without _id, _key, _rev, _oldRev and @metadata, then _id, _key, _rev and
// @metadata (the caller's, plus extra, plus @collection). body must have
// passed scanBody; plain is what scanBody said of it (false: walk it).
func encodeDoc(body []byte, plain bool, id, key, rev, coll string, extra map[string]json.RawMessage) ([]byte, *Error) {
	out, _, e := appendDoc(make([]byte, 0, encodedSize(body, id, key, rev, coll)), body, plain, id, key, rev, coll, extra)
	return out, e
}

// encodedSize is the room for exactly what a plain body with nothing to
// escape becomes (encodedOverhead beside the strings): the stored form is
// often out's own bytes (docString), so room left over would stay with it.
func encodedSize(body []byte, id, key, rev, coll string) int {
	return len(body) + len(id) + len(key) + len(rev) + len(coll) + encodedOverhead
}

// appendDoc is encodeDoc appending to out. revAt is where rev's text starts
// in the result.
func appendDoc(out, body []byte, plain bool, id, key, rev, coll string, extra map[string]json.RawMessage) (_ []byte, revAt int, _ *Error) {
	var userMeta []byte
	n := 0
	if plain {
		// Compact, with nothing to drop: the members are the body as it is.
		out = append(out, body[:len(body)-1]...)
		if len(body) > 2 {
			n = 1
		}
	} else {
		out = append(out, '{')
		it := jsontext.NewMembers(body, 1)
		for {
			k, v, esc, ok := it.Next()
			if !ok {
				break
			}
			if esc || len(k) >= 4 && (k[1] == '_' || k[1] == '@') {
				if jsontext.NameIs(k, esc, "@metadata") {
					userMeta = v
					continue
				}
				if isReserved(k, esc) {
					continue
				}
			}
			out = jsontext.AppendMember(out, &n, k, v)
		}
		if it.Bad() {
			return nil, 0, newError(ErrBadJSON, key, "", "malformed JSON: a document must be a JSON object")
		}
	}
	if n > 0 {
		out = append(out, ',')
	}
	out = append(out, `"_id":`...)
	out = jsontext.AppendString(out, id)
	out = append(out, `,"_key":`...)
	out = jsontext.AppendString(out, key)
	out = append(out, `,"_rev":`...)
	revAt = len(out) + 1 // after the quote
	out = jsontext.AppendString(out, rev)
	out = append(out, `,"@metadata":{`...)
	m := 0
	if userMeta != nil && userMeta[0] != 'n' {
		if userMeta[0] != '{' {
			return nil, 0, newError(ErrBadJSON, key, "", "malformed JSON: @metadata must be a JSON object")
		}
		it := jsontext.NewMembers(userMeta, 2)
		for {
			k, v, esc, ok := it.Next()
			if !ok {
				break
			}
			if jsontext.NameIs(k, esc, "@collection") {
				continue
			}
			if len(extra) > 0 {
				name := string(k[1 : len(k)-1])
				if esc {
					name = jsontext.Unquote(k, true)
				}
				if _, over := extra[name]; over {
					continue
				}
			}
			out = jsontext.AppendMember(out, &m, k, v)
		}
	}
	for k, v := range extra {
		if m > 0 {
			out = append(out, ',')
		}
		m++
		out = jsontext.AppendString(out, k)
		out = append(out, ':')
		out = append(out, v...)
	}
	if m > 0 {
		out = append(out, ',')
	}
	out = append(out, `"@collection":`...)
	out = jsontext.AppendString(out, coll)
	out = append(out, "}}"...)
	return out, revAt, nil
}
