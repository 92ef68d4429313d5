package syncserver_test

import (
	"testing"
	"time"

	"github.com/hilodb/hilodb/core/revision"
	"github.com/hilodb/hilodb/syncserver"
)

// revAt returns a revision whose clock is d past now, node T, plus n.
func revAt(d time.Duration, n uint64) string {
	return revision.Encode(uint64(time.Now().Add(d).UnixMilli())<<20+n, "T")
}

// TestRevisionsOnlyGrow: a push whose rev is not newer than the stored
// version's (a rev once used may have named other content, which a replica
// holding it would keep) is refused with stale_rev and the current
// version; a rev that is no hilodb revision, or whose clock is too far
// ahead, is bad_document. Store-neutral.
func TestRevisionsOnlyGrow(t *testing.T) {
	r1, r2, r3 := revAt(-time.Minute, 1), revAt(-time.Minute, 2), revAt(-time.Minute, 3)
	for _, tc := range []struct {
		name   string
		setup  []string // pushes made first, every item accepted
		push   string   // the push under test
		want   []string // per item: "ok" or an error code
		final  string   // the stored _rev of d/a afterwards
		finalV any      // and its v, nil for a tombstone
	}{
		{"a rev used before, named again in the same push",
			[]string{`{"id":"d/a","baseRev":"","rev":"` + r1 + `","doc":{"v":1}}`},
			`{"id":"d/a","baseRev":"` + r1 + `","rev":"` + r2 + `","doc":{"v":2}},{"id":"d/a","baseRev":"` + r2 + `","rev":"` + r1 + `","doc":{"v":"other"}}`,
			[]string{"ok", "stale_rev"}, r2, float64(2)},
		{"a rev used before, named again in a later push",
			[]string{`{"id":"d/a","baseRev":"","rev":"` + r1 + `","doc":{"v":1}}`, `{"id":"d/a","baseRev":"` + r1 + `","rev":"` + r3 + `","doc":{"v":3}}`},
			`{"id":"d/a","baseRev":"` + r3 + `","rev":"` + r1 + `","doc":{"v":"other"}}`,
			[]string{"stale_rev"}, r3, float64(3)},
		{"an older rev, never used",
			[]string{`{"id":"d/a","baseRev":"","rev":"` + r3 + `","doc":{"v":3}}`},
			`{"id":"d/a","baseRev":"` + r3 + `","rev":"` + r2 + `","doc":{"v":2}}`,
			[]string{"stale_rev"}, r3, float64(3)},
		{"a tombstone made new with an older rev",
			[]string{`{"id":"d/a","baseRev":"","rev":"` + r1 + `","doc":{"v":1}}`, `{"id":"d/a","baseRev":"` + r1 + `","rev":"` + r3 + `","deleted":true}`},
			`{"id":"d/a","baseRev":"","rev":"` + r2 + `","doc":{"v":2}}`,
			[]string{"stale_rev"}, r3, nil},
		{"a tombstone made new with a newer rev",
			[]string{`{"id":"d/a","baseRev":"","rev":"` + r1 + `","doc":{"v":1}}`, `{"id":"d/a","baseRev":"` + r1 + `","rev":"` + r2 + `","deleted":true}`},
			`{"id":"d/a","baseRev":"","rev":"` + r3 + `","doc":{"v":3}}`,
			[]string{"ok"}, r3, float64(3)},
		{"a retry of the stored write",
			[]string{`{"id":"d/a","baseRev":"","rev":"` + r1 + `","doc":{"v":1}}`},
			`{"id":"d/a","baseRev":"","rev":"` + r1 + `","doc":{"v":1}}`,
			[]string{"ok"}, r1, float64(1)},
		{"no hilodb revision",
			nil, `{"id":"d/a","baseRev":"","rev":"zz1-Q","doc":{"v":1}},{"id":"d/b","baseRev":"","rev":"` + r1[:11] + `a.b","doc":{}}`,
			[]string{"bad_document", "bad_document"}, "", nil},
		{"a clock two days ahead",
			nil, `{"id":"d/a","baseRev":"","rev":"` + revAt(48*time.Hour, 0) + `","doc":{"v":1}}`,
			[]string{"bad_document"}, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, syncserver.Config{})
			r := dialRaw(t, ts)
			r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
			for _, s := range tc.setup {
				for _, res := range results(t, r.call(`{"id":2,"op":"push","changes":[`+s+`]}`)) {
					if res["ok"] != true {
						t.Fatalf("setup: %v", res)
					}
				}
			}
			res := results(t, r.call(`{"id":3,"op":"push","changes":[`+tc.push+`]}`))
			for i, want := range tc.want {
				got := "ok"
				if res[i]["ok"] != true {
					got = errCode(res[i])
				}
				if got != want {
					t.Errorf("item %d: %s, want %s (%v)", i, got, want, res[i])
				}
				if want == "stale_rev" {
					if cur, _ := res[i]["current"].(map[string]any); cur == nil || cur["_rev"] != tc.final {
						t.Errorf("item %d: stale_rev without the current version %s: %v", i, tc.final, res[i])
					}
				}
			}
			got := r.call(`{"id":4,"op":"get","ids":["d/a"]}`)["docs"].([]any)[0].(map[string]any)
			if got["rev"] != tc.final {
				t.Errorf("stored _rev %v, want %q", got["rev"], tc.final)
			}
			var v any
			if d, ok := got["doc"].(map[string]any); ok {
				v = d["v"]
			}
			if v != tc.finalV {
				t.Errorf("stored v %v, want %v", v, tc.finalV)
			}
		})
	}
}

