package syncserver

import (
	"fmt"
	"strings"
	"testing"
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
