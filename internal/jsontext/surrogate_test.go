package jsontext_test

import (
	"encoding/json"
	"testing"
	"unicode/utf16"

	"github.com/hilodb/hilodb/internal/jsontext"
)

func TestHasLoneSurrogate(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{`{"id":"lone/\ud800"}`, true},
		{`{"id":"lone/\udc00"}`, true},
		{`{"\uDBFF":1}`, true},
		{`["a","\ud800\ud800"]`, true},
		{`{"s":"\ud800x"}`, true},
		{`{"s":"\ud83d\ude00"}`, false},
		{`{"s":"\\ud800"}`, false},
		{`{"s":"\\\ud800"}`, true},
		{`{"s":"\u00e9\u0041"}`, false},
		{`{"s":"\ud800`, true},
		{`no strings \ud800`, false},
		{``, false},
	} {
		if got := jsontext.HasLoneSurrogate([]byte(tc.text)); got != tc.want {
			t.Errorf("HasLoneSurrogate(%s) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

// FuzzHasLoneSurrogate checks HasLoneSurrogate against a slow reference on
// one JSON string of code units: it has a lone surrogate when its UTF-16
// units do not decode to runes without U+FFFD.
func FuzzHasLoneSurrogate(f *testing.F) {
	f.Add([]byte{0xd8, 0x00, 0x00, 0x41})
	f.Add([]byte{0xd8, 0x3d, 0xde, 0x00})
	f.Add([]byte{0xdc, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		units := make([]uint16, len(b)/2)
		for i := range units {
			units[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
		}
		text := []byte(`"`)
		for _, u := range units {
			text = append(text, []byte(`\u`)...)
			text = append(text, "0123456789abcdef"[u>>12], "0123456789abcdef"[u>>8&15], "0123456789abcdef"[u>>4&15], "0123456789abcdef"[u&15])
		}
		text = append(text, '"')
		want := false
		for i := 0; i < len(units); i++ {
			switch u := units[i]; {
			case u >= 0xdc00 && u <= 0xdfff:
				want = true
			case u >= 0xd800 && u < 0xdc00:
				if i+1 < len(units) && units[i+1] >= 0xdc00 && units[i+1] <= 0xdfff {
					i++
				} else {
					want = true
				}
			}
		}
		if got := jsontext.HasLoneSurrogate(text); got != want {
			t.Fatalf("HasLoneSurrogate(%s) = %v, want %v", text, got, want)
		}
		if !want {
			var s string
			if err := json.Unmarshal(text, &s); err != nil || string(utf16.Decode(units)) != s {
				t.Fatalf("%s: a text without lone surrogates decodes to %q, %v", text, s, err)
			}
		}
	})
}
