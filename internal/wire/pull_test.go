package wire_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hilodb/hilodb/internal/wire"
)

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("not JSON: %v: %s", err, a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return reflect.DeepEqual(x, y)
}

// TestPullReplyAppendJSON checks the hand-built pull reply and live
// changes message against encoding/json's rendering of the same values.
func TestPullReplyAppendJSON(t *testing.T) {
	changes := []wire.Change{
		{Seq: 1, ID: "orders/1-A", Rev: "_l6zhVDW---B", Doc: json.RawMessage(`{"_id":"orders/1-A","_rev":"_l6zhVDW---B","n":1,"s":"<a&b>"}`)},
		{Seq: 7, ID: `odd "id" \ é` + "\u2028", Rev: "r\n2", Deleted: true},
		{Seq: 1 << 53, ID: "x/1", Rev: "r", Doc: json.RawMessage(`{"a":[1,{"b":null}],"c":"\u00e9\n"}`)},
		{Seq: 9, ID: "notes/1-A", Rev: "_l6zhVDX---B", Doc: json.RawMessage(`{"t":"won"}`), Lost: []wire.LostWrite{
			{Rev: "_l6zhVDW---C", Doc: json.RawMessage(`{"t":"lost"}`)}, {Rev: "_l6zhVDY---D", Deleted: true}}},
	}
	tests := []struct {
		name string
		v    interface{ AppendJSON([]byte) []byte }
	}{
		{"reply", wire.PullReply{ID: 9, OK: true, Changes: changes, Last: 1 << 53, More: true, PurgedSeq: 3}},
		{"empty reply", wire.PullReply{ID: 1, OK: true, Changes: []wire.Change{}, Last: 0}},
		{"last page with collections", wire.PullReply{ID: 2, OK: true, Changes: changes, Last: 12,
			Collections: json.RawMessage(`[{"name":"users","keyOptions":{"type":"autoincrement","increment":5}}]`)}},
		{"no collections kept", wire.PullReply{ID: 3, OK: true, Changes: []wire.Change{}, Last: 12, Collections: json.RawMessage(`[]`)}},
		{"nil changes", wire.PullReply{ID: 1, OK: true}},
		{"live changes", wire.ChangesMsg{Op: wire.OpChanges, Changes: changes, Last: 12}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.v.AppendJSON([]byte("prefix:"))
			if string(got[:7]) != "prefix:" {
				t.Fatalf("the prefix was lost: %s", got)
			}
			want, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			// encoding/json writes nil changes as null, the server never
			// sends them so; everything else must match.
			if tc.name == "nil changes" {
				want = []byte(`{"id":1,"ok":true,"changes":[],"last":0,"more":false}`)
			}
			if !sameJSON(t, got[7:], want) {
				t.Errorf("AppendJSON:\n got %s\nwant %s", got[7:], want)
			}
		})
	}
}

func FuzzPullReplyAppendJSON(f *testing.F) {
	f.Add(int64(3), "orders/1-A", "r1", []byte(`{"a":1}`), false, int64(9), true)
	f.Add(int64(0), "", "", []byte(nil), true, int64(0), false)
	f.Add(int64(-1), "\x00\"\\\u2029", "\xff", []byte(`[1,"x"]`), false, int64(-5), true)
	f.Fuzz(func(t *testing.T, seq int64, id, rev string, doc []byte, deleted bool, last int64, more bool) {
		if len(doc) > 0 && !json.Valid(doc) {
			return // the server sends stored documents, valid JSON
		}
		var compact []byte // stored documents are compact
		if len(doc) > 0 {
			compact, _ = json.Marshal(json.RawMessage(doc))
		}
		r := wire.PullReply{ID: 1, OK: true, Changes: []wire.Change{{Seq: seq, ID: id, Rev: rev, Doc: compact, Deleted: deleted}}, Last: last, More: more}
		got := r.AppendJSON(nil)
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if !sameJSON(t, got, want) {
			t.Fatalf("AppendJSON:\n got %s\nwant %s", got, want)
		}
	})
}
