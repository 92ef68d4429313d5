package query

import (
	"encoding/base64"
	"hash/fnv"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

// MaxSkip bounds a query's skip; a bookmark pages further at no cost.
const MaxSkip = 1 << 20

// idPath is the _id field every sort ends with, so an order is total. It
// is parsed on first use, not at the program's start (an edge worker's
// first answer waits for every package's initialisation).
var idPath = sync.OnceValue(func() Path { return MustPath("_id") })

// SortField is one sort criterion: a path, ascending unless Desc.
type SortField struct {
	Path Path
	Desc bool
}

// Query is what a front end asks: which documents (Selector), in which
// order (Sort, then _id), which page (Skip and Limit, or after Bookmark),
// and which of their fields (Fields, all when empty).
type Query struct {
	Selector *Selector
	Sort     []SortField
	Limit    int    // at most this many documents; 0: no limit
	Skip     int    // documents to pass over first
	Fields   []Path // the fields each document is projected to; empty: all
	Bookmark string // from an earlier page's result: start after its last document
	UseIndex string // the name of the index to use, when the planner should not choose
}

// Parse reads a query in the shape of PouchDB's find:
//
//	{"selector": {...}, "sort": ["a", {"b": "desc"}], "limit": 20,
//	 "skip": 0, "fields": ["_id", "a"], "bookmark": "...", "use_index": "by-a"}
//
// Every member but selector is optional; an unknown member or a value of
// the wrong kind fails with ErrBadQuery.
func Parse(b []byte) (*Query, error) {
	if !gjson.ValidBytes(b) {
		return nil, badQuery("query is not valid JSON")
	}
	v := gjson.ParseBytes(b)
	if !v.IsObject() {
		return nil, badQuery("query must be a JSON object")
	}
	q := &Query{}
	var err error
	v.ForEach(func(k, val gjson.Result) bool {
		switch k.Str {
		case "selector":
			if !val.IsObject() {
				err = badQuery("selector must be a JSON object")
				return false
			}
			q.Selector, err = ParseSelector([]byte(val.Raw))
		case "sort":
			q.Sort, err = ParseSort(val)
		case "limit":
			q.Limit, err = wholeNumber("limit", val, 1<<31-1)
		case "skip":
			q.Skip, err = wholeNumber("skip", val, MaxSkip)
		case "fields":
			q.Fields, err = parseFields(val)
		case "bookmark":
			if val.Type != gjson.String {
				err = badQuery("bookmark must be a string")
			}
			q.Bookmark = val.Str
		case "use_index":
			if val.Type != gjson.String {
				err = badQuery("use_index must be an index name")
			}
			q.UseIndex = val.Str
		default:
			err = badQuery("unknown query member %q (selector, sort, limit, skip, fields, bookmark, use_index)", k.Str)
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if q.Selector == nil {
		q.Selector = &Selector{root: andNode{}}
	}
	if q.Bookmark != "" {
		if b, err := base64.RawURLEncoding.DecodeString(q.Bookmark); err != nil || len(b) < 5 || b[0] != bookmarkVersion {
			return nil, badQuery("bookmark is not one a query gave: ask again without it")
		}
	}
	return q, nil
}

func wholeNumber(name string, v gjson.Result, max int) (int, error) {
	if v.Type != gjson.Number || v.Num < 0 || v.Num != float64(int64(v.Num)) || v.Num > float64(max) {
		return 0, badQuery("%s must be a whole number from 0 to %d", name, max)
	}
	return int(v.Num), nil
}

// ParseSort reads a sort: an array of field paths (ascending) and
// single-member objects {"path": "asc"|"desc"}.
func ParseSort(v gjson.Result) ([]SortField, error) {
	if !v.IsArray() {
		return nil, badQuery(`sort must be an array of field names and {"field": "asc"|"desc"}`)
	}
	var out []SortField
	var err error
	v.ForEach(func(_, e gjson.Result) bool {
		var f SortField
		switch {
		case e.Type == gjson.String:
			f.Path, err = ParsePath(e.Str)
		case e.IsObject():
			n := 0
			e.ForEach(func(k, dir gjson.Result) bool {
				n++
				f.Path, err = ParsePath(k.Str)
				if err == nil {
					switch dir.Str {
					case "asc":
					case "desc":
						f.Desc = true
					default:
						err = badQuery(`sort direction for %q must be "asc" or "desc"`, k.Str)
					}
				}
				return err == nil
			})
			if err == nil && n != 1 {
				err = badQuery("each sort object names one field")
			}
		default:
			err = badQuery(`sort must be an array of field names and {"field": "asc"|"desc"}`)
		}
		if err == nil && len(out) >= 16 {
			err = badQuery("at most 16 sort fields")
		}
		out = append(out, f)
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func parseFields(v gjson.Result) ([]Path, error) {
	if !v.IsArray() {
		return nil, badQuery("fields must be an array of field names")
	}
	var out []Path
	var err error
	v.ForEach(func(_, e gjson.Result) bool {
		if e.Type != gjson.String {
			err = badQuery("fields must be an array of field names")
			return false
		}
		var p Path
		if p, err = ParsePath(e.Str); err != nil {
			return false
		}
		if len(out) >= 256 {
			err = badQuery("at most 256 fields")
			return false
		}
		out = append(out, p)
		return true
	})
	return out, err
}

// SortKey returns the key the query orders doc by: its sort fields' keys
// (a descending field's bytes inverted) and its _id last. Keys of two
// documents compare (bytes.Compare) as the query orders them.
func (q *Query) SortKey(doc []byte) []byte {
	return q.AppendSortKey(nil, gjson.ParseBytes(doc))
}

// AppendSortKey appends the sort key of the parsed document v to dst.
func (q *Query) AppendSortKey(dst []byte, v gjson.Result) []byte {
	dst, _ = q.appendSortKey(dst, v)
	return dst
}

// appendSortKey is AppendSortKey; it also returns the length of the id
// that ends the key.
func (q *Query) appendSortKey(dst []byte, v gjson.Result) ([]byte, int) {
	for _, f := range q.Sort {
		start := len(dst)
		dst = AppendKey(dst, f.Path.getIn(v))
		if f.Desc {
			for i := start; i < len(dst); i++ {
				dst[i] = ^dst[i]
			}
		}
	}
	id := idPath().getIn(v).Str
	return append(dst, id...), len(id)
}

// bookmarkVersion starts every bookmark, so a later format can be told
// apart.
const bookmarkVersion = 'q'

// sortHash names a query's order in its bookmarks: a bookmark from a
// query that orders otherwise is refused, not misread.
func (q *Query) sortHash() [4]byte {
	h := fnv.New32a()
	for _, f := range q.Sort {
		h.Write([]byte(f.Path.raw))
		if f.Desc {
			h.Write([]byte{1})
		}
		h.Write([]byte{0})
	}
	s := h.Sum32()
	return [4]byte{byte(s >> 24), byte(s >> 16), byte(s >> 8), byte(s)}
}

// BookmarkFor returns the bookmark that starts a page after the document
// whose sort key is key.
func (q *Query) BookmarkFor(key []byte) string {
	h := q.sortHash()
	b := make([]byte, 0, 5+len(key))
	b = append(b, bookmarkVersion)
	b = append(b, h[:]...)
	b = append(b, key...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// bookmarkKey returns the sort key q.Bookmark starts after.
func (q *Query) bookmarkKey() ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(q.Bookmark)
	h := q.sortHash()
	if err != nil || len(b) < 5 || b[0] != bookmarkVersion || string(b[1:5]) != string(h[:]) {
		return nil, badQuery("bookmark is not one of this query's: ask again without it")
	}
	return b[5:], nil
}

// After returns the sort key the page starts after: nil without a
// bookmark, ErrBadQuery for a bookmark of a query that orders otherwise.
func (q *Query) After() ([]byte, error) {
	if q.Bookmark == "" {
		return nil, nil
	}
	return q.bookmarkKey()
}

// Ordered returns q ordered by sortBy when q names no order of its own (a
// planner's choice: the order of the index it reads); q itself otherwise.
func (q *Query) Ordered(sortBy []SortField) *Query {
	if len(q.Sort) > 0 || len(sortBy) == 0 {
		return q
	}
	o := *q
	o.Sort = sortBy
	return &o
}

// Project returns doc cut down to q.Fields (doc itself when there are
// none): an object with the fields that exist, nested as in doc.
func (q *Query) Project(doc []byte) []byte {
	if len(q.Fields) == 0 {
		return doc
	}
	v := gjson.ParseBytes(doc)
	root := &projNode{}
	for _, f := range q.Fields {
		val := f.getIn(v)
		if !val.Exists() {
			continue
		}
		root.put(f.segs, val.Raw)
	}
	return root.appendJSON(make([]byte, 0, 64))
}

// projNode is one member of a projected document.
type projNode struct {
	name string
	raw  string // the value, for a leaf
	kids []*projNode
}

func (n *projNode) put(segs []string, raw string) {
	if n.raw != "" {
		return // a field named already holds this one
	}
	if len(segs) == 0 {
		n.raw, n.kids = raw, nil
		return
	}
	for _, k := range n.kids {
		if k.name == segs[0] {
			k.put(segs[1:], raw)
			return
		}
	}
	k := &projNode{name: segs[0]}
	n.kids = append(n.kids, k)
	k.put(segs[1:], raw)
}

func (n *projNode) appendJSON(b []byte) []byte {
	if n.raw != "" {
		return append(b, n.raw...)
	}
	b = append(b, '{')
	for i, k := range n.kids {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k.name)
		b = append(b, ':')
		b = k.appendJSON(b)
	}
	return append(b, '}')
}

func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// String returns the query's order as text, for explain.
func (q *Query) String() string {
	var b strings.Builder
	for i, f := range q.Sort {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.Path.raw)
		if f.Desc {
			b.WriteString(" desc")
		}
	}
	return b.String()
}
