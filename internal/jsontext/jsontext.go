// Package jsontext holds the small JSON encoding helpers that hot paths use
// to build JSON by hand (documents in core, frames in client and
// syncserver) instead of going through encoding/json.
package jsontext

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// AppendString appends s to b as a JSON string, without allocating:
// quotes, backslashes and control bytes are escaped, invalid UTF-8 becomes
// U+FFFD (as encoding/json does), everything else is copied.
func AppendString(b []byte, s string) []byte {
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

// ErrNotArray is returned by SplitArray for a text that is not a JSON array.
var ErrNotArray = errors.New("not a JSON array")

// ErrTooMany is returned by SplitArray for an array of more elements than
// its limit.
var ErrTooMany = errors.New("too many array elements")

// maxDepth bounds the nesting SplitArray follows inside an element.
const maxDepth = 10000

// SplitArray returns the elements of the JSON array text as sub-slices of
// it, in one pass and without copying. It checks the array's own syntax
// (brackets, commas, whitespace) and finds where each element ends by its
// brackets and strings, but does not check what an element holds: a caller
// that takes the elements must validate each (core does, as it reads a
// document). For a valid JSON array it returns what encoding/json would,
// and when every element it returns is valid JSON, so was text. It fails
// with ErrNotArray (wrapped, with the offset) or, past limit elements (0:
// no limit), with ErrTooMany.
func SplitArray(text []byte, limit int) ([][]byte, error) {
	i := skipSpace(text, 0)
	if i >= len(text) || text[i] != '[' {
		return nil, fmt.Errorf("split array at %d: %w", i, ErrNotArray)
	}
	i = skipSpace(text, i+1)
	var out [][]byte
	if i < len(text) && text[i] == ']' {
		if skipSpace(text, i+1) != len(text) {
			return nil, fmt.Errorf("split array at %d: %w", i+1, ErrNotArray)
		}
		return out, nil
	}
	for {
		end, ok := skipElement(text, i)
		if !ok || end == i {
			return nil, fmt.Errorf("split array at %d: %w", i, ErrNotArray)
		}
		if limit > 0 && len(out) == limit {
			return nil, ErrTooMany
		}
		out = append(out, text[i:end:end])
		i = skipSpace(text, end)
		if i >= len(text) {
			return nil, fmt.Errorf("split array at %d: %w", i, ErrNotArray)
		}
		switch text[i] {
		case ',':
			i = skipSpace(text, i+1)
		case ']':
			if skipSpace(text, i+1) != len(text) {
				return nil, fmt.Errorf("split array at %d: %w", i+1, ErrNotArray)
			}
			return out, nil
		default:
			return nil, fmt.Errorf("split array at %d: %w", i, ErrNotArray)
		}
	}
}

// SkipSpace returns the index of the first byte of b at or after i that is
// not JSON whitespace.
func SkipSpace(b []byte, i int) int { return skipSpace(b, i) }

// SkipValue returns where the JSON value starting at b[i] ends, as
// SplitArray finds an element's end: by its brackets and strings, without
// checking what it holds. ok is false when it runs off the end or its
// brackets do not match.
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
