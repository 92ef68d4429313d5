package jsontext_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/internal/jsontext"
)

// walk collects the members Members finds in b.
func walk(b []byte) (keys, vals []string, it jsontext.Members) {
	it = jsontext.NewMembers(b, 1)
	for {
		k, v, _, ok := it.Next()
		if !ok {
			return keys, vals, it
		}
		keys, vals = append(keys, string(k)), append(vals, string(v))
	}
}

// isObject reports what Members must: b is one valid JSON value, and an
// object.
func isObject(b []byte) bool {
	t := bytes.TrimLeft(b, " \t\r\n")
	return json.Valid(b) && len(t) > 0 && t[0] == '{'
}

func TestMembers(t *testing.T) {
	tests := []struct {
		in    string
		bad   bool
		loose bool
		keys  []string
	}{
		{`{}`, false, false, nil},
		{`{"a":1,"b":"x","c":{"d":[1,2]}}`, false, false, []string{`"a"`, `"b"`, `"c"`}},
		{` { "a" : 1 } `, false, true, []string{`"a"`}},
		{`{"a":{ "nested": 1 }}`, false, false, []string{`"a"`}},
		{`{"a\u0041":true}`, false, false, []string{`"a\u0041"`}},
		{`[]`, true, false, nil},
		{`{"a":1,}`, true, false, nil},
		{`{"a":1}x`, true, false, nil},
		{`{"a":01}`, true, false, nil},
		{`{"a":"` + "\x01" + `"}`, true, false, nil},
		{``, true, false, nil},
		{strings.Repeat(`{"a":`, 10001) + `1` + strings.Repeat(`}`, 10001), true, false, nil},
	}
	for _, tc := range tests {
		name := tc.in
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			keys, _, it := walk([]byte(tc.in))
			if it.Bad() != tc.bad {
				t.Fatalf("Bad() = %v, want %v", it.Bad(), tc.bad)
			}
			if tc.bad {
				return
			}
			if it.Loose() != tc.loose {
				t.Errorf("Loose() = %v, want %v", it.Loose(), tc.loose)
			}
			if strings.Join(keys, ",") != strings.Join(tc.keys, ",") {
				t.Errorf("keys %q, want %q", keys, tc.keys)
			}
		})
	}
}

func TestElementMembers(t *testing.T) {
	text := []byte(`[{"a":1} , {"b":[2]},{"c":}]`)
	tests := []struct {
		at, end int
		bad     bool
	}{
		{1, 8, false},
		{11, 20, false},
		{21, 0, true},
	}
	for _, tc := range tests {
		it := jsontext.NewElementMembers(text, tc.at)
		for {
			if _, _, _, ok := it.Next(); !ok {
				break
			}
		}
		if it.Bad() != tc.bad || !tc.bad && it.End() != tc.end {
			t.Errorf("element at %d: Bad %v End %d, want %v %d", tc.at, it.Bad(), it.End(), tc.bad, tc.end)
		}
	}
}

// FuzzMembers checks Members against encoding/json: it accepts exactly
// the valid JSON objects, finds their members as written, and says an
// object is compact only when its members joined by commas in braces are
// the whole text.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, ` {"a" : [1, {"b":null}]} `, `{"\u00e9":"x\"y"}`, `{"a":1e5,"b":-0.5}`, `[1]`, `{"a"}`, `{"a":tru}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		keys, vals, it := walk(b)
		if want := !isObject(b); it.Bad() != want {
			t.Fatalf("%q: Bad() = %v, want %v", b, it.Bad(), want)
		}
		if it.Bad() {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		parts := make([]string, len(keys))
		for i := range keys {
			var k string
			if err := json.Unmarshal([]byte(keys[i]), &k); err != nil {
				t.Fatalf("%q: key %q: %v", b, keys[i], err)
			}
			if !json.Valid([]byte(vals[i])) {
				t.Fatalf("%q: value %q of %s is not valid JSON", b, vals[i], keys[i])
			}
			if _, ok := m[k]; !ok {
				t.Fatalf("%q: key %q not in the object", b, k)
			}
			parts[i] = keys[i] + ":" + vals[i]
		}
		joined := "{" + strings.Join(parts, ",") + "}"
		if !it.Loose() && joined != string(b) {
			t.Fatalf("%q: not Loose, but its members make %q", b, joined)
		}
	})
}
