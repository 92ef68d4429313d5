package query

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"
	"sort"
	"strings"

	"github.com/tidwall/btree"
	"github.com/tidwall/gjson"
)

// Entry is one document in an Index: Key is the keys of its values at
// the index's fields (AppendKey) followed by its id, which ID is the tail
// of. Doc is the document itself in an index that keeps documents
// (NewDocIndex), where known; "" otherwise.
type Entry struct{ Key, ID, Doc string }

func entryLess(a, b Entry) bool { return a.Key < b.Key }

// Index lists documents in the order of their values at its fields, then
// their ids: a secondary index, kept in memory. It takes no locks: its
// owner changes it under a write lock and reads it under a read lock (a
// local store under buntdb's, the server per database).
//
// The entries an index is filled with at once (Builder, RestoreSpans) are
// kept as one sorted slice, the base, read in place: each a Span of one
// string holding every key, and of a list of documents. The base holds no
// pointers, so the collector neither scans it nor makes its fill pay for
// a write barrier per entry. The entries written after go into a B-tree,
// and a base entry that is deleted or replaced is marked gone. A key is
// live in one place at most, and a read merges the two.
type Index struct {
	fields   []Path
	docs     bool                 // entries keep their documents
	keys     string               // the base's keys, where its spans say
	base     []Span               // sorted by key
	baseDocs []string             // built: the base's documents, by Span.Doc
	restored Docs                 // restored: the base's documents, by Span.Doc
	docPfx   string               // restored: what a document's key holds before its id
	gone     []uint64             // bit i: base[i] is deleted or replaced
	live     int                  // the base entries not gone
	tree     *btree.BTreeG[Entry] // the entries written since
}

// Span is one entry of an index's base: its key is keys[Off:End] of the
// string it is read with, its id the last IDLen bytes of the key, and its
// document docs[Doc] of the list it is read with (-1: not known).
type Span struct {
	Off, End, IDLen uint32
	Doc             int32
}

// NewIndex returns an empty index of fields.
func NewIndex(fields []Path) *Index {
	return &Index{fields: fields, tree: newTree()}
}

func newTree() *btree.BTreeG[Entry] {
	return btree.NewBTreeGOptions(entryLess, btree.Options{NoLocks: true})
}

// NewDocIndex returns an empty index of fields whose entries keep their
// documents (Entry.Doc), so that a read through it needs no look-up of
// each document: for a store whose documents are in memory anyway (the
// entries share their text).
func NewDocIndex(fields []Path) *Index {
	ix := NewIndex(fields)
	ix.docs = true
	return ix
}

// Fields returns the index's fields.
func (ix *Index) Fields() []Path { return ix.fields }

// Len returns how many entries the index holds.
func (ix *Index) Len() int { return ix.live + ix.tree.Len() }

// keyAt is base[i]'s key.
func (ix *Index) keyAt(i int) string { return ix.keys[ix.base[i].Off:ix.base[i].End] }

// at is base[i] as an Entry.
func (ix *Index) at(i int) Entry {
	sp := ix.base[i]
	k := ix.keys[sp.Off:sp.End]
	e := Entry{Key: k, ID: k[len(k)-int(sp.IDLen):]}
	switch {
	case !ix.docs || sp.Doc < 0:
	case ix.restored == nil:
		e.Doc = ix.baseDocs[sp.Doc]
	case ix.isDocOf(sp.Doc, e.ID):
		e.Doc = ix.restored.Doc(int(sp.Doc))
	}
	return e
}

// isDocOf reports whether restored document d is the one of id: whether
// it is stored under id's key. A saved entry names its document by number;
// the number is trusted only so far.
func (ix *Index) isDocOf(d int32, id string) bool {
	k := ix.restored.Key(int(d))
	return len(k) == len(ix.docPfx)+len(id) && k[:len(ix.docPfx)] == ix.docPfx && k[len(ix.docPfx):] == id
}

// baseFrom returns where the base's keys at or after key start.
func (ix *Index) baseFrom(key string) int {
	return sort.Search(len(ix.base), func(i int) bool { return ix.keyAt(i) >= key })
}

// inBase returns where the live base entry of key is, if there is one.
func (ix *Index) inBase(key string) (int, bool) {
	i := ix.baseFrom(key)
	if i == len(ix.base) || ix.keyAt(i) != key || ix.isGone(i) {
		return 0, false
	}
	return i, true
}

// drop marks base[i] gone and returns it.
func (ix *Index) drop(i int) Entry {
	e := ix.at(i)
	ix.gone[i>>6] |= 1 << (i & 63)
	ix.live--
	return e
}

