package query

import (
	"strings"

	"github.com/tidwall/gjson"
)

// maxPathLen bounds a field path's text.
const maxPathLen = 1024

// Path is a field path: member names joined by dots (`customer.city`), a
// number naming an array's element (`lines.0.sku`), a backslash escaping a
// dot or a backslash in a name (`a\.b` is the member "a.b").
type Path struct {
	raw  string   // as written
	segs []string // the member names
	gj   string   // the same path in gjson's syntax
	// gjRest is the path after its first member, in gjson's syntax.
	gjRest string
}

// ParsePath parses a field path. It fails with ErrBadQuery for an empty
// path, an empty member name or a dangling backslash.
func ParsePath(s string) (Path, error) {
	if s == "" {
		return Path{}, badQuery("empty field path")
	}
	if len(s) > maxPathLen {
		return Path{}, badQuery("field path longer than %d bytes", maxPathLen)
	}
	var segs []string
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 == len(s) {
				return Path{}, badQuery("field path %q ends in a backslash", s)
			}
			i++
			b.WriteByte(s[i])
		case '.':
			if b.Len() == 0 {
				return Path{}, badQuery("field path %q has an empty member name", s)
			}
			segs = append(segs, b.String())
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	if b.Len() == 0 {
		return Path{}, badQuery("field path %q has an empty member name", s)
	}
	segs = append(segs, b.String())
	esc := make([]string, len(segs))
	for i, seg := range segs {
		esc[i] = gjson.Escape(seg)
	}
	return Path{raw: s, segs: segs, gj: strings.Join(esc, "."), gjRest: strings.Join(esc[1:], ".")}, nil
}

// MustPath is ParsePath for a path known to be valid; it panics otherwise.
func MustPath(s string) Path {
	p, err := ParsePath(s)
	if err != nil {
		panic(err)
	}
	return p
}

// String returns the path as written.
func (p Path) String() string { return p.raw }

// Segments returns the path's member names.
func (p Path) Segments() []string { return p.segs }

// Get returns the value at p in the JSON document doc; it does not exist
// when doc has none there.
func (p Path) Get(doc []byte) gjson.Result { return gjson.GetBytes(doc, p.gj) }

// GetString is Get on a document held as a string.
func (p Path) GetString(doc string) gjson.Result { return gjson.Get(doc, p.gj) }

// getIn returns the value at p inside v.
func (p Path) getIn(v gjson.Result) gjson.Result { return v.Get(p.gj) }
