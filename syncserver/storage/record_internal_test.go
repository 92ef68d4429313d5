package storage

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/hilodb/hilodb/internal/wire"
)

// refDecodeRecord is decodeRecord as first written, a gjson Get per field:
// the one-walk decoder must agree with it.
func refDecodeRecord(v string) (rec Record) {
	m := gjson.Parse(v)
	rec.Rev = m.Get("rev").String()
	rec.Seq = m.Get("seq").Int()
	rec.Deleted = m.Get("deleted").Bool()
	rec.At = m.Get("at").Int()
	if d := m.Get("doc"); d.Exists() {
		rec.Doc = json.RawMessage(d.Raw)
	}
	if l := m.Get("lost"); l.IsArray() {
		rec.Lost = decodeLost(l)
	}
	return rec
}

func TestDecodeRecord(t *testing.T) {
	for _, rec := range []Record{
		{Rev: "r1", Seq: 3, Doc: json.RawMessage(`{"_id":"a","x":[1,{"y":"z"}]}`)},
		{Rev: `r"2`, Seq: 1 << 40, Deleted: true, At: 1700000000000},
		{Rev: "r3", Seq: 7, Doc: json.RawMessage(`{"v":"won"}`), Lost: []wire.LostWrite{
			{Rev: "q1", Doc: json.RawMessage(`{"v":"lost"}`)}, {Rev: "q2", Deleted: true}}},
		{},
	} {
		if got := decodeRecord(rec.Encode()); !reflect.DeepEqual(got, rec) && !(len(rec.Doc) == 0 && got.Doc == nil) {
			t.Errorf("decodeRecord(%s) = %+v, want %+v", rec.Encode(), got, rec)
		}
	}
	// A repeated member counts as first given; the order does not matter.
	got := decodeRecord(`{"doc":{"a":1},"seq":2,"rev":"x","seq":5,"deleted":false,"at":4}`)
	if got.Seq != 2 || got.Rev != "x" || string(got.Doc) != `{"a":1}` || got.At != 4 {
		t.Errorf("decodeRecord = %+v", got)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(`{"rev":"r1","seq":3,"doc":{"a":1}}`)
	f.Add(`{"rev":"r","seq":1,"deleted":true,"at":9}`)
	f.Add(`{"seq":"x","rev":1,"doc":null,"doc":2,"deleted":"y"}`)
	f.Add(`{"rev":"r","seq":4,"doc":{},"lost":[{"rev":"q","doc":{"a":1}},{"rev":"p","deleted":true},{"doc":[1]}],"lost":7}`)
	f.Fuzz(func(t *testing.T, v string) {
		if !gjson.Valid(v) {
			return // getRecord checks a record before it decodes it
		}
		if got, want := decodeRecord(v), refDecodeRecord(v); !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeRecord(%q) = %+v, want %+v", v, got, want)
		}
	})
}
