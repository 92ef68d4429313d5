package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/hilodb/hilodb/internal/wire"
	"github.com/tidwall/gjson"
)

func TestPushRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		items []wire.PushItem
	}{
		{"none", nil},
		{"one document", []wire.PushItem{{ID: "orders/1-A", BaseRev: "", Rev: "r1", Doc: json.RawMessage(`{"a":1,"s":"x\"y"}`)}}},
		{"a delete", []wire.PushItem{{ID: "orders/1-A", BaseRev: "r1", Rev: "r2", Deleted: true}}},
		{"ids that need escaping", []wire.PushItem{{ID: "q\"uote\\s/ü\u2028", Rev: "r", Doc: json.RawMessage(`{}`)}, {ID: "b", Rev: "r", Deleted: true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			frame := wire.AppendPush(nil, 7, tc.items)
			var generic wire.Push
			if err := json.Unmarshal(frame, &generic); err != nil || generic.ID != 7 || generic.Op != wire.OpPush {
				t.Fatalf("frame %s: %+v, %v", frame, generic, err)
			}
			got, err := wire.DecodePush(frame)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.items
			if want == nil {
				want = []wire.PushItem{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("DecodePush(AppendPush(x)) = %+v, want %+v", got, want)
			}
		})
	}
}

func TestDecodePushRefusesWrongTypes(t *testing.T) {
	for _, frame := range []string{
		`{"changes":{}}`,
		`{"changes":[1]}`,
		`{"changes":[{"id":1}]}`,
		`{"changes":[{"id":"a","rev":true}]}`,
		`{"changes":[{"id":"a","deleted":"yes"}]}`,
	} {
		if _, err := wire.DecodePush([]byte(frame)); err == nil {
			t.Errorf("DecodePush(%s) took it", frame)
		}
	}
}

func TestDecodePushReply(t *testing.T) {
	res, prev, last, err := wire.DecodePushReply([]byte(`{"id":3,"ok":true,"prevSeq":4,"last":6,"results":[
		{"id":"a","ok":true,"seq":5},
		{"id":"b","ok":false,"error":{"code":"conflict","num":1200,"message":"m"},"current":{"_id":"b","x":[1,2]}},
		{"id":"c","ok":false,"error":{"code":"conflict","num":1200,"message":"m"},"currentOmitted":true}]}`))
	if err != nil || prev != 4 || last != 6 || len(res) != 3 {
		t.Fatalf("DecodePushReply = %+v, %d, %d, %v", res, prev, last, err)
	}
	if !res[0].OK || res[0].Seq != 5 || res[1].Error.Num != 1200 || string(res[1].Current) != `{"_id":"b","x":[1,2]}` || !res[2].CurrentOmitted {
		t.Errorf("results %+v", res)
	}
	if _, _, _, err := wire.DecodePushReply([]byte(`{"id":3,"ok":true}`)); err == nil {
		t.Error("a reply without results was taken")
	}
}

func TestDecodeBriefPushReply(t *testing.T) {
	reply := []byte(`{"id":3,"ok":true,"brief":true,"failed":[
		{"i":2,"id":"c","ok":false,"seq":3,"error":{"code":"conflict","num":1200,"message":"m"},"current":{"_id":"c"}}],"seqs":[5,6,0,7],"prevSeq":4,"last":7}`)
	res, prev, last, err := wire.DecodePushReplyN(reply, 4)
	if err != nil || prev != 4 || last != 7 || len(res) != 4 {
		t.Fatalf("DecodePushReplyN = %+v, %d, %d, %v", res, prev, last, err)
	}
	for i, r := range res {
		if want := i != 2; r.OK != want {
			t.Errorf("result %d: OK %v, want %v", i, r.OK, want)
		}
		if want := []int64{5, 6, 3, 7}[i]; r.Seq != want {
			t.Errorf("result %d: seq %d, want %d", i, r.Seq, want)
		}
	}
	if res[2].ID != "c" || res[2].Error.Code != "conflict" || string(res[2].Current) != `{"_id":"c"}` {
		t.Errorf("failed result %+v", res[2])
	}
	// What the server's encoder writes decodes to the same.
	enc, err := json.Marshal(wire.BriefPushReply{ID: 3, OK: true, Brief: true, PrevSeq: 4, Last: 7, Seqs: []int64{5, 6, 0, 7},
		Failed: []wire.FailedPush{{I: 2, PushResult: wire.PushResult{ID: "c", Seq: 3, Error: &wire.Error{Code: "conflict", Num: 1200, Message: "m"}, Current: json.RawMessage(`{"_id":"c"}`)}}}})
	if err != nil {
		t.Fatal(err)
	}
	again, _, _, err := wire.DecodePushReplyN(enc, 4)
	if err != nil || !reflect.DeepEqual(again, res) {
		t.Errorf("encoded %s decodes to %+v, %v; want %+v", enc, again, err, res)
	}
	for _, bad := range []string{
		`{"brief":true,"failed":[{"i":4,"ok":false}]}`,
		`{"brief":true,"failed":[{"i":-1,"ok":false}]}`,
		`{"brief":true,"failed":[{"i":1.5,"ok":false}]}`,
		`{"brief":true,"failed":[{"ok":false}]}`,
		`{"brief":true,"failed":{}}`,
		`{"brief":true,"failed":[],"seqs":[1,2,3]}`,
		`{"brief":true,"failed":[],"seqs":[1,2,3,4,5]}`,
		`{"brief":true,"failed":[],"seqs":[1,2,"3",4]}`,
		`{"brief":true,"failed":[],"seqs":{}}`,
	} {
		if _, _, _, err := wire.DecodePushReplyN([]byte(bad), 4); err == nil {
			t.Errorf("%s was taken", bad)
		}
	}
	if _, _, _, err := wire.DecodePushReply(reply); err == nil {
		t.Error("DecodePushReply took a brief reply without knowing its items")
	}
	// The numbers as any JSON writer may space and spell them.
	for _, seqs := range []string{`[1,2,3,4]`, ` [ 1 , 2,3 ,4 ] `, `[1.0,2,3e0,4]`, `[1,2,3,4.0]`} {
		res, _, _, err := wire.DecodePushReplyN([]byte(`{"brief":true,"failed":[],"seqs":`+seqs+`}`), 4)
		if err != nil || res[0].Seq != 1 || res[3].Seq != 4 {
			t.Errorf("seqs %s: %+v, %v", seqs, res, err)
		}
	}
	// The accepted items' sequences as the first alone: the others follow
	// it, in order, past the failed ones.
	fromReply := []byte(`{"id":3,"ok":true,"brief":true,"failed":[
		{"i":2,"id":"c","ok":false,"seq":3,"error":{"code":"conflict","num":1200,"message":"m"},"current":{"_id":"c"}}],"seqsFrom":5,"prevSeq":4,"last":7}`)
	if got, prev, last, err := wire.DecodePushReplyN(fromReply, 4); err != nil || prev != 4 || last != 7 || !reflect.DeepEqual(got, res) {
		t.Errorf("seqsFrom reply: %+v, %d, %d, %v; want %+v", got, prev, last, err, res)
	}
	enc, err = json.Marshal(wire.BriefPushReplyFrom{ID: 3, OK: true, Brief: true, PrevSeq: 4, Last: 7, SeqsFrom: 5,
		Failed: []wire.FailedPush{{I: 2, PushResult: wire.PushResult{ID: "c", Seq: 3, Error: &wire.Error{Code: "conflict", Num: 1200, Message: "m"}, Current: json.RawMessage(`{"_id":"c"}`)}}}})
	if err != nil {
		t.Fatal(err)
	}
	if again, _, _, err := wire.DecodePushReplyN(enc, 4); err != nil || !reflect.DeepEqual(again, res) {
		t.Errorf("encoded %s decodes to %+v, %v; want %+v", enc, again, err, res)
	}
	for _, bad := range []string{`"5"`, `-1`, `1.5`, `null`, `[5]`} {
		if _, _, _, err := wire.DecodePushReplyN([]byte(`{"brief":true,"failed":[],"seqsFrom":`+bad+`}`), 4); err == nil {
			t.Errorf("seqsFrom %s was taken", bad)
		}
	}
	// A full reply (from a server that does not know brief replies) still
	// decodes when a brief one was asked for.
	full := []byte(`{"id":3,"ok":true,"prevSeq":4,"last":6,"results":[{"id":"a","ok":true,"seq":5}]}`)
	if res, _, _, err := wire.DecodePushReplyN(full, 1); err != nil || len(res) != 1 || res[0].ID != "a" {
		t.Errorf("full reply: %+v, %v", res, err)
	}
}

// refDecodePush is DecodePush as first written, with a gjson Get per
// field: the one-walk decoder must agree with it on any valid JSON.
func refDecodePush(data []byte) ([]wire.PushItem, error) {
	changes := gjson.GetBytes(data, "changes")
	if changes.Exists() && !changes.IsArray() && changes.Type != gjson.Null {
		return nil, errors.New("changes must be an array")
	}
	items := make([]wire.PushItem, 0, int(changes.Get("#").Int()))
	var bad error
	changes.ForEach(func(_, v gjson.Result) bool {
		if !v.IsObject() {
			bad = errors.New("each change must be an object")
			return false
		}
		var it wire.PushItem
		for _, f := range []struct {
			name string
			dst  *string
		}{{"id", &it.ID}, {"baseRev", &it.BaseRev}, {"rev", &it.Rev}} {
			switch x := v.Get(f.name); x.Type {
			case gjson.String:
				*f.dst = x.Str
			case gjson.Null:
			default:
				bad = fmt.Errorf("%s must be a string", f.name)
				return false
			}
		}
		switch x := v.Get("deleted"); x.Type {
		case gjson.True, gjson.False:
			it.Deleted = x.Bool()
		case gjson.Null:
		default:
			bad = errors.New("deleted must be true or false")
			return false
		}
		if d := v.Get("doc"); d.Exists() && d.Type != gjson.Null {
			it.Doc = json.RawMessage(d.Raw)
		}
		items = append(items, it)
		return true
	})
	if bad != nil {
		return nil, bad
	}
	return items, nil
}

func FuzzDecodePush(f *testing.F) {
	f.Add([]byte(`{"id":1,"op":"push","changes":[{"id":"a","baseRev":"","rev":"r","doc":{"x":1}}]}`))
	f.Add([]byte(`{"changes":[{"id":"a","deleted":true}]}`))
	f.Add([]byte(`{"changes":[{"id":"a","id":"b","deleted":false,"deleted":1,"doc":null,"doc":{}},{"rev":7}]}`))
	f.Add([]byte(`{"changes":{},"changes":[]}`))
	f.Add([]byte(" \n {\"changes\": [ {\"doc\" : {\"a\":\"\\u00e9\"} , \"id\":\"\\\"q\"} ] } "))
	f.Fuzz(func(t *testing.T, data []byte) {
		kept := append([]byte(nil), data...)
		items, err := wire.DecodePush(data)
		// The documents are data's bytes: appending to one must not
		// write into data.
		for i := range items {
			if d := items[i].Doc; d != nil {
				_ = append(d, '!')
			}
		}
		if !bytes.Equal(data, kept) {
			t.Fatalf("decoding changed data: %q became %q", kept, data)
		}
		if gjson.ValidBytes(data) {
			want, werr := refDecodePush(data)
			if (err == nil) != (werr == nil) || err == nil && !reflect.DeepEqual(items, want) && len(items)+len(want) > 0 {
				t.Fatalf("DecodePush(%q) = %+v, %v; want %+v, %v", data, items, err, want, werr)
			}
		}
		// The server refuses a frame that is not UTF-8 before it decodes
		// it (conn.handle); an id of invalid bytes would come back from
		// AppendPush as U+FFFD.
		if err != nil || !json.Valid(data) || !utf8.Valid(data) {
			return
		}
		// What decodes encodes again and decodes to the same items.
		again, err := wire.DecodePush(wire.AppendPush(nil, 1, items))
		if err != nil {
			t.Fatalf("re-encoded push does not decode: %v", err)
		}
		for i := range items {
			if items[i].ID != again[i].ID || items[i].Rev != again[i].Rev || items[i].Deleted != again[i].Deleted {
				t.Fatalf("item %d: %+v became %+v", i, items[i], again[i])
			}
		}
	})
}

// refDecodePushReply is DecodePushReply as first written, with a gjson Get
// per field: the one-walk decoder must agree with it on any valid JSON.
func refDecodePushReply(data []byte) (results []wire.PushResult, prevSeq, last int64, err error) {
	msg := gjson.ParseBytes(data)
	res := msg.Get("results")
	if !res.IsArray() {
		return nil, 0, 0, fmt.Errorf("no results")
	}
	res.ForEach(func(_, v gjson.Result) bool {
		pr := wire.PushResult{ID: v.Get("id").String(), OK: v.Get("ok").Bool(), Seq: v.Get("seq").Int()}
		if e := v.Get("error"); e.Exists() {
			pr.Error = &wire.Error{Code: e.Get("code").String(), Num: int(e.Get("num").Int()), Message: e.Get("message").String()}
		}
		if cur := v.Get("current"); cur.Exists() {
			pr.Current = json.RawMessage(cur.Raw)
		}
		pr.CurrentOmitted = v.Get("currentOmitted").Bool()
		results = append(results, pr)
		return true
	})
	return results, msg.Get("prevSeq").Int(), msg.Get("last").Int(), nil
}

func FuzzDecodePushReply(f *testing.F) {
	f.Add([]byte(`{"id":3,"ok":true,"prevSeq":4,"last":6,"results":[{"id":"a","ok":true,"seq":5},{"id":"b","ok":false,"error":{"code":"conflict","num":1200,"message":"m"},"current":{"_id":"b"}}]}`))
	f.Add([]byte(`{"results":[{"id":"a","id":"b","seq":"7","currentOmitted":true},3,[1],null],"last":9,"last":10}`))
	f.Add([]byte(`{"results":{}}`))
	f.Add([]byte(`{"brief":true,"failed":[{"i":1,"id":"b","ok":false,"error":{"code":"conflict"}}],"prevSeq":1,"last":2}`))
	f.Add([]byte(`{"brief":true,"failed":[{"i":9}],"results":[]}`))
	f.Add([]byte(`{"brief":true,"failed":[],"seqs":[1, 20,-3]}`))
	f.Add([]byte(`{"brief":true,"failed":[{"i":0,"ok":false}],"seqsFrom":9,"seqs":[1,2,3]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !gjson.ValidBytes(data) {
			return // replies come from the server; only valid JSON is compared
		}
		if res, _, _, err := wire.DecodePushReplyN(data, 3); err == nil && gjson.GetBytes(data, "brief").Bool() && len(res) != 3 {
			t.Fatalf("brief reply %q decoded to %d results, want 3", data, len(res))
		}
		got, gp, gl, gerr := wire.DecodePushReply(data)
		want, wp, wl, werr := refDecodePushReply(data)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("DecodePushReply(%q): error %v, want %v", data, gerr, werr)
		}
		if gerr == nil && (gp != wp || gl != wl || !reflect.DeepEqual(got, want)) {
			t.Fatalf("DecodePushReply(%q) = %+v %d %d, want %+v %d %d", data, got, gp, gl, want, wp, wl)
		}
	})
}

// BenchmarkDecodeBriefPushReply5000 reads the brief reply to a push of
// 5,000 documents all accepted: what a client decodes per batch.
func BenchmarkDecodeBriefPushReply5000(b *testing.B) {
	const n = 5000
	r := wire.BriefPushReply{ID: 9, OK: true, Brief: true, PrevSeq: 100000, Last: 100000 + n, Failed: []wire.FailedPush{}, Seqs: make([]int64, n)}
	for i := range r.Seqs {
		r.Seqs[i] = int64(100001 + i)
	}
	benchDecodePushReply(b, r, n)
}

// benchDecodePushReply times decoding reply, encoded, as the reply to a
// push of n items whose last was accepted at sequence 100000+n.
func benchDecodePushReply(b *testing.B, reply any, n int) {
	data, err := json.Marshal(reply)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if res, _, _, err := wire.DecodePushReplyN(data, n); err != nil || res[n-1].Seq != int64(100000+n) {
			b.Fatal(len(res), err)
		}
	}
}

// BenchmarkDecodeBriefPushReplyFrom5000 is BenchmarkDecodeBriefPushReply5000
// for the reply a single server gives a client that asks for seqsFrom.
func BenchmarkDecodeBriefPushReplyFrom5000(b *testing.B) {
	const n = 5000
	benchDecodePushReply(b, wire.BriefPushReplyFrom{ID: 9, OK: true, Brief: true, PrevSeq: 100000, Last: 100000 + n, Failed: []wire.FailedPush{}, SeqsFrom: 100001}, n)
}

// BenchmarkAppendPush5000 encodes a push of 5,000 small documents, as the
// replicator sends a batch.
func BenchmarkAppendPush5000(b *testing.B) {
	items := make([]wire.PushItem, 5000)
	size := 64
	for i := range items {
		id := fmt.Sprintf("orders/%d-A", i+1)
		rev := fmt.Sprintf("_l6zhVDW---%04d", i)
		items[i] = wire.PushItem{ID: id, Rev: rev, Doc: fmt.Appendf(nil, `{"total":%d,"item":"widget","_id":%q,"_key":"%d-A","_rev":%q,"@metadata":{"@collection":"orders"}}`, i, id, i+1, rev)}
		size += len(items[i].Doc) + len(id) + len(rev) + 48
	}
	for b.Loop() {
		wire.AppendPushBrief(make([]byte, 0, size), 1, 0, items)
	}
}
