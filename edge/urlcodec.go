package main

import (
	"errors"
	"strconv"
	"strings"
)

// The worker decodes its requests' paths and queries here rather than with
// net/url: net/url brings net/netip, unique and weak, whose initialisation
// is paid by every cold start of the Go program. What is here decodes as
// net/url does, messages included (FuzzURLCodec holds it to that).

// values is a decoded query: each key's values in order.
type values map[string][]string

// Get returns the first value of key, "" if it has none.
func (v values) Get(key string) string {
	if vs := v[key]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// maxQueryParams is net/url's bound on a query's parameters.
const maxQueryParams = 10000

var (
	errSemicolon   = errors.New("invalid semicolon separator in query")
	errQueryParams = errors.New("number of URL query parameters exceeded limit")
)

// escapeError is a malformed %-escape, worded as net/url's EscapeError.
type escapeError string

func (e escapeError) Error() string { return "invalid URL escape " + strconv.Quote(string(e)) }

// parseQuery decodes a raw query (without "?") as url.ParseQuery does:
// the values it could decode, and the first error met (a semicolon's, if
// any, takes the place of an escape's).
func parseQuery(query string) (values, error) {
	m := values{}
	if strings.Count(query, "&")+1 > maxQueryParams {
		return m, errQueryParams
	}
	var err error
	for query != "" {
		var key string
		key, query, _ = strings.Cut(query, "&")
		if strings.Contains(key, ";") {
			err = errSemicolon
			continue
		}
		if key == "" {
			continue
		}
		key, value, _ := strings.Cut(key, "=")
		key, err1 := unescape(key, true)
		if err1 != nil {
			if err == nil {
				err = err1
			}
			continue
		}
		value, err1 = unescape(value, true)
		if err1 != nil {
			if err == nil {
				err = err1
			}
			continue
		}
		m[key] = append(m[key], value)
	}
	return m, err
}

// pathUnescape decodes %-escapes as url.PathUnescape does.
func pathUnescape(s string) (string, error) { return unescape(s, false) }

// unescape decodes %-escapes, and with query '+' as a space.
func unescape(s string, query bool) (string, error) {
	n := 0
	plus := false
	for i := 0; i < len(s); {
		switch s[i] {
		case '%':
			n++
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				s = s[i:]
				if len(s) > 3 {
					s = s[:3]
				}
				return "", escapeError(s)
			}
			i += 3
		case '+':
			plus = query
			i++
		default:
			i++
		}
	}
	if n == 0 && !plus {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s) - 2*n)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '%':
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
		case c == '+' && query:
			b.WriteByte(' ')
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// escapePath escapes a path as url.URL.EscapedPath does for a URL whose
// Path alone is set: every byte but the unreserved ones and
// $ & + , / : ; = @ as %XX.
func escapePath(p string) string {
	if p == "*" {
		return p
	}
	n := 0
	for i := 0; i < len(p); i++ {
		if escapeInPath(p[i]) {
			n++
		}
	}
	if n == 0 {
		return p
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(p)+2*n)
	for i := 0; i < len(p); i++ {
		if c := p[i]; escapeInPath(c) {
			b = append(b, '%', hex[c>>4], hex[c&15])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

func escapeInPath(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return false
	}
	switch c {
	case '-', '_', '.', '~', '$', '&', '+', ',', '/', ':', ';', '=', '@':
		return false
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
