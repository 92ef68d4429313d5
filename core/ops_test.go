package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/revision"
)

// insert is a helper that inserts doc under key k and returns the result.
func insert(t *testing.T, s *testStore, k string, body string) core.Result {
	t.Helper()
	doc := map[string]json.RawMessage{}
	json.Unmarshal([]byte(body), &doc)
	doc["_key"], _ = json.Marshal(k)
	r, err := s.Insert(context.Background(), "users", mustJSON(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPreconditions covers _rev preconditions on replace, update and remove:
// 1200 with the current _rev, ignoreRevs, IfMatch.
func TestPreconditions(t *testing.T) {
	ctx := context.Background()
	type op func(s *testStore, body string, opts *core.WriteOptions) (core.Result, error)
	ops := map[string]op{
		"replace": func(s *testStore, body string, o *core.WriteOptions) (core.Result, error) {
			return s.Replace(ctx, "users", "", []byte(body), o)
		},
		"update": func(s *testStore, body string, o *core.WriteOptions) (core.Result, error) {
			return s.Update(ctx, "users", "", []byte(body), o)
		},
		"remove": func(s *testStore, body string, o *core.WriteOptions) (core.Result, error) {
			rs, err := s.RemoveMany(ctx, "users", [][]byte{[]byte(body)}, o)
			if err != nil {
				return core.Result{}, err
			}
			if rs[0].Err != nil {
				return rs[0], rs[0].Err
			}
			return rs[0], nil
		},
	}
	for name, do := range ops {
		t.Run(name, func(t *testing.T) {
			tests := []struct {
				name    string
				body    string // %s is the current rev
				opts    *core.WriteOptions
				wantErr bool
			}{
				{"stale _rev ignored by default", `{"_key":"a","_rev":"_stale______C"}`, nil, false},
				{"stale _rev with ignoreRevs true", `{"_key":"a","_rev":"_stale______C"}`, &core.WriteOptions{IgnoreRevs: core.Ptr(true)}, false},
				{"stale _rev with ignoreRevs false", `{"_key":"a","_rev":"_stale______C"}`, &core.WriteOptions{IgnoreRevs: core.Ptr(false)}, true},
				{"current _rev with ignoreRevs false", `{"_key":"a","_rev":"%s"}`, &core.WriteOptions{IgnoreRevs: core.Ptr(false)}, false},
				{"no _rev with ignoreRevs false", `{"_key":"a"}`, &core.WriteOptions{IgnoreRevs: core.Ptr(false)}, false},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					s := newTestStore(t)
					cur := insert(t, s, "a", `{"v":1}`)
					body := tt.body
					if strings.Contains(body, "%s") {
						body = fmt.Sprintf(body, cur.Rev)
					}
					r, err := do(s, body, tt.opts)
					if tt.wantErr {
						e := wantErr(t, err, 1200, core.ErrConflict)
						if e.Rev != cur.Rev || e.Key != "a" || e.HTTPStatus() != 412 {
							t.Errorf("conflict carries rev %q key %q, want %q a", e.Rev, e.Key, cur.Rev)
						}
						if got, _ := s.Get("users/a"); decode(t, got)["_rev"] != cur.Rev {
							t.Error("the document changed despite the conflict")
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					if name != "remove" && r.OldRev != cur.Rev {
						t.Errorf("_oldRev %q, want %q", r.OldRev, cur.Rev)
					}
				})
			}
		})
	}
	// IfMatch applies whatever IgnoreRevs says.
	s := newTestStore(t)
	cur := insert(t, s, "a", `{}`)
	_, err := s.Replace(ctx, "users", "a", []byte(`{}`), &core.WriteOptions{IfMatch: "_other_____C"})
	wantErr(t, err, 1200, core.ErrConflict)
	_, err = s.Remove(ctx, "users", "a", &core.WriteOptions{IfMatch: "_other_____C"})
	wantErr(t, err, 1200, core.ErrConflict)
	if _, err := s.Remove(ctx, "users", "a", &core.WriteOptions{IfMatch: cur.Rev}); err != nil {
		t.Error(err)
	}
}

func TestNotFound(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	insert(t, s, "a", `{}`)
	_, err := s.Replace(ctx, "users", "nope", []byte(`{}`), nil)
	wantErr(t, err, 1202, core.ErrNotFound)
	_, err = s.Update(ctx, "users", "nope", []byte(`{}`), nil)
	wantErr(t, err, 1202, core.ErrNotFound)
	_, err = s.Remove(ctx, "users", "nope", nil)
	wantErr(t, err, 1202, core.ErrNotFound)
	_, err = s.Document("users", "nope")
	wantErr(t, err, 1202, core.ErrNotFound)
	// A document of another collection is not found in this one.
	_, err = s.Document("orders", "users/a")
	wantErr(t, err, 1202, core.ErrNotFound)
	_, err = s.Remove(ctx, "orders", "users/a", nil)
	wantErr(t, err, 1202, core.ErrNotFound)
	_, err = s.Replace(ctx, "users", "", []byte(`{"v":1}`), nil)
	wantErr(t, err, 1221, core.ErrIllegalKey)
	if doc, err := s.Document("users", "a"); err != nil || decode(t, doc)["_id"] != "users/a" {
		t.Errorf("Document by key: %s %v", doc, err)
	}
	if doc, err := s.Document("users", "users/a"); err != nil || decode(t, doc)["_key"] != "a" {
		t.Errorf("Document by id: %s %v", doc, err)
	}
}

func TestOverwriteModes(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		mode    core.OverwriteMode
		wantNum int
		want    string // the stored document's attributes after the insert
		oldRev  bool
	}{
		{"", 1210, `{"a":1,"n":{"x":1}}`, false},
		{core.OverwriteConflict, 1210, `{"a":1,"n":{"x":1}}`, false},
		{core.OverwriteIgnore, 0, `{"a":1,"n":{"x":1}}`, false},
		{core.OverwriteReplace, 0, `{"b":2,"n":{"y":2}}`, true},
		{core.OverwriteUpdate, 0, `{"a":1,"b":2,"n":{"x":1,"y":2}}`, true},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			s := newTestStore(t)
			first := insert(t, s, "k", `{"a":1,"n":{"x":1}}`)
			r, err := s.Insert(ctx, "users", []byte(`{"_key":"k","b":2,"n":{"y":2}}`), &core.WriteOptions{OverwriteMode: tt.mode, ReturnOld: true, ReturnNew: true})
			if tt.wantNum != 0 {
				e := wantErr(t, err, tt.wantNum, core.ErrUniqueConstraint)
				if e.Key != "k" || e.HTTPStatus() != 409 {
					t.Errorf("error key %q", e.Key)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			doc, _ := s.Get("users/k")
			m := decode(t, doc)
			for _, k := range []string{"_id", "_key", "_rev", "@metadata"} {
				delete(m, k)
			}
			if got := string(mustJSON(m)); got != tt.want {
				t.Errorf("stored %s, want %s", got, tt.want)
			}
			if tt.mode == core.OverwriteIgnore && (r.Rev != first.Rev || r.ID != "users/k") {
				t.Errorf("ignore returned %+v, want the existing header", r)
			}
			if tt.oldRev {
				if r.OldRev != first.Rev || r.Old == nil || r.New == nil {
					t.Errorf("overwrite result %+v", r)
				}
			}
		})
	}
	s := newTestStore(t)
	_, err := s.Insert(ctx, "users", []byte(`{}`), &core.WriteOptions{OverwriteMode: "merge"})
	wantErr(t, err, 10, core.ErrBadParameter)
}

func TestUpdateKeepNullMergeObjects(t *testing.T) {
	ctx := context.Background()
	const base = `{"a":1,"b":2,"n":{"x":1,"y":2,"deep":{"p":1}}}`
	tests := []struct {
		name      string
		patch     string
		keepNull  *bool
		mergeObjs *bool
		want      string
	}{
		{"defaults keep null and merge", `{"b":null,"n":{"y":null,"z":3}}`, nil, nil, `{"a":1,"b":null,"n":{"deep":{"p":1},"x":1,"y":null,"z":3}}`},
		{"keepNull false removes", `{"b":null,"n":{"y":null,"z":3}}`, core.Ptr(false), nil, `{"a":1,"n":{"deep":{"p":1},"x":1,"z":3}}`},
		{"mergeObjects false replaces", `{"n":{"z":3}}`, nil, core.Ptr(false), `{"a":1,"b":2,"n":{"z":3}}`},
		{"deep merge", `{"n":{"deep":{"q":2}}}`, nil, nil, `{"a":1,"b":2,"n":{"deep":{"p":1,"q":2},"x":1,"y":2}}`},
		{"object over scalar", `{"a":{"k":1}}`, nil, nil, `{"a":{"k":1},"b":2,"n":{"deep":{"p":1},"x":1,"y":2}}`},
		{"system attributes ignored", `{"_key":"other","_id":"x/y","_rev":"zzz"}`, nil, nil, `{"a":1,"b":2,"n":{"deep":{"p":1},"x":1,"y":2}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(t)
			insert(t, s, "k", base)
			r, err := s.Update(ctx, "users", "k", []byte(tt.patch), &core.WriteOptions{KeepNull: tt.keepNull, MergeObjects: tt.mergeObjs, ReturnNew: true})
			if err != nil {
				t.Fatal(err)
			}
			m := decode(t, r.New)
			if m["_key"] != "k" || m["_id"] != "users/k" || m["_rev"] != r.Rev {
				t.Errorf("system attributes changed: %v", m)
			}
			for _, k := range []string{"_id", "_key", "_rev", "@metadata"} {
				delete(m, k)
			}
			if got := string(mustJSON(m)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestReturnNewOldSilent(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	r, err := s.Insert(ctx, "users", []byte(`{"_key":"a","v":1}`), &core.WriteOptions{ReturnNew: true})
	if err != nil || decode(t, r.New)["v"] != 1.0 || r.Old != nil {
		t.Fatalf("insert returnNew: %+v %v", r, err)
	}
	r, _ = s.Insert(ctx, "users", []byte(`{"_key":"b"}`), nil)
	if r.New != nil || r.ID != "users/b" {
		t.Errorf("insert without returnNew: %+v", r)
	}
	r, _ = s.Replace(ctx, "users", "a", []byte(`{"v":2}`), &core.WriteOptions{ReturnOld: true, ReturnNew: true})
	if decode(t, r.Old)["v"] != 1.0 || decode(t, r.New)["v"] != 2.0 {
		t.Errorf("replace old/new: %s %s", r.Old, r.New)
	}
	r, _ = s.Remove(ctx, "users", "a", &core.WriteOptions{ReturnOld: true})
	if decode(t, r.Old)["v"] != 2.0 || r.New != nil {
		t.Errorf("remove old: %s", r.Old)
	}
	r, err = s.Insert(ctx, "users", []byte(`{"_key":"c"}`), &core.WriteOptions{Silent: true, ReturnNew: true})
	if err != nil || !r.Silent || r.ID != "" || r.New != nil {
		t.Errorf("silent: %+v %v", r, err)
	}
	if b, _ := json.Marshal(r); string(b) != "{}" {
		t.Errorf("silent JSON %s", b)
	}
	if _, err := s.Get("users/c"); err != nil {
		t.Error("silent insert did not store")
	}
	// Errors are reported under silent too.
	_, err = s.Insert(ctx, "users", []byte(`{"_key":"c"}`), &core.WriteOptions{Silent: true})
	wantErr(t, err, 1210, core.ErrUniqueConstraint)
	// _oldRev is never stored.
	r, _ = s.Insert(ctx, "users", []byte(`{"_key":"d","_oldRev":"x"}`), &core.WriteOptions{ReturnNew: true})
	if _, ok := decode(t, r.New)["_oldRev"]; ok {
		t.Error("_oldRev stored")
	}
}

// TestMultiDocument checks one result per item, in order, with inline errors
// that do not fail the other items, for every operation.
func TestMultiDocument(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	docs := [][]byte{[]byte(`{"_key":"a","v":1}`), []byte(`{"_key":"bad key"}`), []byte(`{}`), []byte(`{"_key":"a"}`), []byte(`nope`)}
	rs, err := s.InsertMany(ctx, "users", docs, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantNums := []int{0, 1221, 0, 1210, 600}
	if len(rs) != len(docs) {
		t.Fatalf("%d results for %d docs", len(rs), len(docs))
	}
	for i, r := range rs {
		got := 0
		if r.Err != nil {
			got = r.Err.Num
		}
		if got != wantNums[i] {
			t.Errorf("item %d: %+v, want error %d", i, r, wantNums[i])
		}
	}
	if rs[0].ID != "users/a" || rs[2].ID != "users/1-A" {
		t.Errorf("ids %q %q", rs[0].ID, rs[2].ID)
	}
	b, _ := json.Marshal(rs)
	var arr []map[string]any
	json.Unmarshal(b, &arr)
	if arr[1]["error"] != true || arr[1]["errorNum"] != 1221.0 || arr[1]["errorMessage"] == "" || arr[0]["_id"] != "users/a" || arr[0]["_rev"] == nil {
		t.Errorf("JSON shapes: %s", b)
	}

	rs, err = s.ReplaceMany(ctx, "users", [][]byte{[]byte(`{"_key":"a","v":2}`), []byte(`{"_key":"zz"}`), []byte(`{"v":3}`)}, &core.WriteOptions{ReturnOld: true})
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Err != nil || decode(t, rs[0].Old)["v"] != 1.0 || rs[1].Err.Num != 1202 || rs[2].Err.Num != 1221 {
		t.Errorf("ReplaceMany: %+v", rs)
	}
	rs, _ = s.UpdateMany(ctx, "users", [][]byte{[]byte(`{"_key":"zz"}`), []byte(`{"_id":"users/a","w":1}`)}, &core.WriteOptions{ReturnNew: true})
	if rs[0].Err.Num != 1202 || rs[1].Err != nil || decode(t, rs[1].New)["w"] != 1.0 || decode(t, rs[1].New)["v"] != 2.0 {
		t.Errorf("UpdateMany: %+v", rs)
	}
	reads, _ := s.DocumentMany("users", []string{"a", "zz", "users/1-A", "bad key"})
	if reads[0].Err != nil || reads[1].Err.Num != 1202 || reads[2].Err != nil || reads[3].Err.Num != 1221 || decode(t, reads[0].New)["w"] != 1.0 {
		t.Errorf("DocumentMany: %+v", reads)
	}
	rs, _ = s.RemoveMany(ctx, "users", [][]byte{[]byte(`"a"`), []byte(`"a"`), []byte(`{"_id":"users/1-A"}`), []byte(`7`)}, nil)
	if rs[0].Err != nil || rs[1].Err.Num != 1202 || rs[2].Err != nil || rs[3].Err == nil {
		t.Errorf("RemoveMany: %+v", rs)
	}
	if _, err := s.InsertMany(ctx, "1bad", nil, nil); !errors.Is(err, core.ErrIllegalName) {
		t.Errorf("bad collection: %v", err)
	}
}

func TestIsNodeTag(t *testing.T) {
	for tag, want := range map[string]bool{"A": true, "B7": true, "ABCDEFGH": true, "ABCDEFGHI": false, "": false, "a": false, "lq3x9abc": false, "A-B": false} {
		if revision.IsNodeTag(tag) != want {
			t.Errorf("IsNodeTag(%q) != %v", tag, want)
		}
	}
	if revision.NewClock("").HasNodeTag() {
		t.Error("the local stand-in passes as a node tag")
	}
}
