package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/keygen"
	"github.com/hilodb/hilodb/core/revision"
	"github.com/tidwall/gjson"
)

// seqIDs hands out prefix/N-A ids from a counter.
type seqIDs struct{ n int }

func (s *seqIDs) NextID(ctx context.Context, tag string) (string, error) {
	s.n++
	return fmt.Sprintf("%s/%d-A", tag, s.n), nil
}

func openStore(t *testing.T) *core.Store {
	t.Helper()
	s, err := core.Open(":memory:", core.Options{Node: "C", IDs: &seqIDs{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestPutGetDelete(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	out, err := s.Put(ctx, "orders", []byte(`{"total":12}`))
	if err != nil {
		t.Fatal(err)
	}
	doc := decode(t, out)
	if doc["_id"] != "orders/1-A" || doc["_key"] != "1-A" || doc["total"] != 12.0 {
		t.Errorf("got %s", out)
	}
	if meta, _ := doc["@metadata"].(map[string]any); meta["@collection"] != "orders" {
		t.Errorf("@metadata: got %v", doc["@metadata"])
	}
	rev1, _ := doc["_rev"].(string)
	if _, node, err := revision.Decode(rev1); err != nil || node != "C" {
		t.Errorf("_rev %q: %v node %q", rev1, err, node)
	}
	got, err := s.Get("orders/1-A")
	if err != nil || !bytes.Equal(got, out) {
		t.Fatalf("Get: %s, %v", got, err)
	}
	// A second write of the same document gets a new _rev.
	out2, err := s.Put(ctx, "orders", got)
	if err != nil {
		t.Fatal(err)
	}
	if rev2 := decode(t, out2)["_rev"]; rev2 == rev1 {
		t.Errorf("_rev did not change: %v", rev2)
	}
	if err := s.Delete("orders/1-A"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("orders/1-A"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("after delete: %v, want ErrNotFound", err)
	}
	if err := s.Delete("orders/1-A"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
}

// TestIDStrategies has one row per id strategy of docs/ids.md (and the ways each can
// go wrong). want is a regexp the _id must match.
func TestIDStrategies(t *testing.T) {
	uuidRe := `[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`
	tests := []struct {
		name, collection, doc, want string
		wantNum                     int
		node                        string // store node tag; "" → "C"
	}{
		{"no id: HiLo", "orders", `{}`, `^orders/1-A$`, 0, ""},
		{"null id: HiLo", "orders", `{"_id":null}`, `^orders/1-A$`, 0, ""},
		{"HiLo prefix lower-cased", "Orders", `{}`, `^orders/1-A$`, 0, ""},
		{"HiLo prefix kept", "LineItems", `{}`, `^LineItems/1-A$`, 0, ""},
		{"empty id: UUID", "orders", `{"_id":""}`, `^` + uuidRe + `$`, 0, ""},
		{"semantic id", "products", `{"_id":"products/ravendb"}`, `^products/ravendb$`, 0, ""},
		{"semantic id with other prefix", "users", `{"_id":"people/ann"}`, `^people/ann$`, 0, ""},
		{"semantic id with nested prefix", "lines", `{"_id":"orders/1/lines/2"}`, `^orders/1/lines/2$`, 0, ""},
		{"key", "users", `{"_key":"alice"}`, `^users/alice$`, 0, ""},
		{"ends in separator: node sequence", "companies", `{"_id":"companies/"}`, `^companies/0000000000000000001-C$`, 0, ""},
		{"ends in separator: node tag of server", "companies", `{"_id":"companies/"}`, `^companies/0000000000000000001-B7$`, 0, "B7"},
		{"ends in separator without node tag: time-ordered UUID", "companies", `{"_id":"companies/"}`, `^companies/[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, 0, "-"},
		{"ends in pipe: identity", "companies", `{"_id":"companies|"}`, `^companies/1$`, 0, ""},
		{"illegal key", "users", `{"_key":"a b"}`, "", 1221, ""},
		{"key with slash", "users", `{"_key":"a/b"}`, "", 1221, ""},
		{"empty key", "users", `{"_key":""}`, "", 1221, ""},
		{"key not a string", "users", `{"_key":5}`, "", 1221, ""},
		{"id not a string", "users", `{"_id":5}`, "", 1221, ""},
		{"id with empty segment", "users", `{"_id":"a//b"}`, "", 1221, ""},
		{"id with illegal byte", "users", `{"_id":"a/b c"}`, "", 1221, ""},
		{"pipe id with illegal prefix", "users", `{"_id":"a b|"}`, "", 1221, ""},
		{"not an object", "users", `[1,2]`, "", 600, ""},
		{"malformed", "users", `{"a":`, "", 600, ""},
		{"bad collection", "9users", `{}`, "", 1208, ""},
		{"bad metadata", "users", `{"@metadata":3}`, "", 600, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(t, func(o *core.Options) {
				switch tt.node {
				case "":
				case "-":
					o.Node = ""
				default:
					o.Node = tt.node
				}
			})
			out, err := s.Put(context.Background(), tt.collection, []byte(tt.doc))
			if tt.wantNum != 0 {
				var e *core.Error
				if !errors.As(err, &e) || e.Num != tt.wantNum || e.Message == "" {
					t.Fatalf("got %v, want error %d", err, tt.wantNum)
				}
				if _, err := s.Get("companies/0000000000000000001-C"); err == nil {
					t.Errorf("a failed put stored a document")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			doc := decode(t, out)
			id, _ := doc["_id"].(string)
			if !regexp.MustCompile(tt.want).MatchString(id) {
				t.Errorf("_id %q, want %s", id, tt.want)
			}
			if key := doc["_key"].(string); !strings.HasSuffix(id, key) || core.ValidateKey(key) != nil {
				t.Errorf("_key %q does not end %q or is illegal", key, id)
			}
			if meta := doc["@metadata"].(map[string]any); meta["@collection"] != tt.collection {
				t.Errorf("@collection %v, want %s", meta["@collection"], tt.collection)
			}
			if _, err := s.Get(id); err != nil {
				t.Errorf("Get(%q): %v", id, err)
			}
		})
	}
}

func TestNodeSequenceIncreasesPerNode(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	var prev string
	for i := 1; i <= 12; i++ {
		out, err := s.Put(ctx, "companies", []byte(`{"_id":"companies/"}`))
		if err != nil {
			t.Fatal(err)
		}
		id := decode(t, out)["_id"].(string)
		if want := fmt.Sprintf("companies/%019d-C", i); id != want {
			t.Fatalf("got %q, want %q", id, want)
		}
		if id <= prev {
			t.Fatalf("%q does not sort after %q", id, prev)
		}
		prev = id
	}
	// The node tag arrives later: ids carry the new tag, numbers go on.
	s.Clock().SetNode("D")
	out, _ := s.Put(ctx, "companies", []byte(`{"_id":"companies/"}`))
	if id := decode(t, out)["_id"]; id != "companies/0000000000000000013-D" {
		t.Errorf("after SetNode: %v", id)
	}
	// The sequence survives Save/Load and never moves backwards.
	var snap bytes.Buffer
	if err := s.Save(&snap); err != nil {
		t.Fatal(err)
	}
	old := snap.Bytes()
	for range 3 {
		s.Put(ctx, "companies", []byte(`{"_id":"companies/"}`))
	}
	if err := s.Load(bytes.NewReader(old)); err != nil {
		t.Fatal(err)
	}
	if got := s.NodeSequence(); got != 16 {
		t.Errorf("after loading an older snapshot: sequence %d, want 16", got)
	}
	s2 := newTestStore(t)
	if err := s2.Load(bytes.NewReader(old)); err != nil {
		t.Fatal(err)
	}
	if got := s2.NodeSequence(); got != 13 {
		t.Errorf("fresh store after Load: %d, want 13", got)
	}
}

func TestNodeSequenceWithoutServerTag(t *testing.T) {
	s := newTestStore(t, func(o *core.Options) { o.Node = "" })
	var ids []string
	for range 3 {
		out, err := s.Put(context.Background(), "companies", []byte(`{"_id":"companies/"}`))
		if err != nil {
			t.Fatalf("put companies/ without a node tag: %v", err)
		}
		ids = append(ids, gjson.GetBytes(out, "_id").String())
	}
	for i, id := range ids {
		if i > 0 && id <= ids[i-1] {
			t.Errorf("id %q made after %q: want ascending", id, ids[i-1])
		}
	}
	page, err := s.List("companies", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Docs) != 3 {
		t.Errorf("List(companies) = %d documents, want the 3 stored", len(page.Docs))
	}
	if s.NodeSequence() != 0 {
		t.Errorf("node sequence = %d, want 0: no sequence number was used", s.NodeSequence())
	}
}

func TestIdentities(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		out, err := s.Put(ctx, "companies", []byte(`{"_id":"companies|"}`))
		if err != nil {
			t.Fatal(err)
		}
		if id := decode(t, out)["_id"]; id != fmt.Sprintf("companies/%d", i) {
			t.Errorf("got %v, want companies/%d", id, i)
		}
	}
	// nextIdentityFor counts on the same identity.
	if v, err := s.NextIdentityFor(ctx, "companies"); err != nil || v != 4 {
		t.Errorf("NextIdentityFor: %d %v, want 4", v, err)
	}
	if v, _ := s.NextIdentityFor(ctx, "companies|"); v != 5 {
		t.Errorf("NextIdentityFor(companies|): %d, want 5", v)
	}
	tests := []struct {
		name        string
		seed        int64
		force       bool
		want, next  int64
		wantNextDoc string
	}{
		{"raise", 1994, false, 1994, 1995, "companies/1996"},
		{"lower without force keeps the higher value", 10, false, 1996, 1997, "companies/1998"},
		{"lower with force sets it exactly", 10, true, 10, 11, "companies/12"},
		{"equal", 12, false, 12, 13, "companies/14"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := s.SeedIdentityFor(ctx, "companies", tt.seed, tt.force)
			if err != nil || v != tt.want {
				t.Fatalf("SeedIdentityFor(%d, %v) = %d, %v; want %d", tt.seed, tt.force, v, err, tt.want)
			}
			if n, _ := s.NextIdentityFor(ctx, "companies"); n != tt.next {
				t.Errorf("next: %d, want %d", n, tt.next)
			}
			out, err := s.Put(ctx, "companies", []byte(`{"_id":"companies|"}`))
			if err != nil {
				t.Fatal(err)
			}
			if id := decode(t, out)["_id"]; id != tt.wantNextDoc {
				t.Errorf("next document: %v, want %s", id, tt.wantNextDoc)
			}
		})
	}
	if _, err := s.SeedIdentityFor(ctx, "companies", -1, false); !errors.Is(err, core.ErrBadParameter) {
		t.Errorf("negative seed: %v", err)
	}
	if _, err := s.NextIdentityFor(ctx, ""); !errors.Is(err, core.ErrBadParameter) {
		t.Errorf("empty name: %v", err)
	}
}

func TestIdentitiesOffline(t *testing.T) {
	s := newTestStore(t)
	s.Idents.Offline = true
	ctx := context.Background()
	_, err := s.Put(ctx, "companies", []byte(`{"_id":"companies|"}`))
	e := wantErr(t, err, core.NumNeedsServer, core.ErrNeedsServer)
	if e.Code != "needs_server" || !strings.Contains(e.Message, "sync server") {
		t.Errorf("unclear message %q", e.Message)
	}
	if !errors.Is(err, errOffline) {
		t.Errorf("the cause is lost: %v", err)
	}
	// A batch with one "|" id saves nothing of the batch.
	_, err = s.InsertMany(ctx, "companies", [][]byte{[]byte(`{"_key":"a"}`), []byte(`{"_id":"companies|"}`), []byte(`{"_key":"b"}`)}, nil)
	wantErr(t, err, core.NumNeedsServer, core.ErrNeedsServer)
	for _, id := range []string{"companies/a", "companies/b", "companies/1"} {
		if _, err := s.Get(id); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("%s was saved: %v", id, err)
		}
	}
	for _, f := range []func() (int64, error){
		func() (int64, error) { return s.NextIdentityFor(ctx, "companies") },
		func() (int64, error) { return s.SeedIdentityFor(ctx, "companies", 5, false) },
	} {
		if _, err := f(); !errors.Is(err, core.ErrNeedsServer) {
			t.Errorf("offline: %v, want ErrNeedsServer", err)
		}
	}
	// No identity source at all.
	s2 := newTestStore(t, func(o *core.Options) { o.Identities = nil })
	_, err = s2.Put(ctx, "companies", []byte(`{"_id":"companies|"}`))
	wantErr(t, err, core.NumNeedsServer, core.ErrNeedsServer)
	if _, err := s2.NextIdentityFor(ctx, "x"); !errors.Is(err, core.ErrNeedsServer) {
		t.Errorf("no source: %v", err)
	}
}

func TestIdentitiesBatchOneCall(t *testing.T) {
	s := newTestStore(t)
	docs := [][]byte{[]byte(`{"_id":"companies|"}`), []byte(`{"_id":"users|"}`), []byte(`{"_id":"companies|"}`), []byte(`{"_key":"x"}`)}
	rs, err := s.InsertMany(context.Background(), "companies", docs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	if got := strings.Join(ids, " "); got != "companies/1 users/1 companies/2 companies/x" {
		t.Errorf("got %s", got)
	}
	if s.Idents.Calls != 1 {
		t.Errorf("identity calls: %d, want 1 for the batch", s.Idents.Calls)
	}
}

func TestPutWithoutIDSource(t *testing.T) {
	s, _ := core.Open(":memory:", core.Options{})
	defer s.Close()
	_, err := s.Put(context.Background(), "orders", []byte(`{}`))
	if !errors.Is(err, core.ErrNeedsServer) {
		t.Errorf("got %v, want ErrNeedsServer", err)
	}
}

func TestPutMovesCollectionRefused(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	if _, err := s.Put(ctx, "orders", []byte(`{"_id":"orders/x"}`)); err != nil {
		t.Fatal(err)
	}
	_, err := s.Put(ctx, "users", []byte(`{"_id":"orders/x"}`))
	wantErr(t, err, core.NumUniqueConstraint, core.ErrUniqueConstraint)
}

func TestSaveLoad(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	for range 3 {
		if _, err := s.Put(ctx, "orders", []byte(`{"x":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateCollection("users", core.CollectionOptions{KeyOptions: keygen.Options{Type: "padded"}}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.Save(&buf); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t)
	if err := s2.Load(&buf); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if _, err := s2.Get(fmt.Sprintf("orders/%d-A", i)); err != nil {
			t.Errorf("after Load: %v", err)
		}
	}
	if o, ok := s2.CollectionInfo("users"); !ok || o.KeyOptions.Type != "padded" {
		t.Errorf("collection options after Load: %+v %v", o, ok)
	}
}

func TestAsError(t *testing.T) {
	e := core.AsError(fmt.Errorf("wrapped: %w", core.ErrConflict))
	if e.Num != 1200 || e.Code != "conflict" || !strings.Contains(e.Message, "wrapped") {
		t.Errorf("got %+v", e)
	}
	if e := core.AsError(errors.New("boom")); e.Num != core.NumInternal {
		t.Errorf("got %+v", e)
	}
	if core.AsError(nil) != nil {
		t.Error("AsError(nil) != nil")
	}
}

// TestErrorNumbers checks every number, code and HTTP status of the error table (core/errors.go).
func TestErrorNumbers(t *testing.T) {
	tests := []struct {
		err    error
		num    int
		code   string
		status int
	}{
		{core.ErrBadJSON, 600, "bad_json", 400},
		{core.ErrConflict, 1200, "conflict", 412},
		{core.ErrNotFound, 1202, "not_found", 404},
		{core.ErrCollectionNotFound, 1203, "collection_not_found", 404},
		{core.ErrDuplicateName, 1207, "duplicate_name", 409},
		{core.ErrIllegalName, 1208, "illegal_name", 400},
		{core.ErrUniqueConstraint, 1210, "unique_constraint", 409},
		{core.ErrIllegalKey, 1221, "illegal_key", 400},
		{core.ErrUnexpectedKey, 1222, "unexpected_key", 400},
		{core.ErrOutOfKeys, 1225, "out_of_keys", 500},
		{core.ErrInvalidKeyGenerator, 1232, "invalid_key_generator", 400},
		{core.ErrNeedsServer, 1900, "needs_server", 503},
		{core.ErrBadParameter, 10, "bad_parameter", 400},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			e := core.AsError(fmt.Errorf("op: %w", tt.err))
			if e.Num != tt.num || e.Code != tt.code || e.HTTPStatus() != tt.status || !errors.Is(e, tt.err) {
				t.Errorf("got %d %s %d, want %d %s %d", e.Num, e.Code, e.HTTPStatus(), tt.num, tt.code, tt.status)
			}
		})
	}
}

func ExampleStore_Put() {
	s, _ := core.Open(":memory:", core.Options{IDs: &seqIDs{}})
	defer s.Close()
	out, _ := s.Put(context.Background(), "users", []byte(`{"_key":"alice","age":30}`))
	var doc struct {
		ID  string `json:"_id"`
		Key string `json:"_key"`
	}
	json.Unmarshal(out, &doc)
	fmt.Println(doc.ID, doc.Key)
	// Output: users/alice alice
}

// TestPutRevIsAPrecondition: a _rev in a put is checked against the stored
// document, so a stale or made-up one cannot overwrite a newer version.
func TestPutRevIsAPrecondition(t *testing.T) {
	st, err := core.Open(":memory:", core.Options{Node: "T"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	v1, err := st.Put(ctx, "orders", []byte(`{"_key":"a","n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	rev1 := gjson.GetBytes(v1, "_rev").String()
	v2, err := st.Put(ctx, "orders", []byte(`{"_key":"a","n":2,"_rev":"`+rev1+`"}`))
	if err != nil {
		t.Fatalf("put with the current _rev: %v", err)
	}
	for _, rev := range []string{rev1, "_made-up---"} {
		_, err := st.Put(ctx, "orders", []byte(`{"_key":"a","n":3,"_rev":"`+rev+`"}`))
		var e *core.Error
		if !errors.As(err, &e) || e.Num != 1200 {
			t.Errorf("put with _rev %q over %s: %v, want conflict 1200", rev, gjson.GetBytes(v2, "_rev"), err)
		}
	}
	if doc, _ := st.Get("orders/a"); gjson.GetBytes(doc, "n").Int() != 2 {
		t.Errorf("stored %s, want n 2", doc)
	}
	if _, err := st.Put(ctx, "orders", []byte(`{"_key":"a","n":4}`)); err != nil {
		t.Errorf("put without _rev: %v", err)
	}
}
