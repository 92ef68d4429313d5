package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/hilodb/hilodb/errcode"
)

// FuzzErrorBody checks that an error's body is the bytes encoding/json
// makes of it, whether errorWithRev writes it by hand or marshals it.
func FuzzErrorBody(f *testing.F) {
	for _, s := range [][2]string{
		{`document "orders/nope" not found`, ""},
		{`conflict, _rev values do not match`, "_abc-de---A"},
		{`back\slash and "quotes"`, `"r"`},
		{"a <b> & c", ""},
		{"tab\there, line\nend, \b\f", ""},
		{"é, \u2028, \xff", "\x7f"},
		{"", ""},
	} {
		f.Add(s[0], s[1], 404, 1202)
	}
	f.Fuzz(func(t *testing.T, msg, rev string, status, num int) {
		c := errcode.Code{Name: "x", Num: num, Status: status}
		got := errorWithRev(c, msg, rev)
		m := map[string]any{"error": true, "code": got.status, "errorNum": num, "errorMessage": msg}
		if rev != "" {
			m["_rev"] = rev
		}
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.body, want) {
			t.Errorf("body\n got %s\nwant %s", got.body, want)
		}
	})
}
