package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/idgen"
)

// TestInsertArrayText holds InsertArray to the array's syntax: a text that
// is not a JSON array fails the call and writes nothing; an element that
// is not a valid JSON object gets its own error, and the others are
// stored.
func TestInsertArrayText(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		text string
		want []string // per element: the stored n, or "error"
		max  int
		err  error
	}{
		{`[]`, nil, 0, nil},
		{` [ ] `, nil, 0, nil},
		{`[{"n":"a"}]`, []string{"a"}, 0, nil},
		{"\n[\t{\"n\":\"a\"}\r,{ \"n\" : \"b\" } ]\n", []string{"a", "b"}, 0, nil},
		{`[{"n":"]}\"["},[1,[2]], "x,y" ,null,-1.5e3,true,{"n":"c"}]`, []string{`]}"[`, "error", "error", "error", "error", "error", "c"}, 0, nil},
		{`[{"n":tru},{"n":"b"}]`, []string{"error", "b"}, 0, nil},
		{`[{"n":"a",},{"n":"b"}]`, []string{"error", "b"}, 0, nil},
		{`[{"n":"a"}{"n":"b"}]`, nil, 0, core.ErrBadJSON},
		{`[{"n":"a"},{"n":"b"},{"n":"c"}]`, nil, 2, core.ErrBadParameter},
		{`[{"n":"a"},{"n":"b"}]`, []string{"a", "b"}, 2, nil},
		{``, nil, 0, core.ErrBadJSON},
		{`{}`, nil, 0, core.ErrBadJSON},
		{`[`, nil, 0, core.ErrBadJSON},
		{`[{}`, nil, 0, core.ErrBadJSON},
		{`[{},]`, nil, 0, core.ErrBadJSON},
		{`[,{}]`, nil, 0, core.ErrBadJSON},
		{`[{} {}]`, nil, 0, core.ErrBadJSON},
		{`[{}]x`, nil, 0, core.ErrBadJSON},
		{`[] []`, nil, 0, core.ErrBadJSON},
		{`[{"a":[1}]`, nil, 0, core.ErrBadJSON},
		{`[{"a":1]`, nil, 0, core.ErrBadJSON},
		{`[{"abc]`, nil, 0, core.ErrBadJSON},
		{`[}]`, nil, 0, core.ErrBadJSON},
		{`[1"a"]`, nil, 0, core.ErrBadJSON},
	} {
		s := newTestStore(t)
		rs, err := s.InsertArray(ctx, "orders", []byte(tc.text), tc.max, nil)
		if !errors.Is(err, tc.err) {
			t.Errorf("InsertArray(%q): error %v, want %v", tc.text, err, tc.err)
			continue
		}
		if n, _ := s.PendingCount(); err != nil && n != 0 {
			t.Errorf("InsertArray(%q) failed with %v but wrote %d documents", tc.text, err, n)
		}
		if err != nil {
			continue
		}
		var got []string
		for _, r := range rs {
			if r.Err != nil {
				got = append(got, "error")
				continue
			}
			doc, err := s.Get(r.ID)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, gjson.GetBytes(doc, "n").String())
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("InsertArray(%q) stored %q, want %q", tc.text, got, tc.want)
		}
	}
}

// FuzzInsertArray holds InsertArray to InsertMany of the elements
// encoding/json finds in a valid array: the same ids, keys, errors and
// documents. For any other text it fails, or stores only valid JSON
// objects.
func FuzzInsertArray(f *testing.F) {
	for _, s := range []string{`[]`, `[{"a":1},{"b":[2,"]"]}]`, `[{"_key":"k1"},{"_id":"orders/x"},{"_key":"bad key"}]`, `[{"_rev":"x"},{"_id":""}]`, `[{"a":1},]`, `[{]}]`, ` [ {"a" : 1} , {} ] `, `[{"a":tru}]`, `["\"",null,{}]`} {
		f.Add([]byte(s))
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, text []byte) {
		a := newTestStore(t)
		got, err := a.InsertArray(ctx, "orders", text, 0, nil)
		var elems []json.RawMessage
		if json.Valid(text) && bytes.TrimSpace(text)[0] == '[' && json.Unmarshal(text, &elems) == nil {
			if err != nil {
				t.Fatalf("InsertArray(%q): %v, but it is a valid array", text, err)
			}
			docs := make([][]byte, len(elems))
			for i, e := range elems {
				docs[i] = e
			}
			b := newTestStore(t)
			want, err := b.InsertMany(ctx, "orders", docs, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("InsertArray(%q): %d results, InsertMany %d", text, len(got), len(want))
			}
			for i := range got {
				g, w := got[i], want[i]
				sameID := g.ID == w.ID && g.Key == w.Key || uuidLike(g.ID) && uuidLike(w.ID) // a UUID is new each time
				if !sameID || (g.Err == nil) != (w.Err == nil) || g.Err != nil && g.Err.Error() != w.Err.Error() {
					t.Fatalf("InsertArray(%q) element %d: %+v, InsertMany %+v", text, i, g, w)
				}
			}
			return
		}
		if err != nil {
			return
		}
		for _, r := range got {
			if r.Err != nil {
				continue
			}
			doc, err := a.Get(r.ID)
			if err != nil || !json.Valid(doc) || doc[0] != '{' {
				t.Fatalf("InsertArray(%q) stored %q (%v) from an invalid array", text, doc, err)
			}
		}
	})
}