// TestHTTPWritesPassThePushedRev: a write through the ArangoDB or RavenDB
// door over a document pushed with a clock ahead of the server's makes a
// revision past it, so the document's revisions still only grow.
func TestHTTPWritesPassThePushedRev(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	ahead := revAt(time.Hour, 0)
	for _, id := range []string{"c/x", "orders/1"} {
		if res := results(t, r.call(`{"id":2,"op":"push","changes":[{"id":"`+id+`","baseRev":"","rev":"`+ahead+`","doc":{"v":1}}]}`)); res[0]["ok"] != true {
			t.Fatalf("push %s: %v", id, res)
		}
	}
	aheadV, _, _ := revision.Decode(ahead)
	status, b := do(t, "PUT", ts.hs.URL+"/_db/shop/_api/document/c/x", `{"v":2}`, nil)
	rev, _ := b["_rev"].(string)
	if v, _, err := revision.Decode(rev); status >= 300 || err != nil || v <= aheadV {
		t.Errorf("ArangoDB PUT over a pushed rev %s: %d, _rev %q, want one past it", ahead, status, rev)
	}
	status, b = do(t, "PUT", ts.hs.URL+"/databases/shop/docs?id=orders/1", `{"v":2}`, nil)
	if status >= 300 {
		t.Fatalf("RavenDB PUT: %d %v", status, b)
	}
	got := r.call(`{"id":3,"op":"get","ids":["orders/1"]}`)["docs"].([]any)[0].(map[string]any)
	rev, _ = got["rev"].(string)
	if v, _, err := revision.Decode(rev); err != nil || v <= aheadV {
		t.Errorf("RavenDB PUT over a pushed rev %s: stored _rev %q, want one past it", ahead, rev)
	}
}

// TestSameRevOtherLoneSurrogateConflicts: a push of a stored rev whose
// content differs only in a lone surrogate is not a retry (both decode to
// U+FFFD in Go, but JavaScript sees two strings): it is a conflict, and the
// stored content stays.
func TestSameRevOtherLoneSurrogateConflicts(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	rev := revAt(-time.Minute, 0)
	push := func(doc string) map[string]any {
		return results(t, r.call(`{"id":2,"op":"push","changes":[{"id":"s/1","baseRev":"","rev":"`+rev+`","doc":`+doc+`}]}`))[0]
	}
	if res := push(`{"s":"\ud800","n":1}`); res["ok"] != true {
		t.Fatalf("first write: %v", res)
	}
	for _, tc := range []struct {
		doc, want string
	}{
		{`{"s":"\udc00","n":1}`, "conflict"},
		{`{"s":"\uDBFF","n":1}`, "conflict"},
		{`{"\ud800":"\ud800","n":1}`, "conflict"},
		{`{"n":1,"s":"\ud800"}`, "ok"},         // the same content, members in another order
		{`{"s":"\uD800","n":1.0}`, "conflict"}, // 1.0 is not 1's text
		{`{"n":1,"s":"\uD800"}`, "ok"},
	} {
		res := push(tc.doc)
		got := "ok"
		if res["ok"] != true {
			got = errCode(res)
		}
		if got != tc.want {
			t.Errorf("retry with %s: %s, want %s (%v)", tc.doc, got, tc.want, res)
		}
	}
}