// isGone reports whether base[i] is gone.
func (ix *Index) isGone(i int) bool { return ix.gone[i>>6]&(1<<(i&63)) != 0 }

// setBase makes spans, sorted by key, of keys and docs the whole index.
func (ix *Index) setBase(keys string, spans []Span, docs []string) {
	ix.keys, ix.base, ix.baseDocs, ix.restored, ix.docPfx = keys, spans, docs, nil, ""
	ix.gone, ix.live, ix.tree = make([]uint64, (len(spans)+63)/64), len(spans), newTree()
}

// AppendKey appends the key of the document doc, whose id is id, to buf.
func (ix *Index) AppendKey(buf []byte, doc, id string) []byte {
	var small [8]gjson.Result
	vals := small[:0]
	if len(ix.fields) > len(small) {
		vals = make([]gjson.Result, len(ix.fields))
	}
	vals = vals[:len(ix.fields)]
	GetFields(doc, ix.fields, vals)
	for _, v := range vals {
		buf = AppendKey(buf, v)
	}
	return append(buf, id...)
}

// Set puts e in the index, returning the entry of the same key it
// replaced, if any.
func (ix *Index) Set(e Entry) (prev Entry, replaced bool) {
	if i, ok := ix.inBase(e.Key); ok {
		prev = ix.drop(i)
		ix.tree.Set(e)
		return prev, true
	}
	return ix.tree.Set(e)
}

// Delete takes the entry of key out of the index.
func (ix *Index) Delete(key string) (Entry, bool) {
	if e, ok := ix.tree.Delete(Entry{Key: key}); ok {
		return e, true
	}
	if i, ok := ix.inBase(key); ok {
		return ix.drop(i), true
	}
	return Entry{}, false
}

// Put indexes the document doc of id, and returns its entry.
func (ix *Index) Put(doc, id string) Entry {
	k := string(ix.AppendKey(make([]byte, 0, 32+len(id)), doc, id))
	e := Entry{Key: k, ID: k[len(k)-len(id):]}
	if ix.docs {
		e.Doc = doc
	}
	ix.Set(e)
	return e
}

// Remove takes the document doc of id out of the index.
func (ix *Index) Remove(doc, id string) {
	ix.Delete(string(ix.AppendKey(nil, doc, id)))
}

// Scan calls fn with the entries whose keys are in [lo, hi), backwards
// with desc, until it returns false.
func (ix *Index) Scan(lo, hi string, desc bool, fn func(Entry) bool) {
	ix.scan(lo, hi, true, desc, fn)
}

// scan is Scan; without bounded, hi bounds nothing.
func (ix *Index) scan(lo, hi string, bounded, desc bool, fn func(Entry) bool) {
	below := func(k string) bool { return !bounded || k < hi }
	stopped := false
	if desc {
		// The base's entries from the last below hi down, each emitted
		// before the tree's entries under it.
		j := len(ix.base) - 1
		if bounded {
			j = ix.baseFrom(hi) - 1
		}
		base := func(above string, limited bool) bool {
			for ; j >= 0 && ix.keyAt(j) >= lo && (!limited || ix.keyAt(j) > above); j-- {
				if !ix.isGone(j) && !fn(ix.at(j)) {
					return false
				}
			}
			return true
		}
		visit := func(e Entry) bool {
			if e.Key < lo {
				return false
			}
			if !below(e.Key) {
				return true
			}
			if !base(e.Key, true) || !fn(e) {
				stopped = true
				return false
			}
			return true
		}
		if bounded {
			ix.tree.Descend(Entry{Key: hi}, visit)
		} else {
			ix.tree.Reverse(visit)
		}
		if !stopped {
			base("", false)
		}
		return
	}
	i := ix.baseFrom(lo)
	base := func(under string, limited bool) bool {
		for ; i < len(ix.base) && below(ix.keyAt(i)) && (!limited || ix.keyAt(i) < under); i++ {
			if !ix.isGone(i) && !fn(ix.at(i)) {
				return false
			}
		}
		return true
	}
	ix.tree.Ascend(Entry{Key: lo}, func(e Entry) bool {
		if !below(e.Key) {
			return false
		}
		if !base(e.Key, true) || !fn(e) {
			stopped = true
			return false
		}
		return true
	})
	if !stopped {
		base("", false)
	}
}

// IndexBuilder fills an empty index from many documents at once: their
// keys are made in one arena (one allocation for all), sorted, and loaded
// in order, which fills the tree's nodes without a search.
type IndexBuilder struct {
	ix    *Index
	arena []byte
	spans []span
	docs  []string // the documents added, for an index that keeps them
}

