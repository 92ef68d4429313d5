package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	"github.com/hilodb/hilodb/internal/jsontext"
	"github.com/tidwall/gjson"
)

// The push codec, written by hand on both ends: a push carries documents
// that are JSON already, so they are copied as bytes instead of decoded and
// encoded again. Push, PushItem, PushReply and PushResult describe the
// shapes; these functions are the fast path for them.

// AppendPush appends the push request with id and items to b.
func AppendPush(b []byte, id int64, items []PushItem) []byte {
	return AppendPushSince(b, id, -1, items)
}

// AppendPushSince appends the push request with id and items to b, telling
// the client's checkpoint since (none when it is negative).
func AppendPushSince(b []byte, id, since int64, items []PushItem) []byte {
	return appendPush(b, id, since, false, items)
}

// AppendPushBrief is AppendPushSince asking for a brief reply
// (BriefPushReply): only the items not accepted are answered one by one,
// and the accepted ones' sequences as their first alone when they follow
// one another (BriefPushReplyFrom).
func AppendPushBrief(b []byte, id, since int64, items []PushItem) []byte {
	return appendPush(b, id, since, true, items)
}

func appendPush(b []byte, id, since int64, brief bool, items []PushItem) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, id, 10)
	if since >= 0 {
		b = append(b, `,"since":`...)
		b = strconv.AppendInt(b, since, 10)
	}
	if brief {
		b = append(b, `,"brief":true,"seqsFrom":true`...)
	}
	b = append(b, `,"op":"`+OpPush+`","changes":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = jsontext.AppendString(b, it.ID)
		b = append(b, `,"baseRev":`...)
		b = jsontext.AppendString(b, it.BaseRev)
		b = append(b, `,"rev":`...)
		b = jsontext.AppendString(b, it.Rev)
		if it.Deleted {
			b = append(b, `,"deleted":true}`...)
			continue
		}
		b = append(b, `,"doc":`...)
		if len(it.Doc) == 0 {
			b = append(b, "null}"...)
			continue
		}
		b = append(b, it.Doc...)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// DecodePush reads the items of a push request, keeping each document as
// the bytes it came in. Fields of the wrong type are an error, as
// encoding/json would make them; data must be valid JSON. A member given
// twice counts as first given, as gjson's Get reads it.
//
// The items' documents, and their strings without escapes, are data's own
// bytes, not copies (a push is megabytes): data must not change while the
// items are in use.
func DecodePush(data []byte) ([]PushItem, error) {
	var changes gjson.Result
	ParseInPlace(data).ForEach(func(k, v gjson.Result) bool {
		if k.String() == "changes" {
			changes = v
			return false
		}
		return true
	})
	if changes.Exists() && !changes.IsArray() && changes.Type != gjson.Null {
		return nil, errors.New("changes must be an array")
	}
	// One walk over the array and one over each change: a Get per field
	// walked the change again each time, past its document for a field
	// after it or absent ("deleted").
	items := make([]PushItem, 0, min(len(changes.Raw)/64+1, 1<<14))
	var bad error
	changes.ForEach(func(_, v gjson.Result) bool {
		if !v.IsObject() {
			bad = errors.New("each change must be an object")
			return false
		}
		var id, baseRev, rev, deleted, doc gjson.Result
		v.ForEach(func(k, f gjson.Result) bool {
			switch k.String() {
			case "id":
				FirstOf(&id, f)
			case "baseRev":
				FirstOf(&baseRev, f)
			case "rev":
				FirstOf(&rev, f)
			case "deleted":
				FirstOf(&deleted, f)
			case "doc":
				FirstOf(&doc, f)
			}
			return true
		})
		var it PushItem
		for _, f := range []struct {
			name string
			v    gjson.Result
			dst  *string
		}{{"id", id, &it.ID}, {"baseRev", baseRev, &it.BaseRev}, {"rev", rev, &it.Rev}} {
			switch f.v.Type {
			case gjson.String:
				*f.dst = f.v.Str
			case gjson.Null:
			default:
				bad = fmt.Errorf("%s must be a string", f.name)
				return false
			}
		}
		switch deleted.Type {
		case gjson.True, gjson.False:
			it.Deleted = deleted.Bool()
		case gjson.Null:
		default:
			bad = errors.New("deleted must be true or false")
			return false
		}
		if doc.Exists() && doc.Type != gjson.Null {
			it.Doc = json.RawMessage(bytesOf(data, doc.Raw))
		}
		items = append(items, it)
		return true
	})
	if bad != nil {
		return nil, bad
	}
	return items, nil
}

// bytesOf returns s as bytes: the bytes of data it is (gjson's results over
// data's text are), or a copy of s when it is not within data.
func bytesOf(data []byte, s string) []byte {
	if len(s) == 0 || len(data) == 0 {
		return []byte(s)
	}
	off := uintptr(unsafe.Pointer(unsafe.StringData(s))) - uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	if off >= uintptr(len(data)) || uintptr(len(s)) > uintptr(len(data))-off {
		return []byte(s)
	}
	return data[off : off+uintptr(len(s)) : off+uintptr(len(s))]
}

// DecodePushReply reads a push reply (the full form, PushReply), keeping
// each "current" document as the bytes it came in.
func DecodePushReply(data []byte) (results []PushResult, prevSeq, last int64, err error) {
	return DecodePushReplyN(data, -1)
}

// DecodePushReplyN reads a push reply of n items in any form. A brief
// reply (BriefPushReply, BriefPushReplyFrom) is expanded to n results:
// those it lists where it puts them, the others accepted (OK, no ID) at
// the sequence it gives. n < 0 takes the full form only.
func DecodePushReplyN(data []byte, n int) (results []PushResult, prevSeq, last int64, err error) {
	// One walk over the reply and one over each result: gjson's Get per
	// field walked everything before the field again, and the client
	// decodes a result per document pushed.
	var res, failed, seqs, from, brief, prev, lst gjson.Result
	gjson.ParseBytes(data).ForEach(func(k, v gjson.Result) bool {
		switch k.String() {
		case "results":
			FirstOf(&res, v)
		case "failed":
			FirstOf(&failed, v)
		case "seqs":
			FirstOf(&seqs, v)
		case "seqsFrom":
			FirstOf(&from, v)
		case "brief":
			FirstOf(&brief, v)
		case "prevSeq":
			FirstOf(&prev, v)
		case "last":
			FirstOf(&lst, v)
		}
		return true
	})
	if brief.Bool() && n >= 0 {
		results = make([]PushResult, n)
		for i := range results {
			results[i].OK = true
		}
		if from.Exists() {
			if from.Type != gjson.Number || from.Int() < 0 || float64(from.Int()) != from.Num {
				return nil, 0, 0, fmt.Errorf("seqsFrom is not an integer >= 0 in %.200s", data)
			}
		} else if seqs.Exists() && seqs.Type != gjson.Null && !seqInts(seqs.Raw, results) {
			return nil, 0, 0, fmt.Errorf("seqs is not an array of %d integers in %.200s", n, data)
		}
		if failed.Exists() && !failed.IsArray() {
			return nil, 0, 0, fmt.Errorf("failed is not an array in %.200s", data)
		}
		var bad error
		failed.ForEach(func(_, v gjson.Result) bool {
			pr, idx := decodePushResult(v)
			if !idx.Exists() || idx.Type != gjson.Number || idx.Int() < 0 || idx.Int() >= int64(n) || float64(idx.Int()) != idx.Num {
				bad = fmt.Errorf("failed result without an index below %d: %.200s", n, v.Raw)
				return false
			}
			results[idx.Int()] = pr
			return true
		})
		if bad != nil {
			return nil, 0, 0, bad
		}
		if from.Exists() {
			// The accepted items, in order, at seqsFrom, seqsFrom+1, ….
			seq := from.Int()
			for i := range results {
				if results[i].OK {
					results[i].Seq = seq
					seq++
				}
			}
		}
		return results, prev.Int(), lst.Int(), nil
	}
	if !res.IsArray() {
		return nil, 0, 0, fmt.Errorf("no results in %.200s", data)
	}
	res.ForEach(func(_, v gjson.Result) bool {
		pr, _ := decodePushResult(v)
		results = append(results, pr)
		return true
	})
	return results, prev.Int(), lst.Int(), nil
}

// seqInts reads a brief reply's seqs, a JSON array of one integer per
// result, into the results' Seq: a loop over digits (a push of thousands
// has thousands), gjson for what it does not read.
func seqInts(raw string, results []PushResult) bool {
	i, k := 0, 0
	skip := func() {
		for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
			i++
		}
	}
	skip()
	if i == len(raw) || raw[i] != '[' {
		return false
	}
	i++
	skip()
	if i < len(raw) && raw[i] == ']' {
		return len(results) == 0
	}
	for k < len(results) {
		start := i
		for i < len(raw) && raw[i] >= '0' && raw[i] <= '9' {
			i++
		}
		n, err := strconv.ParseInt(raw[start:i], 10, 64)
		if err != nil || i-start > 1 && raw[start] == '0' {
			return seqIntsGJSON(raw, results)
		}
		results[k].Seq = n
		k++
		skip()
		if i == len(raw) {
			return false
		}
		switch raw[i] {
		case ',':
			i++
			skip()
		case ']':
			return k == len(results)
		default:
			return seqIntsGJSON(raw, results)
		}
	}
	return false // more numbers than results
}

// seqIntsGJSON is seqInts for any JSON array of numbers.
func seqIntsGJSON(raw string, results []PushResult) bool {
	arr := gjson.Parse(raw)
	if !arr.IsArray() {
		return false
	}
	k, ok := 0, true
	arr.ForEach(func(_, v gjson.Result) bool {
		if k == len(results) || v.Type != gjson.Number {
			ok = false
			return false
		}
		results[k].Seq = v.Int()
		k++
		return true
	})
	return ok && k == len(results)
}

// decodePushResult reads one result of a push reply, and its index "i"
// (a brief reply's).
func decodePushResult(v gjson.Result) (pr PushResult, idx gjson.Result) {
	var id, ok, seq, errv, cur, omitted gjson.Result
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.String() {
		case "id":
			FirstOf(&id, f)
		case "ok":
			FirstOf(&ok, f)
		case "seq":
			FirstOf(&seq, f)
		case "error":
			FirstOf(&errv, f)
		case "current":
			FirstOf(&cur, f)
		case "currentOmitted":
			FirstOf(&omitted, f)
		case "i":
			FirstOf(&idx, f)
		}
		return true
	})
	pr = PushResult{ID: id.String(), OK: ok.Bool(), Seq: seq.Int()}
	if errv.Exists() {
		pr.Error = &Error{Code: errv.Get("code").String(), Num: int(errv.Get("num").Int()), Message: errv.Get("message").String()}
	}
	if cur.Exists() {
		pr.Current = json.RawMessage(cur.Raw)
	}
	pr.CurrentOmitted = omitted.Bool()
	return pr, idx
}

// ParseInPlace is gjson.ParseBytes over b's own bytes instead of a copy of
// them (a push is megabytes): the results' texts are b's bytes, so b must
// not change while they are in use.
func ParseInPlace(b []byte) gjson.Result {
	return gjson.Parse(unsafe.String(unsafe.SliceData(b), len(b)))
}

// FirstOf keeps the first value of a member, as gjson's Get finds it: a
// one-walk decoder calls it for each member it reads.
func FirstOf(dst *gjson.Result, v gjson.Result) {
	if !dst.Exists() {
		*dst = v
	}
}
