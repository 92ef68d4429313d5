package syncserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/hilodb/hilodb/syncserver/storage"
)

// currentOf renders a record as the conflict reply's "current": the
// stored document with _id and _rev inside, or a tombstone.
func currentOf(r *storage.Record, id string) json.RawMessage {
	if r.Deleted {
		b, _ := json.Marshal(map[string]any{"_id": id, "_rev": r.Rev, "_deleted": true})
		return b
	}
	return r.Doc
}

// validDocID accepts 1 to 1024 bytes of UTF-8 without control characters.
func validDocID(id string) bool {
	if len(id) == 0 || len(id) > maxDocIDLen || !utf8.ValidString(id) {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x20 || id[i] == 0x7f {
			return false
		}
	}
	return true
}

// sameWrite reports whether a write of deleted and doc is the one stored in
// cur (a retry), comparing content rather than bytes when they differ.
// Strings compare as the UTF-16 code units JavaScript sees: two lone
// surrogates, which encoding/json would both decode to U+FFFD, differ.
func sameWrite(cur *storage.Record, deleted bool, doc json.RawMessage) bool {
	if cur.Deleted || deleted {
		return cur.Deleted == deleted
	}
	if bytes.Equal(cur.Doc, doc) {
		return true
	}
	a, b := gjson.ParseBytes(cur.Doc), gjson.ParseBytes(doc)
	return a.IsObject() && b.IsObject() && reflect.DeepEqual(exactValue(a), exactValue(b))
}

// exactValue is a JSON value for comparison: numbers as their text (as
// json.Decoder's UseNumber keeps them), strings as their UTF-16 code units.
func exactValue(r gjson.Result) any {
	switch {
	case r.IsObject():
		m := map[string]any{}
		r.ForEach(func(k, v gjson.Result) bool {
			m[exactString(k.Raw)] = exactValue(v)
			return true
		})
		return m
	case r.IsArray():
		a := []any{}
		r.ForEach(func(_, v gjson.Result) bool {
			a = append(a, exactValue(v))
			return true
		})
		return a
	case r.Type == gjson.String:
		return exactString(r.Raw)
	case r.Type == gjson.Number:
		return json.Number(r.Raw)
	case r.Type == gjson.True:
		return true
	case r.Type == gjson.False:
		return false
	}
	return nil
}

// exactString returns the UTF-16 code units of the JSON string token raw
// (with its quotes), two bytes each.
func exactString(raw string) string {
	if len(raw) >= 2 {
		raw = raw[1 : len(raw)-1]
	}
	out := make([]byte, 0, 2*len(raw))
	unit := func(u uint16) { out = append(out, byte(u>>8), byte(u)) }
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			r, n := utf8.DecodeRuneInString(raw[i:])
			for _, u := range utf16.Encode([]rune{r}) {
				unit(u)
			}
			i += n
			continue
		}
		e := raw[i+1]
		i += 2
		switch e {
		case 'u':
			if i+4 <= len(raw) {
				if u, err := strconv.ParseUint(raw[i:i+4], 16, 16); err == nil {
					unit(uint16(u))
					i += 4
					continue
				}
			}
			unit('u')
		case 'b':
			unit('\b')
		case 'f':
			unit('\f')
		case 'n':
			unit('\n')
		case 'r':
			unit('\r')
		case 't':
			unit('\t')
		default: // '"', '\\', '/'
			unit(uint16(e))
		}
	}
	return string(out)
}

// normalizeDoc checks that doc is a JSON object without repeated top-level
// members and returns it with _id and _rev set to id and rev.
func normalizeDoc(doc json.RawMessage, id, rev string) (json.RawMessage, error) {
	if !gjson.ValidBytes(doc) {
		return nil, errNotObject
	}
	return normalizeValidDoc(doc, id, rev)
}

