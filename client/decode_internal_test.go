package client

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tidwall/gjson"
)

// refPullReply is the pull reply decoder as first written, with a gjson
// Get per field: the one-walk decoder must agree with it on any valid JSON.
func refPullReply(data []byte) (pullReply, bool) {
	var r pullReply
	msg := gjson.ParseBytes(data)
	changes := msg.Get("changes")
	if !changes.IsArray() {
		return r, false
	}
	r.OK = true
	r.ID = msg.Get("id").Int()
	r.Last = msg.Get("last").Int()
	r.More = msg.Get("more").Bool()
	r.PurgedSeq = msg.Get("purgedSeq").Int()
	changes.ForEach(func(_, v gjson.Result) bool {
		ch := Change{Seq: v.Get("seq").Int(), ID: v.Get("id").String(), Rev: v.Get("rev").String(), Deleted: v.Get("deleted").Bool()}
		if doc := v.Get("doc"); doc.Exists() {
			ch.Doc = json.RawMessage(doc.Raw)
		}
		r.Changes = append(r.Changes, ch)
		return true
	})
	return r, true
}

func FuzzPullReply(f *testing.F) {
	f.Add([]byte(`{"id":7,"ok":true,"changes":[{"seq":1,"id":"a","rev":"r","doc":{"_id":"a","x":[1]}},{"seq":2,"id":"b","rev":"s","deleted":true}],"last":2,"more":true,"purgedSeq":1}`))
	f.Add([]byte(`{"changes":[{"seq":"3","id":"a","id":"b","doc":null},4,[5]],"last":1,"last":2}`))
	f.Add([]byte(`{"changes":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !gjson.ValidBytes(data) {
			return // replies come from the server; only valid JSON is compared
		}
		var got pullReply
		gerr := got.decodeReply(data)
		want, ok := refPullReply(data)
		if (gerr == nil) != ok {
			t.Fatalf("decodeReply(%q): error %v, reference took it: %v", data, gerr, ok)
		}
		if ok && !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeReply(%q) = %+v, want %+v", data, got, want)
		}
	})
}
