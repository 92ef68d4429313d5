package client

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/internal/wire"
	"github.com/tidwall/gjson"
)

// pullBoth decodes data both ways: fast (ok false when it gave up) and with
// gjson.
func pullBoth(t *testing.T, data []byte) (fast pullReply, ok bool, slow pullReply, slowErr error) {
	t.Helper()
	fast, slow = pullReply{expect: 100}, pullReply{expect: 100}
	ok = fast.decodePullFast(data)
	slowErr = slow.decodePullGJSON(data)
	return
}

func TestDecodePullFast(t *testing.T) {
	// What the server writes is read by the fast path.
	server := wire.PullReply{ID: 4, OK: true, Last: 99, More: true, PurgedSeq: 2, Changes: []wire.Change{
		{Seq: 1, ID: "orders/1-A", Rev: "_l6zhVDW---B", Doc: json.RawMessage(`{"_id":"orders/1-A","_rev":"_l6zhVDW---B","s":"a \"quoted\" é","n":[1,{"x":null}]}`)},
		{Seq: 9, ID: "orders/2-A", Rev: "r2", Deleted: true},
		{Seq: 1 << 50, ID: "ü/π", Rev: "r3", Doc: json.RawMessage(`{}`)},
	}}
	tests := []struct {
		name string
		data string
		fast bool // the fast path reads it
	}{
		{"the server's reply", string(server.AppendJSON(nil)), true},
		{"spaced", " { \"id\" : 1 , \"ok\":true, \"changes\" : [ { \"seq\" : 3 , \"id\" : \"a\" , \"rev\":\"r\", \"doc\" : { \"a\" : 1 } } ] , \"last\":3 , \"more\":false } ", true},
		{"no changes", `{"id":1,"ok":true,"changes":[],"last":0,"more":false}`, true},
		{"repeated members: the first counts", `{"id":1,"changes":[{"seq":1,"seq":2,"id":"a","id":"b","doc":{"x":1},"doc":2}],"changes":{},"last":5,"last":6}`, true},
		{"unknown members", `{"id":1,"x":[{"y":"]}"}],"changes":[{"seq":1,"id":"a","rev":"r","z":{"}":1}}]}`, true},
		{"doc null", `{"changes":[{"seq":1,"id":"a","rev":"r","doc":null}]}`, true},
		{"an escaped id", `{"changes":[{"seq":1,"id":"a\u0062","rev":"r"}]}`, false},
		{"an escaped name", `{"changes":[{"s\u0065q":1,"id":"a","rev":"r"}]}`, false},
		{"a fractional seq", `{"changes":[{"seq":1.5,"id":"a","rev":"r"}]}`, false},
		{"a seq as a string", `{"changes":[{"seq":"7","id":"a","rev":"r"}]}`, false},
		{"deleted as a string", `{"changes":[{"seq":1,"id":"a","rev":"r","deleted":"true"}]}`, false},
		{"changes not an array", `{"changes":{"a":1}}`, false},
		{"no changes member", `{"id":1}`, false},
		{"trailing text", `{"changes":[]} x`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fast, ok, slow, err := pullBoth(t, []byte(tc.data))
			if ok != tc.fast {
				t.Fatalf("fast path read it: %v, want %v", ok, tc.fast)
			}
			if ok {
				checkDocHasRev(t, &fast.PullReply)
			}
			if ok && (err != nil || !reflect.DeepEqual(fast.PullReply, slow.PullReply)) {
				t.Fatalf("fast %+v\nslow %+v, %v", fast.PullReply, slow.PullReply, err)
			}
		})
	}
	// A document whose _rev is its change's is marked so; others are not.
	marked := wire.PullReply{OK: true, Changes: []wire.Change{
		{Seq: 1, ID: "a", Rev: "r1", Doc: json.RawMessage(`{"x":{"_rev":"no"},"_rev":"r1","@metadata":{}}`)},
		{Seq: 2, ID: "b", Rev: "r2", Doc: json.RawMessage(`{"_rev":"r1"}`)},
		{Seq: 3, ID: "c", Rev: "r3", Doc: json.RawMessage(`{"x":{"_rev":"r3"}}`)},
		{Seq: 4, ID: "d", Rev: "r4", Doc: json.RawMessage(`{"_rev":"r\u0034"}`)},
		{Seq: 5, ID: "e", Rev: "r5", Doc: json.RawMessage(`{"_rev":"r5","_rev":"r6"}`)},
		{Seq: 6, ID: "f", Rev: "r6", Doc: json.RawMessage(`{"\u005frev":"x","_rev":"r6"}`)},
		{Seq: 7, ID: "g", Rev: "", Doc: json.RawMessage(`{"_rev":""}`)},
	}}
	r := pullReply{expect: 10}
	if !r.decodePullFast(marked.AppendJSON(nil)) {
		t.Fatal("the fast path gave up")
	}
	for i, want := range []bool{true, false, false, false, true, false, false} {
		if got := r.Changes[i].DocHasRev; got != want {
			t.Errorf("%s: DocHasRev %v, want %v", r.Changes[i].Doc, got, want)
		}
	}
	// decodeReply takes either path.
	for _, data := range []string{tests[0].data, tests[6].data} {
		r := pullReply{expect: 10}
		if err := r.decodeReply([]byte(data)); err != nil || len(r.Changes) == 0 {
			t.Errorf("decodeReply(%s) = %+v, %v", data, r.PullReply, err)
		}
	}
}

