package rql

import (
	"strings"
	"unicode/utf8"
)

// tokKind is the kind of one token of a query's text.
type tokKind int

const (
	tokEOF    tokKind = iota
	tokWord           // a name or keyword: from, Orders, address.city, lines[].sku, @all_docs
	tokString         // 'text' or "text", unquoted
	tokNumber         // 12, -3.5, 1e3
	tokParam          // $p0 (the name without $)
	tokPunct          // ( ) , = != <> < <= > >= *
	tokBlock          // { ... }: a JavaScript body, never run
)

// token is one token and where it starts (a byte offset).
type token struct {
	kind tokKind
	text string
	pos  int
}

// maxTokens bounds the tokens of one query, so a hostile one costs little.
const maxTokens = 4096

// lex splits text into tokens.
func lex(text string) ([]token, error) {
	var out []token
	i := 0
	for i < len(text) {
		if len(out) >= maxTokens {
			return nil, errorAt(i, "the query has more than %d tokens", maxTokens)
		}
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\'' || c == '"':
			s, n, err := lexString(text, i)
			if err != nil {
				return nil, err
			}
			out = append(out, token{tokString, s, i})
			i = n
		case c == '$':
			j := i + 1
			for j < len(text) && isWordByte(text[j]) && text[j] != '.' && text[j] != '[' && text[j] != ']' {
				j++
			}
			if j == i+1 {
				return nil, errorAt(i, "a parameter needs a name after $")
			}
			out = append(out, token{tokParam, text[i+1 : j], i})
			i = j
		case c >= '0' && c <= '9' || c == '-' && i+1 < len(text) && text[i+1] >= '0' && text[i+1] <= '9':
			j := i + 1
			for j < len(text) && (text[j] >= '0' && text[j] <= '9' || text[j] == '.' || text[j] == 'e' || text[j] == 'E' ||
				(text[j] == '+' || text[j] == '-') && (text[j-1] == 'e' || text[j-1] == 'E')) {
				j++
			}
			out = append(out, token{tokNumber, text[i:j], i})
			i = j
		case c == '!' || c == '<' || c == '>':
			if i+1 < len(text) && (text[i+1] == '=' || c == '<' && text[i+1] == '>') {
				out = append(out, token{tokPunct, text[i : i+2], i})
				i += 2
				continue
			}
			if c == '!' {
				return nil, errorAt(i, "'!' must be followed by '='")
			}
			out = append(out, token{tokPunct, text[i : i+1], i})
			i++
		case c == '=' && i+1 < len(text) && text[i+1] == '=':
			out = append(out, token{tokPunct, "=", i})
			i += 2
		case c == '{':
			n, err := skipBlock(text, i)
			if err != nil {
				return nil, err
			}
			out = append(out, token{tokBlock, text[i:n], i})
			i = n
		case strings.IndexByte("(),=*", c) >= 0:
			out = append(out, token{tokPunct, text[i : i+1], i})
			i++
		case isWordByte(c) || c >= 0x80:
			// '-' inside a name (@metadata.@nested-object-types), never
			// first: a '-' first starts a number.
			j := i
			for j < len(text) && (isWordByte(text[j]) || text[j] >= 0x80 || text[j] == '-' && j > i) {
				j++
			}
			if !utf8.ValidString(text[i:j]) {
				return nil, errorAt(i, "the query is not UTF-8")
			}
			out = append(out, token{tokWord, text[i:j], i})
			i = j
		default:
			return nil, errorAt(i, "unexpected character %q", rune(c))
		}
	}
	return append(out, token{tokEOF, "", len(text)}), nil
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '@' || c == '.' || c == '[' || c == ']'
}

// lexString reads a quoted string starting at text[i]: a backslash
// escapes the next character, and the quote doubled stands for itself.
func lexString(text string, i int) (string, int, error) {
	q := text[i]
	var b strings.Builder
	j := i + 1
	for j < len(text) {
		c := text[j]
		switch {
		case c == '\\' && j+1 < len(text):
			b.WriteByte(text[j+1])
			j += 2
		case c == q && j+1 < len(text) && text[j+1] == q:
			b.WriteByte(q)
			j += 2
		case c == q:
			if !utf8.ValidString(b.String()) {
				return "", 0, errorAt(i, "a string that is not UTF-8")
			}
			return b.String(), j + 1, nil
		default:
			b.WriteByte(c)
			j++
		}
	}
	return "", 0, errorAt(i, "a string that is never closed")
}

// skipBlock returns the end of the braced block starting at text[i],
// stepping over strings.
func skipBlock(text string, i int) (int, error) {
	depth := 0
	for j := i; j < len(text); j++ {
		switch text[j] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return j + 1, nil
			}
		case '\'', '"', '`':
			q := text[j]
			for j++; j < len(text) && text[j] != q; j++ {
				if text[j] == '\\' {
					j++
				}
			}
		}
	}
	return 0, errorAt(i, "a '{' that is never closed")
}
