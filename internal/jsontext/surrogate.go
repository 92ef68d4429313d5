package jsontext

import (
	"bytes"
	"unsafe"
)

// HasLoneSurrogate reports whether any JSON string in text (a member name
// or a value) escapes a UTF-16 surrogate that is not half of a high-low
// pair ("\ud800", "\udc00x"). Decoders turn each such escape into U+FFFD, so
// two different strings would become one; the doors refuse them. It reads
// string tokens only, so any text is fine, valid JSON or not, and a text
// without a "\u" escape of D800 or above costs one scan at memory speed.
func HasLoneSurrogate(text []byte) bool {
	if !escapesHigh(text) {
		return false
	}
	for i := 0; i < len(text); i++ {
		if text[i] != '"' {
			continue
		}
		j := i + 1
		for j < len(text) && text[j] != '"' {
			if text[j] == '\\' {
				j++
			}
			j++
		}
		if lone(text[i:min(j+1, len(text))]) {
			return true
		}
		i = j
	}
	return false
}

// escapesHigh reports whether text holds "\u" followed by d or D: a
// surrogate's escape, or what only looks like one.
func escapesHigh(text []byte) bool {
	for i := 0; ; {
		j := bytes.Index(text[i:], []byte(`\u`))
		if j < 0 {
			return false
		}
		i += j + 2
		if i < len(text) && (text[i] == 'd' || text[i] == 'D') {
			return true
		}
	}
}

// StringHasLoneSurrogate reports whether the JSON string token raw (its
// quotes included, as gjson's Raw gives it) escapes a UTF-16 surrogate
// that is not half of a high-low pair.
func StringHasLoneSurrogate(raw string) bool {
	return lone(unsafe.Slice(unsafe.StringData(raw), len(raw)))
}

// lone reports whether the string token s (its opening quote included)
// escapes a lone surrogate.
func lone(s []byte) bool {
	for i := 0; i+5 < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if s[i+1] != 'u' {
			i++ // the escaped character, which may be a backslash
			continue
		}
		u, ok := hex4(s[i+2:])
		switch {
		case !ok || u < 0xd800 || u > 0xdfff:
		case u >= 0xdc00:
			return true // a low half with no high one before it
		default:
			lo, ok := uint32(0), false
			if i+11 < len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
				lo, ok = hex4(s[i+8:])
			}
			if !ok || lo < 0xdc00 || lo > 0xdfff {
				return true
			}
			i += 6 // the pair's low half
		}
		i += 5
	}
	return false
}

func hex4(s []byte) (uint32, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var v uint32
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint32(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint32(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | uint32(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}