func FuzzDecodePullFast(f *testing.F) {
	f.Add([]byte(`{"id":4,"ok":true,"changes":[{"seq":1,"id":"a","rev":"r","doc":{"a":"}"}},{"seq":2,"id":"b","rev":"r","deleted":true}],"last":2,"more":false}`))
	f.Add([]byte(`{"changes":[{"seq":-3,"id":"","rev":"","doc":[1,"]"]}],"purgedSeq":0}`))
	f.Add([]byte(`{"changes":[],"changes":[{"seq":1}],"more":true,"more":1}`))
	f.Add([]byte(`{"changes":[{"seq":01}]}`))
	f.Add([]byte(`{"id":5,"ok":true,"changes":[],"last":9,"more":false,"collections": [{"name":"users","keyOptions":{"type":"padded"}}] }`))
	f.Add([]byte(`{"collections":[],"changes":[],"collections":[{"name":"x"}]}`))
	f.Add([]byte(`{"changes":[{"seq":3,"id":"a","rev":"r2","doc":{"_rev":"r2"},"lost":[{"rev":"r1","doc":{"a":1}},{"rev":"q","deleted":true}],"lost":[]}],"last":3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fast := pullReply{expect: 8}
		if !fast.decodePullFast(data) || !gjson.ValidBytes(data) {
			return // only what both read, from valid JSON, is compared
		}
		slow := pullReply{expect: 8}
		checkDocHasRev(t, &fast.PullReply)
		if err := slow.decodePullGJSON(data); err != nil || !reflect.DeepEqual(fast.PullReply, slow.PullReply) {
			t.Fatalf("%q:\nfast %+v\nslow %+v, %v", data, fast.PullReply, slow.PullReply, err)
		}
	})
}

// checkDocHasRev checks each change the fast path marked: its document is
// an object whose first top-level _rev, as gjson reads it, is the change's
// non-empty rev. Then it clears the marks, which gjson's path does not
// set, for a comparison with it.
func checkDocHasRev(t *testing.T, r *PullReply) {
	t.Helper()
	for i := range r.Changes {
		c := &r.Changes[i]
		if c.DocHasRev {
			v := gjson.GetBytes(c.Doc, "_rev")
			if c.Rev == "" || !gjson.ParseBytes(c.Doc).IsObject() || v.Type != gjson.String || v.String() != c.Rev {
				t.Fatalf("change %d marked DocHasRev: rev %q, doc %s", i, c.Rev, c.Doc)
			}
		}
		c.DocHasRev = false
	}
}

// BenchmarkDecodePull decodes a pull reply of 10,000 small documents.
func BenchmarkDecodePull(b *testing.B) {
	var changes []wire.Change
	for i := range 10000 {
		id := fmt.Sprintf("orders/%d-A", i+1)
		doc := fmt.Sprintf(`{"_id":%q,"_rev":"_l6zhVDW---B","total":%d,"item":"widget","note":%q}`, id, i, strings.Repeat("x", 20))
		changes = append(changes, wire.Change{Seq: int64(i + 1), ID: id, Rev: "_l6zhVDW---B", Doc: json.RawMessage(doc)})
	}
	data := wire.PullReply{ID: 1, OK: true, Changes: changes, Last: 10000}.AppendJSON(nil)
	for _, path := range []string{"fast", "gjson"} {
		b.Run(path, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				r := pullReply{expect: 10000}
				if path == "fast" {
					if !r.decodePullFast(data) {
						b.Fatal("the fast path gave up")
					}
				} else if err := r.decodePullGJSON(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
