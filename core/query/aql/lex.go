package aql

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// maxQueryLen bounds a query's text; maxTokens its tokens.
const (
	maxQueryLen = 64 << 10
	maxTokens   = 8192
	maxDepth    = 32
)

// SyntaxError is a query outside the subset or malformed: Pos is the byte
// offset of the token at fault, Line and Col (from 1) the same as text.
type SyntaxError struct {
	Msg       string
	Pos       int
	Line, Col int
	Near      string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("AQL: %s near '%s' at position %d:%d (while parsing)", e.Msg, e.Near, e.Line, e.Col)
}

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tKeyword // upper-cased in text
	tNumber
	tString // text is the unquoted value
	tBind   // @name; text is the name
	tBindColl
	tPunct
)

type token struct {
	kind tokKind
	text string
	pos  int
}

// keywords are made on first use, not at the program's start (an edge
// worker's first answer waits for every package's initialisation).
var keywords = sync.OnceValue(func() map[string]bool {
	return map[string]bool{
		"FOR": true, "IN": true, "FILTER": true, "SORT": true, "LIMIT": true, "RETURN": true,
		"ASC": true, "DESC": true, "AND": true, "OR": true, "NOT": true, "LIKE": true,
		"COLLECT": true, "WITH": true, "COUNT": true, "INTO": true, "TRUE": true, "FALSE": true,
		"NULL": true, "LET": true, "INSERT": true, "UPDATE": true, "REPLACE": true, "REMOVE": true,
		"UPSERT": true, "DISTINCT": true, "AGGREGATE": true, "GRAPH": true, "SHORTEST_PATH": true,
		"OUTBOUND": true, "INBOUND": true, "ANY": true, "ALL": true, "NONE": true, "AT": true,
		"LEAST": true, "KEEP": true, "PRUNE": true, "SEARCH": true, "WINDOW": true, "OPTIONS": true,
	}
})

// lex splits text into tokens.
func lex(text string) ([]token, error) {
	if len(text) > maxQueryLen {
		return nil, errAt(text, 0, fmt.Sprintf("query longer than %d bytes", maxQueryLen))
	}
	if !utf8.ValidString(text) {
		return nil, errAt(text, 0, "query is not UTF-8")
	}
	var out []token
	i := 0
	for {
		for i < len(text) {
			c := text[i]
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				i++
				continue
			}
			if strings.HasPrefix(text[i:], "//") {
				for i < len(text) && text[i] != '\n' {
					i++
				}
				continue
			}
			if strings.HasPrefix(text[i:], "/*") {
				end := strings.Index(text[i+2:], "*/")
				if end < 0 {
					return nil, errAt(text, i, "unterminated comment")
				}
				i += end + 4
				continue
			}
			break
		}
		if len(out) >= maxTokens {
			return nil, errAt(text, i, fmt.Sprintf("query has more than %d tokens", maxTokens))
		}
		if i >= len(text) {
			out = append(out, token{kind: tEOF, pos: i})
			return out, nil
		}
		start := i
		c := text[i]
		switch {
		case isIdentStart(c):
			for i < len(text) && isIdentPart(text[i]) {
				i++
			}
			w := text[start:i]
			if up := strings.ToUpper(w); keywords()[up] {
				out = append(out, token{kind: tKeyword, text: up, pos: start})
			} else {
				out = append(out, token{kind: tIdent, text: w, pos: start})
			}
		case c == '`' || c == '\u00b4':
			end := strings.IndexByte(text[i+1:], '`')
			if end < 0 {
				return nil, errAt(text, i, "unterminated quoted name")
			}
			out = append(out, token{kind: tIdent, text: text[i+1 : i+1+end], pos: start})
			i += end + 2
		case c >= '0' && c <= '9':
			for i < len(text) && (text[i] >= '0' && text[i] <= '9') {
				i++
			}
			// A fraction, unless it is a range's "..".
			if i+1 < len(text) && text[i] == '.' && text[i+1] >= '0' && text[i+1] <= '9' {
				i++
				for i < len(text) && (text[i] >= '0' && text[i] <= '9') {
					i++
				}
			}
			if i < len(text) && (text[i] == 'e' || text[i] == 'E') {
				j := i + 1
				if j < len(text) && (text[j] == '+' || text[j] == '-') {
					j++
				}
				if j < len(text) && text[j] >= '0' && text[j] <= '9' {
					i = j
					for i < len(text) && text[i] >= '0' && text[i] <= '9' {
						i++
					}
				}
			}
			out = append(out, token{kind: tNumber, text: text[start:i], pos: start})
		case c == '"' || c == '\'':
			s, n, ok := unquote(text[i:])
			if !ok {
				return nil, errAt(text, i, "unterminated or malformed string")
			}
			out = append(out, token{kind: tString, text: s, pos: start})
			i += n
		case c == '@':
			kind := tBind
			i++
			if i < len(text) && text[i] == '@' {
				kind = tBindColl
				i++
			}
			n := i
			for i < len(text) && isIdentPart(text[i]) {
				i++
			}
			if i == n {
				return nil, errAt(text, start, "a bind parameter needs a name")
			}
			out = append(out, token{kind: kind, text: text[n:i], pos: start})
		default:
			for _, p := range []string{"==", "!=", "<=", ">=", "&&", "||", "..", "=~", "!~"} {
				if strings.HasPrefix(text[i:], p) {
					out = append(out, token{kind: tPunct, text: p, pos: start})
					i += len(p)
					goto next
				}
			}
			if strings.IndexByte("<>!()[]{},.:=+-*/%?", c) >= 0 {
				out = append(out, token{kind: tPunct, text: string(c), pos: start})
				i++
				continue
			}
			return nil, errAt(text, i, "unexpected character")
		next:
		}
	}
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// unquote reads the string literal at the start of s: its value and the
// bytes it takes.
func unquote(s string) (string, int, bool) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q:
			return b.String(), i + 1, true
		case c == '\\':
			i++
			if i >= len(s) {
				return "", 0, false
			}
			switch e := s[i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'u':
				if i+4 >= len(s) {
					return "", 0, false
				}
				var r rune
				for _, h := range s[i+1 : i+5] {
					r <<= 4
					switch {
					case h >= '0' && h <= '9':
						r |= h - '0'
					case h >= 'a' && h <= 'f':
						r |= h - 'a' + 10
					case h >= 'A' && h <= 'F':
						r |= h - 'A' + 10
					default:
						return "", 0, false
					}
				}
				if utf8.ValidRune(r) {
					b.WriteRune(r)
				} else {
					b.WriteRune(utf8.RuneError)
				}
				i += 4
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}

// errAt is a SyntaxError at byte pos of text.
func errAt(text string, pos int, msg string) *SyntaxError {
	if pos > len(text) {
		pos = len(text)
	}
	line, col := 1, 1
	for _, c := range text[:pos] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	near := text[pos:]
	if len(near) > 30 {
		near = near[:30]
		for !utf8.ValidString(near) {
			near = near[:len(near)-1]
		}
	}
	return &SyntaxError{Msg: msg, Pos: pos, Line: line, Col: col, Near: near}
}
