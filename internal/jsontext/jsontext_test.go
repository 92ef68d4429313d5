package jsontext_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/hilodb/hilodb/internal/jsontext"
)

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "orders/1-A", `a"b`, `c\d`, "\x00\n", "é", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := jsontext.AppendString([]byte("x"), s)
		if got[0] != 'x' {
			t.Fatalf("AppendString(%q) lost the prefix: %s", s, got)
		}
		// The same string as encoding/json gives, once decoded (invalid
		// UTF-8 becomes U+FFFD in both).
		want, _ := json.Marshal(s)
		var g, w string
		if err := json.Unmarshal(got[1:], &g); err != nil {
			t.Fatalf("AppendString(%q) = %s: not a JSON string: %v", s, got, err)
		}
		json.Unmarshal(want, &w)
		if g != w {
			t.Fatalf("AppendString(%q) decodes to %q, want %q", s, g, w)
		}
	})
}

func TestSplitArray(t *testing.T) {
	for _, tc := range []struct {
		text  string
		want  []string
		limit int
		err   error
	}{
		{`[]`, nil, 0, nil},
		{` [ ] `, nil, 0, nil},
		{`[{"a":1}]`, []string{`{"a":1}`}, 0, nil},
		{`[{"a":"]}\"["},[1,[2]], "x,y" ,null,-1.5e3,true]`, []string{`{"a":"]}\"["}`, `[1,[2]]`, `"x,y"`, `null`, `-1.5e3`, `true`}, 0, nil},
		{"\n[\t{}\r,{} ]\n", []string{`{}`, `{}`}, 0, nil},
		{`[tru]`, []string{`tru`}, 0, nil}, // the caller validates elements
		{`[1,2,3]`, nil, 2, jsontext.ErrTooMany},
		{`[1,2]`, []string{`1`, `2`}, 2, nil},
		{``, nil, 0, jsontext.ErrNotArray},
		{`{}`, nil, 0, jsontext.ErrNotArray},
		{`[`, nil, 0, jsontext.ErrNotArray},
		{`[1`, nil, 0, jsontext.ErrNotArray},
		{`[1,]`, nil, 0, jsontext.ErrNotArray},
		{`[,1]`, nil, 0, jsontext.ErrNotArray},
		{`[1 2]`, nil, 0, jsontext.ErrNotArray},
		{`[1]x`, nil, 0, jsontext.ErrNotArray},
		{`[] []`, nil, 0, jsontext.ErrNotArray},
		{`[{"a":[1}]`, nil, 0, jsontext.ErrNotArray},
		{`[{"a":1]`, nil, 0, jsontext.ErrNotArray},
		{`["abc]`, nil, 0, jsontext.ErrNotArray},
		{`[}]`, nil, 0, jsontext.ErrNotArray},
		{`[1"a"]`, nil, 0, jsontext.ErrNotArray},
	} {
		got, err := jsontext.SplitArray([]byte(tc.text), tc.limit)
		if !errors.Is(err, tc.err) {
			t.Errorf("SplitArray(%q): error %v, want %v", tc.text, err, tc.err)
			continue
		}
		if err != nil {
			continue
		}
		var gs []string
		for _, e := range got {
			gs = append(gs, string(e))
		}
		if !reflect.DeepEqual(gs, tc.want) {
			t.Errorf("SplitArray(%q) = %q, want %q", tc.text, gs, tc.want)
		}
	}
}

// FuzzSplitArray holds SplitArray to encoding/json: a valid array splits
// into the elements json.Unmarshal finds, and a text that splits into
// valid elements is valid.
func FuzzSplitArray(f *testing.F) {
	for _, s := range []string{`[]`, `[{"a":1},{"b":[2,"]"]}]`, `["\"",null]`, `[1,]`, `[{]}]`, ` [ 1 , 2 ] `, `[tru]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		got, err := jsontext.SplitArray(text, 0)
		var want []json.RawMessage
		validArray := json.Valid(text) && json.Unmarshal(text, &want) == nil
		if validArray {
			if err != nil {
				t.Fatalf("SplitArray(%q): %v, but it is a valid array", text, err)
			}
			if len(got) != len(want) {
				t.Fatalf("SplitArray(%q): %d elements, encoding/json finds %d", text, len(got), len(want))
			}
			for i := range got {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("SplitArray(%q): element %d is %q, encoding/json finds %q", text, i, got[i], want[i])
				}
			}
			return
		}
		if err != nil {
			return
		}
		for _, e := range got {
			if !json.Valid(e) {
				return // the caller refuses this element
			}
		}
		t.Fatalf("SplitArray(%q) split an invalid text into valid elements %q", text, got)
	})
}

// plainRunBytewise is PlainRun's definition, a byte at a time.
func plainRunBytewise(b []byte, i int) int {
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}

func TestPlainRun(t *testing.T) {
	for _, tc := range []struct {
		in    string
		start int
		want  int
	}{
		{"", 0, 0},
		{"abc", 0, 3},
		{`abc"`, 0, 3},
		{`abcdefgh"`, 0, 8},
		{`abcdefghijklmnop\`, 0, 16},
		{"abcdefg\x1f", 0, 7},
		{"abcdefgh\x00", 0, 8},
		{"\x7f\x80\xff\xfe!#[]", 0, 8},
		{`"abcdefghij"`, 1, 11},
		{"é€😀 plain text, then\n", 0, 26},
		// A flag's borrow marks the byte above it: the first one wins.
		{"ab\x00\"cdefgh", 0, 2},
		{"ab\x21\x1f\x22", 0, 3},
	} {
		if got := jsontext.PlainRun([]byte(tc.in), tc.start); got != tc.want {
			t.Errorf("PlainRun(%q, %d) = %d, want %d", tc.in, tc.start, got, tc.want)
		}
	}
}

func FuzzPlainRun(f *testing.F) {
	for _, s := range []string{"", "plain", `a"b`, "a\\b", "abcdefgh\x01", "\x20\x21\x22\x5b\x5c\x5d\x1f\x00"} {
		f.Add([]byte(s), 0)
	}
	f.Fuzz(func(t *testing.T, b []byte, i int) {
		if i < 0 || i > len(b) {
			return
		}
		if got, want := jsontext.PlainRun(b, i), plainRunBytewise(b, i); got != want {
			t.Fatalf("PlainRun(%q, %d) = %d, bytewise %d", b, i, got, want)
		}
	})
}
