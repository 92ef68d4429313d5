package jsontext_test

import (
	"encoding/json"
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
