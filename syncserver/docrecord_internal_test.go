package syncserver

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestNormalizeDoc(t *testing.T) {
	// members returns n members m0…m(n-1), then extra.
	members := func(n int, extra string) string {
		var b strings.Builder
		b.WriteString(`{"_id":"d/1","_rev":"r1"`)
		for i := range n {
			fmt.Fprintf(&b, `,"m%d":%d`, i, i)
		}
		return b.String() + extra + "}"
	}
	tests := []struct {
		name, doc, want, err string
	}{
		{"compact and stamped", `{"_id":"d/1","_rev":"r1","a":1}`, `{"_id":"d/1","_rev":"r1","a":1}`, ""},
		{"spaced", "{\"_id\":\"d/1\",\n \"_rev\":\"r1\", \"a\": [1, 2]}", `{"_id":"d/1","_rev":"r1","a":[1,2]}`, ""},
		{"stamped anew", `{"_id":"other","a":1}`, `{"_id":"d/1","_rev":"r1","a":1}`, ""},
		{"a repeated member", `{"a":1,"b":2,"a":3}`, "", `member "a" more than once`},
		{"a repeated _id", `{"_id":"d/1","_rev":"r1","_id":"d/1"}`, "", `member "_id" more than once`},
		{"the same name escaped", `{"a":1,"\u0061":2}`, "", `member "a" more than once`},
		{"many members", members(40, ""), members(40, ""), ""},
		{"many members, a late repeat of an early one", members(40, `,"m2":0`), "", `member "m2" more than once`},
		{"many members, a late repeat of a late one", members(40, `,"m39":0`), "", `member "m39" more than once`},
		{"repeat at the edge of the short list", members(14, `,"m13":0`), "", `member "m13" more than once`},
		{"not an object", `[1]`, "", "must be a JSON object"},
		{"not JSON", `{"a":}`, "", "must be a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := normalizeDoc([]byte(tc.doc), "d/1", "r1")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("normalizeDoc(%s) = %s, %v; want an error with %q", tc.doc, got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("normalizeDoc(%s) = %s, want %s", tc.doc, got, tc.want)
			}
		})
	}
}

// refDecodeRecord is decodeRecord as first written, a gjson Get per field:
// the one-walk decoder must agree with it.
func refDecodeRecord(v string) (rec docRecord) {
	m := gjson.Parse(v)
	rec.Rev = m.Get("rev").String()
	rec.Seq = m.Get("seq").Int()
	rec.Deleted = m.Get("deleted").Bool()
	rec.At = m.Get("at").Int()
	if d := m.Get("doc"); d.Exists() {
		rec.Doc = json.RawMessage(d.Raw)
	}
	return rec
}

func TestDecodeRecord(t *testing.T) {
	for _, rec := range []docRecord{
		{Rev: "r1", Seq: 3, Doc: json.RawMessage(`{"_id":"a","x":[1,{"y":"z"}]}`)},
		{Rev: `r"2`, Seq: 1 << 40, Deleted: true, At: 1700000000000},
		{},
	} {
		if got := decodeRecord(rec.encode()); !reflect.DeepEqual(got, rec) && !(len(rec.Doc) == 0 && got.Doc == nil) {
			t.Errorf("decodeRecord(%s) = %+v, want %+v", rec.encode(), got, rec)
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
	f.Fuzz(func(t *testing.T, v string) {
		if !gjson.Valid(v) {
			return // getRecord checks a record before it decodes it
		}
		if got, want := decodeRecord(v), refDecodeRecord(v); !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeRecord(%q) = %+v, want %+v", v, got, want)
		}
	})
}