// span is one key in the arena, with its first 16 bytes as two numbers
// (zero-padded, big-endian), which order as the bytes do: the sort
// compares them first, and the bytes only on a tie.
type span struct {
	p0, p1               uint64
	off, end, idLen, doc uint32
}

// Builder returns a builder of ix, which must be empty.
func (ix *Index) Builder() *IndexBuilder { return &IndexBuilder{ix: ix} }

// Add adds the document doc of id.
func (b *IndexBuilder) Add(doc, id string) {
	off := len(b.arena)
	b.arena = b.ix.AppendKey(b.arena, doc, id)
	k := b.arena[off:]
	sp := span{p0: prefix8(k), p1: prefix8(k[min(8, len(k)):]), off: uint32(off), end: uint32(len(b.arena)), idLen: uint32(len(id))}
	if b.ix.docs {
		sp.doc = uint32(len(b.docs))
		b.docs = append(b.docs, doc)
	}
	b.spans = append(b.spans, sp)
}

// prefix8 is the first 8 bytes of k, big-endian, zero-padded.
func prefix8(k []byte) uint64 {
	if len(k) >= 8 {
		return binary.BigEndian.Uint64(k)
	}
	var v uint64
	for i, c := range k {
		v |= uint64(c) << (56 - 8*i)
	}
	return v
}

// Finish loads what was added into the index.
func (b *IndexBuilder) Finish() {
	all := string(b.arena)
	b.arena = nil
	slices.SortFunc(b.spans, func(x, y span) int {
		switch {
		case x.p0 != y.p0:
			return cmp.Compare(x.p0, y.p0)
		case x.p1 != y.p1:
			return cmp.Compare(x.p1, y.p1)
		}
		return strings.Compare(all[x.off:x.end], all[y.off:y.end])
	})
	spans := make([]Span, len(b.spans))
	for i, sp := range b.spans {
		spans[i] = Span{Off: sp.off, End: sp.end, IDLen: sp.idLen, Doc: -1}
		if b.ix.docs {
			spans[i].Doc = int32(sp.doc)
		}
	}
	b.ix.setBase(all, spans, b.docs)
	b.spans, b.docs = nil, nil
}

// KeyFormat numbers the encoding AppendKey gives index keys. Entries saved
// under another number are not used: the index is built again instead.
const KeyFormat = 1

// Each calls fn with every entry in key order until it returns false.
func (ix *Index) Each(fn func(Entry) bool) { ix.scan("", "", false, false, fn) }

// Docs is the list of documents a restored index's spans name by number
// (Span.Doc): each one's text and the key it is stored under. It must not
// change for as long as the index holds it.
type Docs interface {
	Len() int
	Doc(i int) string
	Key(i int) string
}

// RestoreSpans fills an empty index with saved entries, in key order: each
// span's key a slice of keys (made as AppendKey makes them), its document
// docs.Doc(Doc) (-1: not known; kept only by an index that keeps
// documents). A span's document is taken as its entry's only where
// docs.Key(Doc), the key it is stored under, is docPrefix followed by the
// entry's id; this is checked when the entry is read, so that a restore
// need not touch every document. The spans must be in ascending key
// order, which the caller vouches for (a snapshot's checksum): checking
// it cost a restore a string comparison per entry. The index keeps keys,
// spans and docs as they are: none may change after. It reports false,
// leaving the index empty, when a span is out of keys' bounds or of
// docs', or has an id that is empty or longer than its key.
func (ix *Index) RestoreSpans(keys string, spans []Span, docs Docs, docPrefix string) bool {
	n := docs.Len()
	for _, sp := range spans {
		if sp.Off > sp.End || int(sp.End) > len(keys) || sp.IDLen == 0 || sp.IDLen > sp.End-sp.Off ||
			sp.Doc < -1 || int(sp.Doc) >= n {
			return false
		}
	}
	ix.setBase(keys, spans, nil)
	ix.restored, ix.docPfx = docs, docPrefix
	return true
}

// IndexPlan is how an index serves a query: the keys to read, [Lo, Hi),
// and what the read does for the query.
type IndexPlan struct {
	// Equality counts the leading fields the selector fixes by equality.
	Equality int
	// Range: a range of the next field narrowed the keys.
	Range bool
	// Sorted: the index gives the documents in the query's order but for
	// ties; Whole: the sort covers every field the equality leaves, so
	// two documents tie exactly when their keys but for the ids are equal;
	// Exact: ties by _id too (Whole, read forwards).
	Sorted, Whole, Exact bool
	// Descending: read backwards.
	Descending bool
	Lo, Hi     string
}