// uuidLike reports whether id has a UUID's form.
func uuidLike(id string) bool {
	return len(id) == 36 && id[8] == '-' && id[13] == '-' && id[18] == '-' && id[23] == '-'
}

// TestInsertArrayPreparesIDs: a bulk write whose first document is to get
// a HiLo id has its ids readied while it reads the documents, and the ids
// are what taking them one by one gives; one whose first document brings
// its own key leases nothing.
func TestInsertArrayPreparesIDs(t *testing.T) {
	ctx := context.Background()
	ranges := newMemRanges(32)
	gen := idgen.NewGenerator(ranges)
	s, err := core.Open(":memory:", core.Options{Node: "C", IDs: gen})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close(); gen.Close(ctx) }()

	keyed := `[{"_key":"a"},{"_key":"b"},{"_key":"c"}]`
	if _, err := s.InsertArray(ctx, "orders", []byte(keyed), 0, nil); err != nil {
		t.Fatal(err)
	}
	if leased := ranges.Leased("orders"); leased != 0 {
		t.Fatalf("documents with their own keys leased %d numbers", leased)
	}

	var b strings.Builder
	b.WriteByte('[')
	for i := range 1000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"n":` + strconv.Itoa(i) + `}`)
	}
	b.WriteByte(']')
	rs, err := s.InsertArray(ctx, "orders", []byte(b.String()), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if want := "orders/" + strconv.Itoa(i+1) + "-A"; r.Err != nil || r.ID != want {
			t.Fatalf("document %d: %s, %v; want %s", i, r.ID, r.Err, want)
		}
	}
}

// offlineRanges is a RangeSource that cannot reach the server.
type offlineRanges struct{}

func (offlineRanges) NextRange(ctx context.Context, tag string, last idgen.Range) (idgen.Range, error) {
	return idgen.Range{}, fmt.Errorf("dial sync server: %w", core.ErrNeedsServer)
}

// TestInsertArrayIDsOffline: with no range to be had, every document that
// is to get a HiLo id fails as it does in InsertMany, and the one that
// brings its own key is stored.
func TestInsertArrayIDsOffline(t *testing.T) {
	ctx := context.Background()
	text := `[{"n":1},{"_key":"k","n":2},{"n":3}]`
	var got [2][]core.Result
	for i := range got {
		gen := idgen.NewGenerator(offlineRanges{})
		s, err := core.Open(":memory:", core.Options{Node: "C", IDs: gen})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			got[i], err = s.InsertArray(ctx, "orders", []byte(text), 0, nil)
		} else {
			got[i], err = s.InsertMany(ctx, "orders", [][]byte{[]byte(`{"n":1}`), []byte(`{"_key":"k","n":2}`), []byte(`{"n":3}`)}, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		gen.Close(ctx)
	}
	for j := range got[0] {
		a, m := got[0][j], got[1][j]
		if (a.Err == nil) != (m.Err == nil) || a.ID != m.ID {
			t.Fatalf("document %d: InsertArray %+v, InsertMany %+v", j, a, m)
		}
		if a.Err != nil {
			wantErr(t, a.Err, core.NumNeedsServer, core.ErrNeedsServer)
		}
	}
	if got[0][1].ID != "orders/k" || got[0][0].Err == nil || got[0][2].Err == nil {
		t.Fatalf("results %+v: want the keyed document stored and the others refused", got[0])
	}
}
