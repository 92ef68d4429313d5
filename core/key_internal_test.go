package core

import "testing"

// FuzzValidatePrefix checks that the one-byte walk and the general split
// give the same answer, and the same message, for any prefix and separator.
func FuzzValidatePrefix(f *testing.F) {
	for _, s := range []string{"orders", "a/b", "a//b", "/a", "a/", "/", "a b", "ü", "x-y-z", "--"} {
		f.Add(s, byte('/'))
		f.Add(s, byte('-'))
	}
	f.Fuzz(func(t *testing.T, prefix string, sep byte) {
		if prefix == "" {
			return
		}
		got, want := validatePrefixByte(prefix, sep), validatePrefixSplit(prefix, string([]byte{sep}))
		if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
			t.Fatalf("prefix %q, separator %q: walk says %v, split says %v", prefix, sep, got, want)
		}
	})
}

func TestValidatePrefix(t *testing.T) {
	for _, tc := range []struct {
		prefix, sep, err string
	}{
		{"orders", "/", ""},
		{"a/b/c", "/", ""},
		{"a::b", "::", ""},
		{"", "/", `the prefix before "/" is empty`},
		{"a//b", "/", `empty segment in prefix "a//b"`},
		{"a/", "/", `empty segment in prefix "a/"`},
		{"/a", "/", `empty segment in prefix "/a"`},
		{"a::", "::", `empty segment in prefix "a::"`},
		{"a b", "/", `byte ' ' is not allowed in prefix "a b"`},
		{"a b", "::", `byte ' ' is not allowed in prefix "a b"`},
	} {
		err := validatePrefix(tc.prefix, tc.sep)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.err {
			t.Errorf("validatePrefix(%q, %q) = %q, want %q", tc.prefix, tc.sep, got, tc.err)
		}
	}
}
