package core

import (
	"bytes"
	"encoding/json"
)

// mergeFields applies an update patch to a stored document, as ArangoDB's
// update: attributes of patch replace those of old; with keepNull false an
// attribute set to null is removed instead of stored; with mergeObjects an
// object in patch is merged into an object in old, recursively, instead of
// replacing it. The system attributes _id, _key and _rev of patch are
// ignored.
func mergeFields(old, patch map[string]json.RawMessage, keepNull, mergeObjects bool) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(old)+len(patch))
	for k, v := range old {
		out[k] = v
	}
	for k, v := range patch {
		if k == "_id" || k == "_key" || k == "_rev" {
			continue
		}
		out[k] = v
		mergeValue(out, k, v, old[k], keepNull, mergeObjects)
	}
	return out
}

// mergeValue sets dst[k] from the patch value v over the old value ov.
func mergeValue(dst map[string]json.RawMessage, k string, v, ov json.RawMessage, keepNull, mergeObjects bool) {
	if isNull(v) {
		if keepNull {
			dst[k] = v
		} else {
			delete(dst, k)
		}
		return
	}
	pv, pok := asObject(v)
	if !pok {
		dst[k] = v
		return
	}
	base := map[string]json.RawMessage{}
	if mergeObjects {
		if o, ok := asObject(ov); ok {
			base = o
		}
	}
	merged := make(map[string]json.RawMessage, len(base)+len(pv))
	for bk, bv := range base {
		merged[bk] = bv
	}
	for pk, pvv := range pv {
		mergeValue(merged, pk, pvv, base[pk], keepNull, mergeObjects)
	}
	b, _ := json.Marshal(merged)
	dst[k] = b
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

func asObject(v json.RawMessage) (map[string]json.RawMessage, bool) {
	t := bytes.TrimSpace(v)
	if len(t) == 0 || t[0] != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(t, &m) != nil {
		return nil, false
	}
	return m, true
}

// MergePatch applies an update patch to a document, both JSON objects, as
// ArangoDB's update does (see WriteOptions.KeepNull and MergeObjects): the
// patch's attributes replace the document's, null removes one unless
// keepNull, and objects merge recursively with mergeObjects. _id, _key and
// _rev of the patch are ignored. It fails with ErrBadJSON for a patch or
// document that is not an object.
func MergePatch(doc, patch []byte, keepNull, mergeObjects bool) ([]byte, error) {
	old, ok := asObject(doc)
	if !ok {
		return nil, newError(ErrBadJSON, "", "", "update: the stored document is not a JSON object")
	}
	p, ok := asObject(patch)
	if !ok {
		return nil, newError(ErrBadJSON, "", "", "update: the patch must be a JSON object")
	}
	return json.Marshal(mergeFields(old, p, keepNull, mergeObjects))
}
