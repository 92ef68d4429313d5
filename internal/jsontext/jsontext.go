// Package jsontext holds the small JSON helpers that hot paths use to build
// and read JSON by hand (documents in core, frames in client and
// syncserver) instead of going through encoding/json: a string encoder, a
// member copier, the text of a string as written, skips over whitespace
// and values, and Members, a walk over an object's
// members that checks the text with json.Valid's rules as it goes (how
// core reads a document it is given, once).
package jsontext

import (
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// AppendString appends s to b as a JSON string, without allocating:
// quotes, backslashes and control bytes are escaped, invalid UTF-8 becomes
// U+FFFD (as encoding/json does), everything else is copied.
func AppendString(b []byte, s string) []byte {
	// Ids, keys, revisions and names nearly never need escaping: such a
	// string is checked, then copied at once (a third faster, natively
	// and under WebAssembly, than the loop below).
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	const hexdig = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		// A run of bytes copied as they are, appended at once: an append
		// a byte cost several times more under WebAssembly.
		j := i
		for j < len(s) {
			if c := s[j]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
				break
			}
			j++
		}
		if j > i {
			b = append(b, s[i:j]...)
			i = j
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexdig[c>>4], hexdig[c&15])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// AppendMember appends the member k:v of an object as it is written (k
// with its quotes), after a comma unless it is the first: *n counts the
// members appended.
func AppendMember(b []byte, n *int, k, v []byte) []byte {
	if *n > 0 {
		b = append(b, ',')
	}
	*n++
	b = append(b, k...)
	b = append(b, ':')
	return append(b, v...)
}

// Unquote returns the text of the JSON string raw (quotes included) as
// Members gives it, esc reporting whether it holds an escape.
func Unquote(raw []byte, esc bool) string {
	if !esc {
		return string(raw[1 : len(raw)-1])
	}
	return gjson.ParseBytes(raw).String()
}

// NameIs reports whether the JSON string raw (quotes included, esc as
// Members gives it) is name.
func NameIs(raw []byte, esc bool, name string) bool {
	if !esc {
		return len(raw) == len(name)+2 && string(raw[1:len(raw)-1]) == name
	}
	return gjson.ParseBytes(raw).String() == name
}

// maxDepth bounds the nesting SkipValue follows inside a value.
const maxDepth = 10000

// SkipSpace returns the index of the first byte of b at or after i that is
// not JSON whitespace.
func SkipSpace(b []byte, i int) int { return skipSpace(b, i) }

// SkipValue returns where the JSON value starting at b[i] ends: by its
// brackets and strings, without checking what it holds. ok is false when
// it runs off the end or its brackets do not match.
func SkipValue(b []byte, i int) (end int, ok bool) { return skipElement(b, i) }

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipElement returns where the value starting at i ends: after its closing
// bracket for an object or array (brackets matched by kind, strings
// skipped), after the closing quote for a string, and before the next
// comma, bracket or whitespace for anything else. ok is false when the
// value runs off the end or its brackets do not match.
func skipElement(b []byte, i int) (end int, ok bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
	default:
		for i < len(b) {
			switch b[i] {
			case ',', ']', '}', '[', '{', '"', ' ', '\t', '\n', '\r':
				return i, true
			}
			i++
		}
		return i, true
	}
	var stack []byte
	var small [32]byte
	stack = small[:0]
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			e, ok := skipString(b, i)
			if !ok {
				return e, false
			}
			i = e
			continue
		case '{', '[':
			if len(stack) == maxDepth {
				return i, false
			}
			stack = append(stack, c)
		case '}', ']':
			open := byte('{')
			if c == ']' {
				open = '['
			}
			if len(stack) == 0 || stack[len(stack)-1] != open {
				return i, false
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return i + 1, true
			}
		}
		i++
	}
	return i, false
}

// skipString returns where the string starting at the quote at i ends,
// after its closing quote.
func skipString(b []byte, i int) (end int, ok bool) {
	for i++; ; i++ {
		if i = PlainRun(b, i); i >= len(b) {
			return i, false
		}
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
}
