package syncserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"unsafe"

	"github.com/tidwall/gjson"
)

// errNotObject is what a document that is not one JSON object gets.
var errNotObject = errors.New("doc must be a JSON object")

// walkValidObject walks the top-level members of the JSON object in b, which
// the caller knows to be valid JSON, in one pass over its bytes: for each
// member it calls fn with the name's text between its quotes (esc: it holds
// an escape) and the value's text. loose reports whitespace outside strings
// (the document is not compact). It fails on a text that is not one object;
// on valid JSON that is the only failure. A push's documents all pass here,
// where gjson's member walk parsed every value.
func walkValidObject(b []byte, fn func(name []byte, esc bool, value []byte)) (loose bool, err error) {
	i := skipWhite(b, 0, &loose)
	if i >= len(b) || b[i] != '{' {
		return false, errNotObject
	}
	i = skipWhite(b, i+1, &loose)
	if i < len(b) && b[i] == '}' {
		return loose || skipWhite(b, i+1, &loose) != len(b), nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false, errNotObject
		}
		end, esc := skipQuoted(b, i)
		if end < 0 {
			return false, errNotObject
		}
		name := b[i+1 : end-1]
		i = skipWhite(b, end, &loose)
		if i >= len(b) || b[i] != ':' {
			return false, errNotObject
		}
		i = skipWhite(b, i+1, &loose)
		vend := skipValueLoose(b, i, &loose)
		if vend < 0 {
			return false, errNotObject
		}
		fn(name, esc, b[i:vend])
		i = skipWhite(b, vend, &loose)
		if i >= len(b) {
			return false, errNotObject
		}
		switch b[i] {
		case ',':
			i = skipWhite(b, i+1, &loose)
		case '}':
			if skipWhite(b, i+1, &loose) != len(b) {
				return false, errNotObject
			}
			return loose, nil
		default:
			return false, errNotObject
		}
	}
}

// skipWhite returns the index of the first byte at or after i that is not
// JSON whitespace, and sets *loose when it skipped any.
func skipWhite(b []byte, i int, loose *bool) int {
	j := i
	for j < len(b) && (b[j] == ' ' || b[j] == '\n' || b[j] == '\r' || b[j] == '\t') {
		j++
	}
	if j != i {
		*loose = true
	}
	return j
}

// skipQuoted returns the index after the string that opens at b[i], and
// whether it holds an escape; end is -1 when it does not close.
func skipQuoted(b []byte, i int) (end int, esc bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			esc = true
			j++
		case '"':
			return j + 1, esc
		}
	}
	return -1, esc
}

// skipValueLoose returns the index after the value that starts at b[i]
// (valid JSON), setting *loose on whitespace outside its strings; -1 when
// the text ends first.
func skipValueLoose(b []byte, i int, loose *bool) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := skipQuoted(b, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := skipQuoted(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			case ' ', '\n', '\r', '\t':
				*loose = true
			}
		}
		return -1
	default: // a number, true, false or null
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\n', '\r', '\t':
				return j
			}
			j++
		}
		return j
	}
}

// memberName is a member's name as a reader sees it: its text, or the
// text unescaped when it holds an escape.
func memberName(text []byte, esc bool) string {
	if !esc {
		return string(text)
	}
	var s string
	quoted := make([]byte, 0, len(text)+2)
	quoted = append(append(append(quoted, '"'), text...), '"')
	if json.Unmarshal(quoted, &s) != nil {
		return string(text)
	}
	return s
}

// memberString is a member's value as gjson's String reads it: a string's
// text unescaped, any other value's text.
func memberString(v []byte) string {
	if len(v) >= 2 && v[0] == '"' && bytes.IndexByte(v, '\\') < 0 {
		return unsafe.String(unsafe.SliceData(v[1:]), len(v)-2)
	}
	return gjson.ParseBytes(v).String()
}

// RepeatedMember returns a top-level member name that the JSON object doc
// has more than once (names compared as a reader sees them, escapes
// undone). Readers disagree on which copy counts, so the HTTP doors refuse
// such a document as the websocket does. A doc that is not valid JSON has
// none: the caller's decoder says what is wrong with it.
func RepeatedMember(doc []byte) (string, bool) {
	if !gjson.ValidBytes(doc) {
		return "", false
	}
	var (
		names    memberNames
		dup      string
		repeated bool
	)
	_, _ = walkValidObject(doc, func(text []byte, esc bool, _ []byte) {
		if !repeated && !names.add(memberName(text, esc)) {
			dup, repeated = memberName(text, esc), true
		}
	})
	return dup, repeated
}
