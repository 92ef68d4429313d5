package syncserver

import (
	"bytes"
	"encoding/json"

	"github.com/tidwall/gjson"

	"github.com/hilodb/hilodb/internal/jsontext"
)

// unpairedSurrogate finds a request's string field (a top-level string, a
// string in a top-level array, or a push change's id, rev or baseRev) whose
// JSON text escapes a lone UTF-16 surrogate. Decoders turn one into U+FFFD,
// so two different ids or tags would become one. Documents are stored as
// sent and not checked.
func unpairedSurrogate(data []byte, msg gjson.Result) (field string, bad bool) {
	if !escapesSurrogate(data) {
		return "", false // no such escape anywhere: nothing to walk
	}
	msg.ForEach(func(k, v gjson.Result) bool {
		switch {
		case v.Type == gjson.String:
			bad = jsontext.StringHasLoneSurrogate(v.Raw)
		case v.IsArray():
			v.ForEach(func(_, e gjson.Result) bool {
				switch {
				case e.Type == gjson.String:
					bad = jsontext.StringHasLoneSurrogate(e.Raw)
				case e.IsObject() && k.Str == "changes":
					for _, f := range []string{"id", "rev", "baseRev"} {
						if x := e.Get(f); x.Type == gjson.String && jsontext.StringHasLoneSurrogate(x.Raw) {
							bad = true
						}
					}
				}
				return !bad
			})
		}
		if bad {
			field = Truncate(k.Str, 40)
		}
		return !bad
	})
	return field, bad
}

// escapesSurrogate reports whether data holds a \u escape of a code unit
// from D800 up, paired or not (or what only looks like one, after an
// escaped backslash): a scan at memory speed that spares most messages,
// megabytes of documents among them, the walk of unpairedSurrogate.
func escapesSurrogate(data []byte) bool {
	for i := 0; ; {
		j := bytes.Index(data[i:], []byte(`\u`))
		if j < 0 {
			return false
		}
		i += j + 2
		if i < len(data) && (data[i] == 'd' || data[i] == 'D') {
			return true
		}
	}
}

// Truncate cuts s to n bytes, marking the cut, as messages show a long
// name or path.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// depthWithin reports whether the JSON text in data nests arrays and objects
// at most max deep. It does not validate; it only bounds the recursion of the
// parsers that do.
func depthWithin(data []byte, max int) bool {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			// Skip the string a word at a time (most of a push's bytes
			// are strings), stopping on a backslash, which skips the
			// byte after it, and on the closing quote.
			for i++; ; i++ {
				if i = jsontext.PlainRun(data, i); i >= len(data) {
					return true
				}
				if data[i] == '\\' {
					i++
				} else if data[i] == '"' {
					break
				}
			}
		case '{', '[':
			depth++
			if depth > max {
				return false
			}
		case '}', ']':
			depth--
		}
	}
	return true
}

// Quote is s as a JSON string, as messages show a name.
func Quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// decode unmarshals a request, turning type mismatches into bad_request.
func decode(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return BadRequest("malformed request: %v", err)
	}
	return nil
}
