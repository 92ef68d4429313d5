package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/keygen"
	"github.com/hilodb/hilodb/core/revision"
	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/internal/storetest"
)

func TestKeyOptionsValidation(t *testing.T) {
	f := core.Ptr[float64]
	tests := []struct {
		name string
		opts keygen.Options
		msg  string // "" for valid
	}{
		{"default", keygen.Options{}, ""},
		{"hilo", keygen.Options{Type: "hilo"}, ""},
		{"traditional", keygen.Options{Type: "traditional"}, ""},
		{"padded", keygen.Options{Type: "padded"}, ""},
		{"uuid", keygen.Options{Type: "uuid"}, ""},
		{"autoincrement defaults", keygen.Options{Type: "autoincrement"}, ""},
		{"autoincrement max increment", keygen.Options{Type: "autoincrement", Increment: f(65535), Offset: f(0)}, ""},
		{"increment zero", keygen.Options{Type: "autoincrement", Increment: f(0)}, "increment value must be greater than zero"},
		{"increment negative", keygen.Options{Type: "autoincrement", Increment: f(-3)}, "increment value must be greater than zero"},
		{"increment 65536", keygen.Options{Type: "autoincrement", Increment: f(65536)}, "increment value must be greater than zero and smaller than 65536"},
		{"increment below one", keygen.Options{Type: "autoincrement", Increment: f(0.5)}, "increment value must be greater than zero and smaller than 65536"},
		{"offset negative", keygen.Options{Type: "autoincrement", Offset: f(-1)}, "offset value must be zero or greater"},
		{"offset too high", keygen.Options{Type: "autoincrement", Offset: f(math.MaxUint64)}, "offset value is too high"},
		{"unknown type", keygen.Options{Type: "snowflake"}, "invalid key generator type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(t)
			err := s.CreateCollection("c", core.CollectionOptions{KeyOptions: tt.opts})
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				return
			}
			e := wantErr(t, err, 1232, core.ErrInvalidKeyGenerator)
			if !strings.HasPrefix(e.Message, tt.msg) {
				t.Errorf("message %q, want %q", e.Message, tt.msg)
			}
		})
	}
}

func TestKeyGenerators(t *testing.T) {
	f := core.Ptr[float64]
	uuidRe := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	tests := []struct {
		name  string
		opts  keygen.Options
		want  []string // first keys
		match *regexp.Regexp
	}{
		{"hilo", keygen.Options{}, []string{"1-A", "2-A", "3-A"}, nil},
		{"traditional", keygen.Options{Type: "traditional"}, []string{"1", "2", "3"}, nil},
		{"autoincrement", keygen.Options{Type: "autoincrement"}, []string{"1", "2", "3"}, nil},
		{"autoincrement increment 5", keygen.Options{Type: "autoincrement", Increment: f(5)}, []string{"5", "10", "15"}, nil},
		{"autoincrement offset 100 increment 10", keygen.Options{Type: "autoincrement", Offset: f(100), Increment: f(10)}, []string{"100", "110", "120"}, nil},
		{"padded", keygen.Options{Type: "padded"}, []string{"0000000000000001", "0000000000000002", "0000000000000003"}, nil},
		{"uuid", keygen.Options{Type: "uuid"}, nil, uuidRe},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(t)
			ctx := context.Background()
			if err := s.CreateCollection("things", core.CollectionOptions{KeyOptions: tt.opts}); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				r, err := s.Insert(ctx, "things", []byte(`{}`), nil)
				if err != nil {
					t.Fatal(err)
				}
				if tt.match != nil {
					if !tt.match.MatchString(r.Key) {
						t.Errorf("key %q", r.Key)
					}
				} else if r.Key != tt.want[i] {
					t.Errorf("key %d: %q, want %q", i, r.Key, tt.want[i])
				}
				if r.ID != "things/"+r.Key {
					t.Errorf("_id %q", r.ID)
				}
			}
		})
	}
}

func TestCreateCollectionErrors(t *testing.T) {
	s := newTestStore(t)
	if err := s.CreateCollection("things", core.CollectionOptions{}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.CreateCollection("things", core.CollectionOptions{}), 1207, core.ErrDuplicateName)
	wantErr(t, s.CreateCollection("1x", core.CollectionOptions{}), 1208, core.ErrIllegalName)
}

func TestAllowUserKeysFalse(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	if err := s.CreateCollection("locked", core.CollectionOptions{KeyOptions: keygen.Options{Type: "traditional", AllowUserKeys: core.Ptr(false)}}); err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{`{"_key":"mine"}`, `{"_id":"locked/mine"}`} {
		_, err := s.Insert(ctx, "locked", []byte(doc), nil)
		wantErr(t, err, 1222, core.ErrUnexpectedKey)
	}
	if r, err := s.Insert(ctx, "locked", []byte(`{}`), nil); err != nil || r.Key != "1" {
		t.Errorf("generated key: %+v %v", r, err)
	}
}

func TestKeyGeneratorOffline(t *testing.T) {
	// No number source: traditional keys need leased numbers.
	s, _ := core.Open(":memory:", core.Options{Node: "C"})
	defer s.Close()
	s.CreateCollection("t", core.CollectionOptions{KeyOptions: keygen.Options{Type: "traditional"}})
	_, err := s.Insert(context.Background(), "t", []byte(`{}`), nil)
	wantErr(t, err, core.NumNeedsServer, core.ErrNeedsServer)
	// uuid keys need nothing.
	s.CreateCollection("u", core.CollectionOptions{KeyOptions: keygen.Options{Type: "uuid"}})
	if _, err := s.Insert(context.Background(), "u", []byte(`{}`), nil); err != nil {
		t.Error(err)
	}
}

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

