package client

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hilodb/hilodb/internal/wire"
)

// TestAppendPush checks the hand-built push frame against encoding/json's
// rendering of the same wire.Push.
func TestAppendPush(t *testing.T) {
	items := []PushItem{
		{ID: "orders/1-A", BaseRev: "", Rev: "_l6zhVDW---B", Doc: json.RawMessage(`{"_id":"orders/1-A","n":1}`)},
		{ID: `odd "id" \ é`, BaseRev: "r1", Rev: "r2", Deleted: true},
		{ID: "x/1", BaseRev: "r\n1", Rev: "r2", Doc: json.RawMessage(`{"a":[1,{"b":null}]}`)},
	}
	seven := int64(7)
	for _, tc := range []struct {
		since int64
		want  wire.Push
	}{
		{-1, wire.Push{ID: 42, Op: wire.OpPush, Brief: true, SeqsFrom: true, Changes: items}},
		{7, wire.Push{ID: 42, Op: wire.OpPush, Since: &seven, Brief: true, SeqsFrom: true, Changes: items}},
	} {
		got := appendPush(nil, 42, tc.since, items)
		want, _ := json.Marshal(tc.want)
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("not JSON: %v: %s", err, got)
		}
		json.Unmarshal(want, &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("appendPush:\n got %s\nwant %s", got, want)
		}
	}
}
