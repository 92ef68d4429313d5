package query

import (
	"strings"
	"unsafe"

	"github.com/hilodb/hilodb/internal/jsontext"
	"github.com/tidwall/gjson"
)

// GetFields sets vals[i] to the value at paths[i] in the JSON document
// doc, as paths[i].GetString(doc) would, reading doc's top-level members
// once for all the paths (GetString reads them again from the start for
// each): an index's key of several fields costs one pass over the
// document. A path of several members is followed with gjson inside its
// first member's value. vals must be as long as paths. A document that is
// not an object, or not well formed, is read path by path instead.
func GetFields(doc string, paths []Path, vals []gjson.Result) {
	if !getFields(doc, paths, vals) {
		for i, p := range paths {
			vals[i] = p.GetString(doc)
		}
	}
}

// getFields is GetFields's one pass; false when doc is not an object it
// can read, vals then half set.
func getFields(doc string, paths []Path, vals []gjson.Result) bool {
	for i := range vals {
		vals[i] = gjson.Result{}
	}
	// Read only: the scanner never writes, and doc outlives the call.
	b := unsafe.Slice(unsafe.StringData(doc), len(doc))
	i := jsontext.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	var setBits uint64 // paths found, for up to 64 paths
	if len(paths) > 64 {
		return false
	}
	all := uint64(1)<<len(paths) - 1
	i = jsontext.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		kend, ok := jsontext.SkipValue(b, i)
		if !ok {
			return false
		}
		key := doc[i+1 : kend-1]
		if strings.IndexByte(key, '\\') >= 0 {
			key = gjson.Parse(doc[i:kend]).Str
		}
		i = jsontext.SkipSpace(b, kend)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = jsontext.SkipSpace(b, i+1)
		vend, ok := jsontext.SkipValue(b, i)
		if !ok || vend == i {
			return false
		}
		for j := range paths {
			// The first member of a name counts, as with gjson.
			if setBits&(1<<j) != 0 || paths[j].segs[0] != key {
				continue
			}
			setBits |= 1 << j
			raw := doc[i:vend]
			if len(paths[j].segs) == 1 {
				vals[j] = gjson.Parse(raw)
			} else {
				vals[j] = gjson.Get(raw, paths[j].gjRest)
			}
		}
		if setBits == all {
			return true
		}
		i = jsontext.SkipSpace(b, vend)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = jsontext.SkipSpace(b, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
}
