package query

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"
	"strings"

	"github.com/tidwall/btree"
	"github.com/tidwall/gjson"
)

// Entry is one document in an Index: Key is the keys of its values at
// the index's fields (AppendKey) followed by its id, which ID is the tail
// of.
type Entry struct{ Key, ID string }

func entryLess(a, b Entry) bool { return a.Key < b.Key }

// Index lists documents in the order of their values at its fields, then
// their ids: a secondary index, kept in memory. It takes no locks: its
// owner changes it under a write lock and reads it under a read lock (a
// local store under buntdb's, the server per database).
type Index struct {
	fields []Path
	tree   *btree.BTreeG[Entry]
}

// NewIndex returns an empty index of fields.
func NewIndex(fields []Path) *Index {
	return &Index{fields: fields, tree: btree.NewBTreeGOptions(entryLess, btree.Options{NoLocks: true})}
}

// Fields returns the index's fields.
func (ix *Index) Fields() []Path { return ix.fields }

// Len returns how many entries the index holds.
func (ix *Index) Len() int { return ix.tree.Len() }

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
func (ix *Index) Set(e Entry) (prev Entry, replaced bool) { return ix.tree.Set(e) }

// Delete takes the entry of key out of the index.
func (ix *Index) Delete(key string) (Entry, bool) { return ix.tree.Delete(Entry{Key: key}) }

// Put indexes the document doc of id, and returns its entry.
func (ix *Index) Put(doc, id string) Entry {
	k := string(ix.AppendKey(make([]byte, 0, 32+len(id)), doc, id))
	e := Entry{Key: k, ID: k[len(k)-len(id):]}
	ix.tree.Set(e)
	return e
}

// Remove takes the document doc of id out of the index.
func (ix *Index) Remove(doc, id string) {
	ix.tree.Delete(Entry{Key: string(ix.AppendKey(nil, doc, id))})
}

// Scan calls fn with the entries whose keys are in [lo, hi), backwards
// with desc, until it returns false.
func (ix *Index) Scan(lo, hi string, desc bool, fn func(Entry) bool) {
	if desc {
		ix.tree.Descend(Entry{Key: hi}, func(e Entry) bool {
			if e.Key < lo {
				return false
			}
			if e.Key >= hi {
				return true
			}
			return fn(e)
		})
		return
	}
	ix.tree.Ascend(Entry{Key: lo}, func(e Entry) bool {
		if e.Key >= hi {
			return false
		}
		return fn(e)
	})
}

// IndexBuilder fills an empty index from many documents at once: their
// keys are made in one arena (one allocation for all), sorted, and loaded
// in order, which fills the tree's nodes without a search.
type IndexBuilder struct {
	ix    *Index
	arena []byte
	spans []span
}

// span is one key in the arena, with its first 16 bytes as two numbers
// (zero-padded, big-endian), which order as the bytes do: the sort
// compares them first, and the bytes only on a tie.
type span struct {
	p0, p1          uint64
	off, end, idLen uint32
}

// Builder returns a builder of ix, which must be empty.
func (ix *Index) Builder() *IndexBuilder { return &IndexBuilder{ix: ix} }

// Add adds the document doc of id.
func (b *IndexBuilder) Add(doc, id string) {
	off := len(b.arena)
	b.arena = b.ix.AppendKey(b.arena, doc, id)
	k := b.arena[off:]
	b.spans = append(b.spans, span{p0: prefix8(k), p1: prefix8(k[min(8, len(k)):]), off: uint32(off), end: uint32(len(b.arena)), idLen: uint32(len(id))})
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
	for _, sp := range b.spans {
		b.ix.tree.Load(Entry{Key: all[sp.off:sp.end], ID: all[sp.end-sp.idLen : sp.end]})
	}
	b.spans = nil
}

// KeyFormat numbers the encoding AppendKey gives index keys. Entries saved
// under another number are not used: the index is built again instead.
const KeyFormat = 1

// Each calls fn with every entry in key order until it returns false.
func (ix *Index) Each(fn func(Entry) bool) { ix.tree.Scan(fn) }

// Restore fills an empty index with saved entries, each of n a key made as
// AppendKey makes them and the length of the id it ends with, handed in
// key order by each. It reports false, leaving the index empty, when an
// entry is out of order, repeats its predecessor's key, or has an id
// longer than its key.
func (ix *Index) Restore(n int, each func(add func(key string, idLen int) bool) bool) bool {
	prev, first := "", true
	count := 0
	ok := each(func(key string, idLen int) bool {
		if idLen <= 0 || idLen > len(key) || (!first && key <= prev) {
			return false
		}
		ix.tree.Load(Entry{Key: key, ID: key[len(key)-idLen:]})
		prev, first = key, false
		count++
		return true
	})
	if !ok || count != n {
		ix.tree = btree.NewBTreeGOptions(entryLess, btree.Options{NoLocks: true})
		return false
	}
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