// Score ranks plans: equality first, then a range, then the sort.
func (p IndexPlan) Score(sorts bool) int {
	s := p.Equality * 4
	if p.Range {
		s += 2
	}
	if p.Sorted && sorts {
		s++
	}
	return s
}

// CondsByPath groups the selector's conditions (Selector.Conds) by path.
func CondsByPath(sel *Selector) map[string][]Cond {
	out := map[string][]Cond{}
	for _, c := range sel.Conds() {
		out[c.Path.raw] = append(out[c.Path.raw], c)
	}
	return out
}

// PlanIndex works out how an index of fields serves a query with conds
// (CondsByPath) and sortBy.
func PlanIndex(fields []Path, conds map[string][]Cond, sortBy []SortField) IndexPlan {
	var pl IndexPlan
	var prefix []byte
	eqFields := map[string]bool{}
	for _, f := range fields {
		v, ok := equalityOf(conds[f.raw])
		if !ok {
			break
		}
		prefix = AppendKey(prefix, v)
		eqFields[f.raw] = true
		pl.Equality++
	}
	lo := append([]byte(nil), prefix...)
	hi := append(append([]byte(nil), prefix...), 0xFF)
	if pl.Equality < len(fields) {
		if l, h, ok := rangeOf(conds[fields[pl.Equality].raw]); ok {
			lo = append(append([]byte(nil), prefix...), l...)
			hi = append(append([]byte(nil), prefix...), h...)
			pl.Range = true
		}
	}
	// The sort, but for the fields equality fixes, must follow the index's
	// next fields, all one way.
	var rest []SortField
	for _, f := range sortBy {
		if !eqFields[f.Path.raw] {
			rest = append(rest, f)
		}
	}
	switch {
	case len(rest) == 0:
		pl.Sorted = true
	case len(rest) <= len(fields)-pl.Equality:
		ok := true
		for i, f := range rest {
			if f.Path.raw != fields[pl.Equality+i].raw || f.Desc != rest[0].Desc {
				ok = false
				break
			}
		}
		if ok {
			pl.Sorted, pl.Descending = true, rest[0].Desc
		}
	}
	pl.Whole = pl.Sorted && len(rest) == len(fields)-pl.Equality
	pl.Exact = pl.Whole && !pl.Descending
	pl.Lo, pl.Hi = string(lo), string(hi)
	return pl
}

// equalityOf returns the one value conds fix their field to, if they do.
func equalityOf(conds []Cond) (v gjson.Result, ok bool) {
	for _, c := range conds {
		switch {
		case c.Op == OpEq:
			return c.Value, true
		case c.Op == OpIn && len(c.Values) == 1:
			return c.Values[0], true
		}
	}
	return v, false
}

// rangeOf returns the key range every value meeting conds lies in (the
// intersection of what each allows), if any condition bounds it.
func rangeOf(conds []Cond) (lo, hi []byte, ok bool) {
	for _, c := range conds {
		var l, h []byte
		switch c.Op {
		case OpGt, OpGte, OpLt, OpLte:
			l, h = TypeKeyBounds(c.Value)
			k := AppendKey(nil, c.Value)
			switch c.Op {
			case OpGt:
				l = append(k, 0xFF)
			case OpGte:
				l = k
			case OpLt:
				h = k
			case OpLte:
				h = append(k, 0xFF)
			}
		case OpIn:
			if len(c.Values) == 0 {
				continue
			}
			for i, v := range c.Values {
				k := AppendKey(nil, v)
				if i == 0 || bytes.Compare(k, l) < 0 {
					l = k
				}
				if e := append(k, 0xFF); i == 0 || bytes.Compare(e, h) > 0 {
					h = e
				}
			}
		default:
			continue
		}
		if !ok || bytes.Compare(l, lo) > 0 {
			lo = l
		}
		if !ok || bytes.Compare(h, hi) < 0 {
			hi = h
		}
		ok = true
	}
	if ok && bytes.Compare(lo, hi) > 0 {
		hi = lo // nothing can match: an empty range
	}
	return lo, hi, ok
}

// IndexOrder is the order a query comes in from an index of fields when
// it names none of its own: the fields, ascending, then _id.
func IndexOrder(fields []Path) []SortField {
	out := make([]SortField, len(fields))
	for i, f := range fields {
		out[i] = SortField{Path: f}
	}
	return out
}
