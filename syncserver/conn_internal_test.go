package syncserver

import "testing"

func TestEscapesSurrogate(t *testing.T) {
	for _, tc := range []struct {
		data string
		want bool
	}{
		{`{"id":1,"op":"get","ids":["a"]}`, false},
		{`{"s":"\u00e9\u2028"}`, false},
		{`{"s":"\ud800"}`, true},
		{`{"s":"\uDFFF"}`, true},
		{`{"s":"\u00e9","t":"\ud83d\ude00"}`, true},
		{`{"s":"\\ud800"}`, true}, // an escaped backslash: the walk tells
		{`{"s":"\u`, false},
		{`\u`, false},
		{``, false},
	} {
		if got := escapesSurrogate([]byte(tc.data)); got != tc.want {
			t.Errorf("escapesSurrogate(%s) = %v, want %v", tc.data, got, tc.want)
		}
	}
}

// depthByBytes is depthWithin as a byte-at-a-time loop, the reference
// FuzzDepthWithin holds the word-at-a-time scan to.
func depthByBytes(data []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			depth++
			if depth > max {
				return false
			}
		case b == '}' || b == ']':
			depth--
		}
	}
	return true
}

func FuzzDepthWithin(f *testing.F) {
	f.Add([]byte(`{"a":[[[1]]],"b":"[[[[\"{{{{"}`), 3)
	f.Add([]byte(`"\\\\\\"[[[[[`), 2)
	f.Add([]byte("{\"k\":\"\x01[[[\\u005b\",\"x\":[{}]}"), 2)
	f.Add([]byte(`[[[["abcdefghijklmnop\\"qrstuvwxyz[[["]]]]`), 4)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if got, want := depthWithin(data, max), depthByBytes(data, max); got != want {
			t.Fatalf("depthWithin(%q, %d) = %v, want %v", data, max, got, want)
		}
	})
}