// normalizeValidDoc is normalizeDoc for a doc known to be valid JSON (a
// push's, cut from a message conn.handle checked whole).
func normalizeValidDoc(doc json.RawMessage, id, rev string) (json.RawMessage, error) {
	// Readers disagree on a repeated member (the first wins here, the last
	// in JavaScript), so a document could say two things at once. One walk
	// finds a repeated member and reads _id and _rev. Names and values are
	// doc's own bytes, read and dropped before doc could change.
	var (
		names         memberNames
		docID, docRev string
		dup           string
		repeated      bool
		key           []byte // _key's value text, nil when absent
	)
	loose, err := walkValidObject(doc, func(text []byte, esc bool, v []byte) {
		if repeated {
			return
		}
		name := unsafe.String(unsafe.SliceData(text), len(text))
		if esc {
			name = memberName(text, esc)
		}
		if !names.add(name) {
			dup, repeated = name, true
			return
		}
		switch name {
		case "_id":
			docID = memberString(v)
		case "_rev":
			docRev = memberString(v)
		case "_key":
			key = v
		}
	})
	if err != nil {
		return nil, err
	}
	if repeated {
		return nil, fmt.Errorf("doc has the member %s more than once", Quote(Truncate(dup, 100)))
	}
	if key != nil && !keyAgrees(key, id) {
		return nil, fmt.Errorf("doc's _key %s does not agree with its id %s (the id's tail after a separator)", Truncate(string(key), 100), Quote(Truncate(id, 100)))
	}
	return stampDoc(doc, id, rev, docID, docRev, loose)
}

// IDKey is the key part of a document id, as ArangoDB's door shows it as
// _key: the text after the last '/', or the whole id.
func IDKey(id string) string { return id[strings.LastIndexByte(id, '/')+1:] }

// keyAgrees reports whether a document's _key value (its JSON text) is
// null or a key of id: the id itself, or its tail after a separator (a
// character other than a letter or digit; stores choose their separator).
// A _key naming another document would show through ArangoDB's door as a
// document that is not there.
func keyAgrees(v []byte, id string) bool {
	if string(v) == "null" {
		return true
	}
	if len(v) < 2 || v[0] != '"' {
		return false
	}
	key := memberString(v)
	if key == id {
		return true
	}
	n := len(id) - len(key)
	if key == "" || n < 2 || id[n:] != key || strings.Contains(key, "/") {
		return false
	}
	c := id[n-1]
	return !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
}

// memberNames is the set of an object's member names seen so far: a short
// list (most documents have few members), a map past it.
type memberNames struct {
	few  [16]string
	n    int
	many map[string]struct{}
}

// add adds name, or reports false when it was there already.
func (m *memberNames) add(name string) bool {
	if m.many != nil {
		if _, ok := m.many[name]; ok {
			return false
		}
		m.many[name] = struct{}{}
		return true
	}
	for _, n := range m.few[:m.n] {
		if n == name {
			return false
		}
	}
	if m.n < len(m.few) {
		m.few[m.n] = name
		m.n++
		return true
	}
	m.many = make(map[string]struct{}, 2*len(m.few))
	for _, n := range m.few {
		m.many[n] = struct{}{}
	}
	m.many[name] = struct{}{}
	return true
}

// stampDoc returns doc (an object without repeated members, whose _id and
// _rev say docID and docRev, loose when it has whitespace outside strings)
// as it is stored: with _id and _rev set to id and rev, and compact.
func stampDoc(doc json.RawMessage, id, rev, docID, docRev string, loose bool) (json.RawMessage, error) {
	if docID == id && docRev == rev {
		// Stored compact: the data file's records must not hold raw
		// newlines, and the feed should not carry the client's spacing.
		// (A space inside a string is not spacing.)
		if !loose {
			return doc, nil // compact already (clients send it so)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, doc); err != nil {
			return nil, fmt.Errorf("doc must be a JSON object: %w", err)
		}
		return buf.Bytes(), nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, fmt.Errorf("doc must be a JSON object: %w", err)
	}
	m["_id"], _ = json.Marshal(id)
	m["_rev"], _ = json.Marshal(rev)
	return json.Marshal(m)
}
