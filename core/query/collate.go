package query

import (
	"bytes"
	"math"
	"strings"

	"github.com/tidwall/gjson"
)

// Type ranks in the collation; also the first byte of a value's key.
const (
	endTag     byte = 0x00 // ends an array or object in a key
	missingTag byte = 0x01
	nullTag    byte = 0x02
	falseTag   byte = 0x03
	trueTag    byte = 0x04
	numberTag  byte = 0x05
	stringTag  byte = 0x06
	arrayTag   byte = 0x07
	objectTag  byte = 0x08
	memberTag  byte = 0x01 // starts an object's member in a key
)

// tag returns v's type rank: missingTag for a value that does not exist.
func tag(v gjson.Result) byte {
	switch v.Type {
	case gjson.Null:
		if !v.Exists() {
			return missingTag
		}
		return nullTag
	case gjson.False:
		return falseTag
	case gjson.True:
		return trueTag
	case gjson.Number:
		return numberTag
	case gjson.String:
		return stringTag
	}
	if v.IsArray() {
		return arrayTag
	}
	return objectTag
}

// class is a value's kind for range operators: false and true are one
// kind (booleans), every other tag its own.
func class(t byte) byte {
	if t == trueTag {
		return falseTag
	}
	return t
}

// Compare orders two JSON values by the collation (see the package doc):
// negative when a sorts first, zero when they are equal, positive when b
// sorts first. A value that does not exist is missing.
func Compare(a, b gjson.Result) int {
	ta, tb := tag(a), tag(b)
	if ta != tb {
		return int(ta) - int(tb)
	}
	switch ta {
	case numberTag:
		switch {
		case a.Num < b.Num:
			return -1
		case a.Num > b.Num:
			return 1
		}
		return 0
	case stringTag:
		return strings.Compare(a.Str, b.Str)
	case arrayTag:
		ea, eb := a.Array(), b.Array()
		for i := 0; i < len(ea) && i < len(eb); i++ {
			if c := Compare(ea[i], eb[i]); c != 0 {
				return c
			}
		}
		return len(ea) - len(eb)
	case objectTag:
		ma, mb := members(a), members(b)
		for i := 0; i < len(ma) && i < len(mb); i++ {
			if c := strings.Compare(ma[i][0].Str, mb[i][0].Str); c != 0 {
				return c
			}
			if c := Compare(ma[i][1], mb[i][1]); c != 0 {
				return c
			}
		}
		return len(ma) - len(mb)
	}
	return 0
}

// members returns an object's key and value pairs in written order.
func members(v gjson.Result) [][2]gjson.Result {
	var out [][2]gjson.Result
	v.ForEach(func(k, val gjson.Result) bool {
		out = append(out, [2]gjson.Result{k, val})
		return true
	})
	return out
}

// AppendKey appends v's key to dst: bytes whose order (bytes.Compare) is
// the collation's order of the values, and which never is a prefix of
// another value's key, so keys of several values concatenated order as
// tuples.
func AppendKey(dst []byte, v gjson.Result) []byte {
	t := tag(v)
	dst = append(dst, t)
	switch t {
	case numberTag:
		f := v.Num
		if f == 0 {
			f = 0 // -0 and 0 are one number
		}
		bits := math.Float64bits(f)
		if bits&(1<<63) == 0 {
			bits |= 1 << 63
		} else {
			bits = ^bits
		}
		dst = append(dst, byte(bits>>56), byte(bits>>48), byte(bits>>40), byte(bits>>32),
			byte(bits>>24), byte(bits>>16), byte(bits>>8), byte(bits))
	case stringTag:
		dst = appendString(dst, v.Str)
	case arrayTag:
		v.ForEach(func(_, e gjson.Result) bool {
			dst = AppendKey(dst, e)
			return true
		})
		dst = append(dst, endTag)
	case objectTag:
		v.ForEach(func(k, e gjson.Result) bool {
			dst = append(dst, memberTag)
			dst = appendString(dst, k.Str)
			dst = AppendKey(dst, e)
			return true
		})
		dst = append(dst, endTag)
	}
	return dst
}

// appendString writes s with each zero byte escaped as 0x00 0xFF and ends
// it with 0x00 0x00: the order of strings, and no prefix of a longer one.
func appendString(dst []byte, s string) []byte {
	for {
		i := indexZero(s)
		if i < 0 {
			break
		}
		dst = append(dst, s[:i]...)
		dst = append(dst, 0x00, 0xFF)
		s = s[i+1:]
	}
	dst = append(dst, s...)
	return append(dst, 0x00, 0x00)
}

func indexZero(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return i
		}
	}
	return -1
}

// CompareKeys orders two keys AppendKey wrote: it is bytes.Compare.
func CompareKeys(a, b []byte) int { return bytes.Compare(a, b) }

// TypeKeyBounds returns the keys that bracket every value of v's kind (the
// range operators' type bracketing): lo is at or below the key of every
// such value, hi above all of them.
func TypeKeyBounds(v gjson.Result) (lo, hi []byte) {
	c := class(tag(v))
	next := c + 1
	if c == falseTag {
		next = trueTag + 1
	}
	return []byte{c}, []byte{next}
}