func TestRevOnEveryWrite(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	r1 := insert(t, s, "a", `{"v":1}`)
	r2, err := s.Replace(ctx, "users", "a", []byte(`{"v":2}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	r3, err := s.Update(ctx, "users", "a", []byte(`{"w":3}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	revs := []string{r1.Rev, r2.Rev, r3.Rev}
	for i, r := range revs {
		v, node, err := revision.Decode(r)
		if err != nil || node != "C" {
			t.Fatalf("rev %q: %v %q", r, err, node)
		}
		if i > 0 {
			pv, _, _ := revision.Decode(revs[i-1])
			if v <= pv {
				t.Errorf("rev %d not after the one before", i)
			}
		}
	}
	if r2.OldRev != r1.Rev || r3.OldRev != r2.Rev {
		t.Errorf("_oldRev: %q %q, want %q %q", r2.OldRev, r3.OldRev, r1.Rev, r2.Rev)
	}
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

func TestRevUniqueAcrossNodes(t *testing.T) {
	// Two nodes whose clocks read the same instant never make the same _rev.
	at := func() func() time.Time {
		fixed := time.UnixMilli(1_700_000_000_000)
		return func() time.Time { return fixed }
	}
	a, b := revision.NewClock("A"), revision.NewClock("B")
	a.SetNow(at())
	b.SetNow(at())
	seen := map[string]bool{}
	for range 1000 {
		for _, r := range []string{a.NextRev(), b.NextRev()} {
			if seen[r] {
				t.Fatalf("duplicate %q", r)
			}
			seen[r] = true
		}
	}
}

func TestClockStepsBack(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	c := revision.NewClock("A")
	c.SetNow(func() time.Time { return now })
	first := c.Tick()
	now = now.Add(-time.Hour) // the wall clock steps back
	second := c.Tick()
	if second <= first {
		t.Fatalf("%d after %d: not increasing when the wall clock steps back", second, first)
	}
	if first>>20 != uint64(1_700_000_000_000) {
		t.Errorf("clock value %d is not ms<<20", first)
	}
	now = now.Add(2 * time.Hour)
	if third := c.Tick(); third>>20 != uint64(now.UnixMilli()) || third&(1<<20-1) != 0 {
		t.Errorf("after the wall clock passes again: %d", third)
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

// TestInsertManyLeasesForTheBatch: a batch of generated ids asks its HiLo
// for one range that holds it, rather than one small range after another.
func TestInsertManyLeasesForTheBatch(t *testing.T) {
	src := &storetest.SizedRanges{Ranges: newMemRanges(32)}
	gen := idgen.NewGenerator(src)
	s, err := core.Open(":memory:", core.Options{Node: "C", IDs: gen})
	if err != nil {
		t.Fatal(err)
	}
	defer gen.Close(context.Background())
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Insert(ctx, "orders", []byte(`{"n":0}`), nil); err != nil {
		t.Fatal(err)
	}
	docs := make([][]byte, 5000)
	for i := range docs {
		docs[i] = []byte(fmt.Sprintf(`{"n":%d}`, i+1))
	}
	rs, err := s.InsertMany(ctx, "orders", docs, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, r := range rs {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		ids[r.ID] = true
	}
	if len(ids) != len(docs) {
		t.Fatalf("%d distinct ids for %d documents", len(ids), len(docs))
	}
	if src.Leases() != 2 {
		t.Errorf("%d leases for one insert and a batch of %d, want 2", src.Leases(), len(docs))
	}
}

// TestRevisionsOfABatch: a transaction reads the wall clock once; its
// revisions still order after each other and after every earlier one, and
// the next transaction reads the clock again.
func TestRevisionsOfABatch(t *testing.T) {
	s := newTestStore(t)
	var mu sync.Mutex
	reads := 0
	wall := time.UnixMilli(1_800_000_000_000)
	s.Clock().SetNow(func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		reads++
		return wall
	})
	ctx := context.Background()
	docs := make([][]byte, 1000)
	for i := range docs {
		docs[i] = []byte(fmt.Sprintf(`{"n":%d}`, i))
	}
	rs, err := s.InsertMany(ctx, "orders", docs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if reads != 1 {
		t.Errorf("the wall clock was read %d times for one batch, want once", reads)
	}
	var last uint64
	for i, r := range rs {
		v, _, err := revision.Decode(r.Rev)
		if err != nil {
			t.Fatal(err)
		}
		if v <= last {
			t.Fatalf("revision %d (%s) does not order after the one before", i, r.Rev)
		}
		last = v
	}
	if got := last >> 20; got != uint64(wall.UnixMilli()) {
		t.Errorf("the batch's revisions carry %d ms, want the wall clock %d", got, wall.UnixMilli())
	}
	mu.Lock()
	wall = wall.Add(time.Second)
	mu.Unlock()
	r, err := s.Insert(ctx, "orders", []byte(`{"n":-1}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	v, _, _ := revision.Decode(r.Rev)
	if v>>20 != uint64(wall.UnixMilli()) || v <= last {
		t.Errorf("the next transaction's revision %s: want the new wall clock, after the batch's", r.Rev)
	}
}
