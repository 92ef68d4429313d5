package core

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/internal/jsontext"
	"github.com/tidwall/gjson"
)

// refScanBody is scanBody as it was written with encoding/json and gjson:
// the scanner must agree with it on every input.
func refScanBody(body []byte) (sysAttrs, *Error) {
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
	if err != nil {
		return sysAttrs{}, err
	}
	return a, nil
}

// refEncodeDoc is encodeDoc as it was written with gjson, for a document
// with no extra metadata.
func refEncodeDoc(body []byte, id, key, rev, coll string) ([]byte, *Error) {
	out := []byte{'{'}
	var userMeta gjson.Result
	n := 0
	member := func(out []byte, n *int, k, v gjson.Result) []byte {
		if *n > 0 {
			out = append(out, ',')
		}
		*n++
		out = append(out, k.Raw...)
		out = append(out, ':')
		return append(out, v.Raw...)
	}
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		switch k.String() {
		case "_id", "_key", "_rev", "_oldRev":
			return true
		case "@metadata":
			userMeta = v
			return true
		}
		out = member(out, &n, k, v)
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
			if k.String() == "@collection" {
				return true
			}
			out = member(out, &m, k, v)
			return true
		})
	}
	if m > 0 {
		out = append(out, ',')
	}
	out = append(out, `"@collection":`...)
	out = jsontext.AppendString(out, coll)
	out = append(out, "}}"...)
	return out, nil
}

var scanSeeds = []string{
	`{}`, ` { } `, `{"a":1}`, `{"a" : 1 , "b":[1, 2,{"c":null}]}`, `{"_id":"orders/1-A","_rev":"x","n":1}`,
	`{"_id":null,"_key":"k"}`, `{"_id":5}`, `{"_key":true,"_id":5}`, `{"_rev":7}`, `{"\u005fid":"esc"}`,
	`{"_id":"a\"b\u00e9"}`, `{"@metadata":{"@collection":"x","a":1}}`, `{"@metadata":null}`, `{"@metadata":[1]}`,
	`{"_oldRev":"r","a":-0.5e+3}`, `[1]`, `"s"`, `{"a":01}`, `{"a":1,}`, `{"a":"\x01"}`, `{"a":"\q"}`,
	`{"a":"\u12"}`, `{"a":1}x`, `{"a":tru}`, `{"a":1e}`, `{"a":.5}`, `{"a":-}`, `{"a":[1,]}`, `{"a" 1}`,
	`{"a":{"b":{}}}`, "{\"a\":\"\xff\"}", `{"_id":"x","_id":"y"}`, `{"_id":5,"_id":"y"}`, "\t{\"a\":1}\n",
	`{"a":1}{`, `{"a":[]}`, `{"a":[[]]}`, `{"a":{"b":1,"c":[true,false,null]}}`, `{"@metadata":{"@collection":"x"},"z":1}`,
}

func FuzzScanBody(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, gerr := scanBody(body)
		want, werr := refScanBody(body)
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Num != werr.Num {
			t.Fatalf("scanBody(%q): error %v, want %v", body, gerr, werr)
		}
		if gerr != nil {
			return
		}
		plain := got.plain
		got.plain = false
		if got != want {
			t.Fatalf("scanBody(%q) = %+v, want %+v", body, got, want)
		}
		wantDoc, werr := refEncodeDoc(body, "orders/1-A", "1-A", "_l6zhVDW---A", "orders")
		for _, p := range []bool{false, plain} {
			gotDoc, gerr := encodeDoc(body, p, "orders/1-A", "1-A", "_l6zhVDW---A", "orders", nil)
			if (gerr == nil) != (werr == nil) || !bytes.Equal(gotDoc, wantDoc) {
				t.Fatalf("encodeDoc(%q, plain %v) = %s, %v; want %s, %v", body, p, gotDoc, gerr, wantDoc, werr)
			}
			// A plain body's stored form fills its buffer (docString may
			// store the buffer itself): at most the comma an empty one
			// does not need is left over.
			if p && gerr == nil && cap(gotDoc)-len(gotDoc) > 1 {
				t.Fatalf("encodeDoc(%q): %d bytes in a buffer of %d", body, len(gotDoc), cap(gotDoc))
			}
		}
	})
}

func TestScanBodySeeds(t *testing.T) {
	for _, s := range scanSeeds {
		_, gerr := scanBody([]byte(s))
		_, werr := refScanBody([]byte(s))
		if (gerr == nil) != (werr == nil) {
			t.Errorf("scanBody(%q): error %v, want %v", s, gerr, werr)
		}
	}
}

// TestScanDepth checks the nesting limit json.Valid has: 10,000 levels.
func TestScanDepth(t *testing.T) {
	for _, levels := range []int{2, 9999, 10000, 10001, 20000} {
		inner := levels - 1 // the document itself is the first level
		body := []byte(`{"a":` + strings.Repeat("[", inner) + strings.Repeat("]", inner) + `}`)
		_, err := scanBody(body)
		if want := json.Valid(body); (err == nil) != want {
			t.Errorf("%d levels: scanBody error %v, json.Valid %v", levels, err, want)
		}
	}
}

func TestEncodeDocPlain(t *testing.T) {
	for _, tc := range []struct {
		body  string
		plain bool
	}{
		{`{"a":1,"b":{"c" : 2}}`, true},
		{`{}`, true},
		{`{ "a":1}`, false},
		{`{"a":1} `, false},
		{`{"_key":"k","a":1}`, false},
		{`{"a":1,"@metadata":{}}`, false},
		{`{"_idx":1,"@meta":2}`, true},
	} {
		a, err := scanBody([]byte(tc.body))
		if err != nil || a.plain != tc.plain {
			t.Errorf("scanBody(%s): plain %v, %v; want plain %v", tc.body, a.plain, err, tc.plain)
		}
	}
}

func TestEncodeDocExtraMeta(t *testing.T) {
	body := []byte(`{"a":1,"@metadata":{"Raven-Node-Type":"Old","\u0040flags":"x","@collection":"y"}}`)
	out, err := encodeDoc(body, false, "orders/1-A", "1-A", "r", "orders", map[string]json.RawMessage{"Raven-Node-Type": json.RawMessage(`"Order"`)})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":1,"_id":"orders/1-A","_key":"1-A","_rev":"r","@metadata":{"\u0040flags":"x","Raven-Node-Type":"Order","@collection":"orders"}}`
	if string(out) != want {
		t.Fatalf("got %s\nwant %s", out, want)
	}
}

// BenchmarkScanBody reads a small document and one with longer strings, as
// a write does once per document.
func BenchmarkScanBody(b *testing.B) {
	for _, bc := range []struct{ name, doc string }{
		{"small", `{"total":12345,"item":"widget","qty":3,"note":"a small order"}`},
		{"strings", `{"name":"Alice Johnson","email":"alice.johnson@example.com","address":"1234 Elm Street, Springfield, IL 62704","note":"Prefers delivery in the morning; leave the parcel with the neighbour at number 12 if nobody answers the door.","tags":["priority","wholesale"]}`},
	} {
		doc := []byte(bc.doc)
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if _, err := scanBody(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
