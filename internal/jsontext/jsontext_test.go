package jsontext_test

import (
	"encoding/json"
	"testing"

	"github.com/hilodb/hilodb/internal/jsontext"
)

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "orders/1-A", `a"b`, `c\d`, "\x00\n", "é", "\xff", "_l6zhVDW---A", "plain then \x7f\x80"} {
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

// TestSkipValue finds where a value ends by its brackets and strings,
// whatever it holds, and fails where they do not match or run off the end.
func TestSkipValue(t *testing.T) {
	for _, tc := range []struct {
		text string
		end  int
		ok   bool
	}{
		{`{"a":"]}\"["},1`, 13, true},
		{`[1,[2]] x`, 7, true},
		{`"x,y" ,`, 5, true},
		{`-1.5e3,`, 6, true},
		{`tru]`, 3, true}, // what it holds is the caller's to check
		{`{"a":[1}`, 7, false},
		{`{"a":1]`, 6, false},
		{`"abc`, 4, false},
		{`{`, 1, false},
		{``, 0, false},
	} {
		end, ok := jsontext.SkipValue([]byte(tc.text), 0)
		if ok != tc.ok || ok && end != tc.end {
			t.Errorf("SkipValue(%q) = %d, %v; want %d, %v", tc.text, end, ok, tc.end, tc.ok)
		}
	}
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

// TestMemberHelpers: AppendMember joins members with commas; Unquote and
// NameIs read a string as written, escaped or not.
func TestMemberHelpers(t *testing.T) {
	var b []byte
	n := 0
	b = jsontext.AppendMember(b, &n, []byte(`"a"`), []byte(`1`))
	b = jsontext.AppendMember(b, &n, []byte(`"b"`), []byte(`{"c":[2]}`))
	if string(b) != `"a":1,"b":{"c":[2]}` || n != 2 {
		t.Errorf("AppendMember: %s (%d members)", b, n)
	}
	for _, c := range []struct {
		raw  string
		esc  bool
		text string
	}{
		{`""`, false, ""},
		{`"_id"`, false, "_id"},
		{`"\u005fid"`, true, "_id"},
		{`"a\"b\\c"`, true, `a"b\c`},
		{`"\ud834\udd1e"`, true, "𝄞"},
	} {
		if got := jsontext.Unquote([]byte(c.raw), c.esc); got != c.text {
			t.Errorf("Unquote(%s) = %q, want %q", c.raw, got, c.text)
		}
		if !jsontext.NameIs([]byte(c.raw), c.esc, c.text) || jsontext.NameIs([]byte(c.raw), c.esc, c.text+"x") {
			t.Errorf("NameIs(%s, %q) is wrong", c.raw, c.text)
		}
	}
}
