package core

import (
	"encoding/json"

	"github.com/hilodb/hilodb/internal/jsontext"
	"github.com/tidwall/gjson"
)

// sysAttrs are the system attributes a caller's document brings.
type sysAttrs struct {
	id, key, rev          string
	hasID, hasKey, hasRev bool
}

// scanBody checks that body is one JSON object and reads its _id, _key and
// _rev. A null _id or _key counts as absent; any other non-string is an
// illegal key (1221).
func scanBody(body []byte) (sysAttrs, *Error) {
	var a sysAttrs
	if !json.Valid(body) {
		return a, newError(ErrBadJSON, "", "", "malformed JSON: a document must be a JSON object")
	}
	r := gjson.ParseBytes(body)
	if !r.IsObject() {
		return a, newError(ErrBadJSON, "", "", "malformed JSON: a document must be a JSON object")
	}
	var err *Error
	r.ForEach(func(k, v gjson.Result) bool {
		name := k.String()
		if name != "_id" && name != "_key" && name != "_rev" {
			return true
		}
		if v.Type == gjson.Null {
			return true
		}
		if v.Type != gjson.String {
			if name != "_rev" {
				err = newError(ErrIllegalKey, "", "", "illegal document key: %s must be a string", name)
				return false
			}
			return true
		}
		switch name {
		case "_id":
			a.id, a.hasID = v.String(), true
		case "_key":
			a.key, a.hasKey = v.String(), true
		case "_rev":
			a.rev, a.hasRev = v.String(), true
		}
		return true
	})
	return a, err
}

// readHeader reads the _rev and @metadata.@collection of a stored document.
func readHeader(doc string) header {
	var h header
	res := gjson.GetMany(doc, "_rev", `\@metadata.\@collection`)
	h.Rev = res[0].String()
	h.Meta.Collection = res[1].String()
	return h
}

// encodeDoc writes the stored form of body: its attributes in their order
// without _id, _key, _rev, _oldRev and @metadata, then _id, _key, _rev and
// @metadata (the caller's, plus extra, plus @collection). body must have
// passed scanBody.
func encodeDoc(body []byte, id, key, rev, coll string, extra map[string]json.RawMessage) ([]byte, *Error) {
	out := make([]byte, 0, len(body)+len(id)+len(key)+len(rev)+len(coll)+80)
	out = append(out, '{')
	var userMeta gjson.Result
	n := 0
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		switch k.String() {
		case "_id", "_key", "_rev", "_oldRev":
			return true
		case "@metadata":
			userMeta = v
			return true
		}
		out = appendMember(out, &n, k, v)
		return true
	})
	if n > 0 {
		out = append(out, ',')
	}
	out = append(out, `"_id":`...)
	out = jsontext.AppendString(out, id)
	out = append(out, `,"_key":`...)
	out = jsontext.AppendString(out, key)
	out = append(out, `,"_rev":`...)
	out = jsontext.AppendString(out, rev)
	out = append(out, `,"@metadata":{`...)
	m := 0
	if userMeta.Exists() && userMeta.Type != gjson.Null {
		if !userMeta.IsObject() {
			return nil, newError(ErrBadJSON, key, "", "malformed JSON: @metadata must be a JSON object")
		}
		userMeta.ForEach(func(k, v gjson.Result) bool {
			name := k.String()
			if name == "@collection" {
				return true
			}
			if _, over := extra[name]; over {
				return true
			}
			out = appendMember(out, &m, k, v)
			return true
		})
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
	return out, nil
}

// appendMember copies the member k:v of a parsed object as it is, after a
// comma unless it is the first (*n counts the members written).
func appendMember(out []byte, n *int, k, v gjson.Result) []byte {
	if *n > 0 {
		out = append(out, ',')
	}
	*n++
	out = append(out, k.Raw...)
	out = append(out, ':')
	return append(out, v.Raw...)
}
