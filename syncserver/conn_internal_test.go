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
