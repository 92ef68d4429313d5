package syncserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/hilodb/hilodb/internal/wire"
)

// refNormalizeValidDoc is normalizeValidDoc as it was with gjson's member
// walk: the one-pass walk must give the same documents and the same errors.
func refNormalizeValidDoc(doc json.RawMessage, id, rev string) (json.RawMessage, error) {
	doc = bytes.TrimSpace(doc)
	if len(doc) == 0 || doc[0] != '{' {
		return nil, errors.New("doc must be a JSON object")
	}
	var (
		names              memberNames
		dup, docID, docRev string
		repeated           bool
	)
	wire.ParseInPlace(doc).ForEach(func(k, v gjson.Result) bool {
		if !names.add(k.Str) {
			dup, repeated = k.Str, true
			return false
		}
		switch k.Str {
		case "_id":
			docID = v.String()
		case "_rev":
			docRev = v.String()
		}
		return true
	})
	if repeated {
		return nil, fmt.Errorf("doc has the member %s more than once", Quote(Truncate(dup, 100)))
	}
	return stampDoc(doc, id, rev, docID, docRev, bytes.ContainsAny(doc, " \t\r\n"))
}

// FuzzNormalizeValidDoc holds normalizeValidDoc to refNormalizeValidDoc on
// every valid JSON text.
func FuzzNormalizeValidDoc(f *testing.F) {
	for _, s := range []string{
		`{"_id":"d/1","_rev":"r1","a":1}`,
		"{\"_id\":\"d/1\",\n \"_rev\":\"r1\", \"a\": [1, 2]}",
		`{"_id":"other","a":1}`,
		`{"a":1,"b":2,"a":3}`,
		`{"a":1,"\u0061":2}`,
		`{"_id":"d\/1","_rev":"r1","note":"a small order"}`,
		`{"_id":1,"_rev":null}`,
		` {"_id":"d/1","_rev":"r1"} `,
		`{"_id":"d/1","_rev":"r1","x":{"y":[1,{"z":" "}]}}`,
		`{}`, `[1]`, `"s"`, `1`, `{"a":[]}`, `{"":0,"":1}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		doc := []byte(s)
		if !gjson.ValidBytes(doc) || !json.Valid(doc) {
			return
		}
		got, err := normalizeValidDoc(append([]byte(nil), doc...), "d/1", "r1")
		want, werr := refNormalizeValidDoc(append([]byte(nil), doc...), "d/1", "r1")
		if (err == nil) != (werr == nil) {
			t.Fatalf("%s: error %v, the gjson walk's %v", s, err, werr)
		}
		if err != nil {
			return
		}
		// Both compact it alike; a rewritten document is encoding/json's.
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: %s, the gjson walk's %s", s, got, want)
		}
	})
}

func TestWalkValidObject(t *testing.T) {
	for _, tc := range []struct {
		doc     string
		members string
		loose   bool
		err     error
	}{
		{`{}`, "", false, nil},
		{`{"a":1,"b":"x y","c":{"d":[1,2]}}`, `a=1 b="x y" c={"d":[1,2]} `, false, nil},
		{`{"a" : 1}`, "a=1 ", true, nil},
		{"{\"a\":[1,\n2]}", "a=[1,\n2] ", true, nil},
		{`{"\u0061":true}`, `\u0061(esc)=true `, false, nil},
		{`[1]`, "", false, errNotObject},
		{`{"a":1`, "", false, errNotObject},
		{`{"a":1}x`, "", false, errNotObject},
	} {
		var b bytes.Buffer
		loose, err := walkValidObject([]byte(tc.doc), func(name []byte, esc bool, v []byte) {
			b.Write(name)
			if esc {
				b.WriteString("(esc)")
			}
			fmt.Fprintf(&b, "=%s ", v)
		})
		if !errors.Is(err, tc.err) || err == nil && (b.String() != tc.members || loose != tc.loose) {
			t.Errorf("walkValidObject(%s) = %q, loose %v, %v; want %q, loose %v, %v", tc.doc, b.String(), loose, err, tc.members, tc.loose, tc.err)
		}
	}
}

// BenchmarkNormalizeValidDoc: a small document as clients push it, through
// the one-pass walk and through the gjson walk it replaced.
func BenchmarkNormalizeValidDoc(b *testing.B) {
	doc := []byte(`{"_id":"orders/1-A","_rev":"_k1a2b3c4---","total":1234,"item":"widget","qty":3,"note":"a small order"}`)
	for _, f := range []struct {
		name string
		fn   func(json.RawMessage, string, string) (json.RawMessage, error)
	}{{"walk", normalizeValidDoc}, {"gjson", refNormalizeValidDoc}} {
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.fn(doc, "orders/1-A", "_k1a2b3c4---"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
