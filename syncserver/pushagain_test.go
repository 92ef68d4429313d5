package syncserver_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/syncserver"
)

// One push may name an id more than once: each item sees the items before
// it, whether they were new documents (written before they are looked at)
// or went through the general checks, and the pull afterwards holds each
// document once, at its last accepted version. Store-neutral.
func TestPushNamesAnIDAgain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup string   // changes pushed first, all accepted ("" for none)
		items string   // the push under test
		want  []string // per item: "ok" or an error code
		revs  string   // the pull's id@rev list afterwards, sorted
	}{
		{"new, then the same write again",
			"", `{"id":"d/a","baseRev":"","rev":"_mAAAAAAA-BT","doc":{"n":1}},{"id":"d/a","baseRev":"","rev":"_mAAAAAAA-BT","doc":{"n":1}}`,
			[]string{"ok", "ok"}, "d/a@_mAAAAAAA-BT"},
		{"new, then another new version",
			"", `{"id":"d/a","baseRev":"","rev":"_mAAAAAAA-BT","doc":{"n":1}},{"id":"d/a","baseRev":"","rev":"_mAAAAAAA-CT","doc":{"n":2}}`,
			[]string{"ok", "conflict"}, "d/a@_mAAAAAAA-BT"},
		{"new, then an update on it",
			"", `{"id":"d/a","baseRev":"","rev":"_mAAAAAAA-BT","doc":{"n":1}},{"id":"d/b","baseRev":"","rev":"_mAAAAAAA-BT","doc":{}},{"id":"d/a","baseRev":"_mAAAAAAA-BT","rev":"_mAAAAAAA-CT","doc":{"n":2}}`,
			[]string{"ok", "ok", "ok"}, "d/a@_mAAAAAAA-CT d/b@_mAAAAAAA-BT"},
		{"a refused update, then the id new",
			"", `{"id":"d/a","baseRev":"x","rev":"_mAAAAAAA-BT","doc":{}},{"id":"d/a","baseRev":"","rev":"_mAAAAAAA-CT","doc":{"n":2}},{"id":"d/a","baseRev":"","rev":"_mAAAAAAA-DT","doc":{}}`,
			[]string{"conflict", "ok", "conflict"}, "d/a@_mAAAAAAA-CT"},
		{"stored already: a retry and a conflict",
			`{"id":"d/a","baseRev":"","rev":"_mAAAAAAA-BT","doc":{"n":1}}`, `{"id":"d/a","baseRev":"","rev":"_mAAAAAAA-BT","doc":{"n":1}},{"id":"d/a","baseRev":"","rev":"_mAAAAAAA-CT","doc":{}}`,
			[]string{"ok", "conflict"}, "d/a@_mAAAAAAA-BT"},
		{"a tombstone made new again, twice",
			`{"id":"d/a","baseRev":"","rev":"_mAAAAAAA-BT","doc":{}}`, `{"id":"d/a","baseRev":"_mAAAAAAA-BT","rev":"_mAAAAAAA-CT","deleted":true},{"id":"d/a","baseRev":"","rev":"_mAAAAAAA-DT","doc":{"n":3}},{"id":"d/a","baseRev":"","rev":"_mAAAAAAA-ET","doc":{}}`,
			[]string{"ok", "ok", "conflict"}, "d/a@_mAAAAAAA-DT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, syncserver.Config{})
			r := dialRaw(t, ts)
			r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
			if tc.setup != "" {
				for _, res := range results(t, r.call(`{"id":2,"op":"push","changes":[`+tc.setup+`]}`)) {
					if res["ok"] != true {
						t.Fatalf("setup: %v", res)
					}
				}
			}
			res := results(t, r.call(`{"id":3,"op":"push","changes":[`+tc.items+`]}`))
			for i, want := range tc.want {
				got := "ok"
				if res[i]["ok"] != true {
					got = errCode(res[i])
				}
				if got != want {
					t.Errorf("item %d: %s, want %s (%v)", i, got, want, res[i])
				}
			}
			pull := r.call(`{"id":4,"op":"pull","since":0}`)
			var revs []string
			for _, c := range pull["changes"].([]any) {
				ch := c.(map[string]any)
				revs = append(revs, fmt.Sprintf("%s@%s", ch["id"], ch["rev"]))
			}
			sort.Strings(revs) // on etcd one commit's changes share a sequence
			if got := strings.Join(revs, " "); got != tc.revs {
				t.Errorf("pull: %s, want %s", got, tc.revs)
			}
		})
	}
}

// A retried push (its reply lost) finds all of its documents stored: it is
// answered as before and writes no record again beyond the first it finds.
func TestRetriedPushWritesLittle(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	if ts.onEtcd() {
		t.Skip("the data file is the buntdb store's")
	}
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	var b strings.Builder
	for i := range 200 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"d/%d","baseRev":"","rev":"_mAAAAAAA-BT","doc":{"note":"%s"}}`, i, strings.Repeat("x", 500))
	}
	push := `{"id":%d,"op":"push","changes":[` + b.String() + `]}`
	first := results(t, r.call(fmt.Sprintf(push, 2)))
	size := func() int64 {
		fi, err := os.Stat(filepath.Join(ts.dir, "hilodb.db"))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	again := results(t, r.call(fmt.Sprintf(push, 3)))
	for i := range first {
		if again[i]["ok"] != true || again[i]["seq"] != first[i]["seq"] {
			t.Fatalf("item %d retried: %v, first %v", i, again[i], first[i])
		}
	}
	// 200 documents of 500 bytes are 100 KB; one put back is under 1 KB.
	if grown := size() - before; grown > 4<<10 {
		t.Errorf("the retried push grew the data file by %d bytes", grown)
	}
}
