package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core"
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

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("stored document is not JSON: %v: %s", err, b)
	}
	return m
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
	if _, node, err := core.DecodeRev(rev1); err != nil || node != "C" {
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

func TestPutIDs(t *testing.T) {
	tests := []struct {
		name, collection, doc, wantID string
		wantNum                       int
	}{
		{"hilo", "orders", `{}`, "orders/1-A", 0},
		{"hilo prefix lower-cased", "Orders", `{}`, "orders/1-A", 0},
		{"hilo prefix kept", "LineItems", `{}`, "LineItems/1-A", 0},
		{"key", "users", `{"_key":"alice"}`, "users/alice", 0},
		{"id", "products", `{"_id":"products/ravendb"}`, "products/ravendb", 0},
		{"illegal key", "users", `{"_key":"a b"}`, "", 1221},
		{"key with slash", "users", `{"_key":"a/b"}`, "", 1221},
		{"empty key", "users", `{"_key":""}`, "", 1221},
		{"id outside collection", "users", `{"_id":"orders/1"}`, "", 1221},
		{"key not a string", "users", `{"_key":5}`, "", 1221},
		{"not an object", "users", `[1,2]`, "", 600},
		{"malformed", "users", `{"a":`, "", 600},
		{"bad collection", "9users", `{}`, "", 1208},
		{"bad metadata", "users", `{"@metadata":3}`, "", 600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openStore(t)
			out, err := s.Put(context.Background(), tt.collection, []byte(tt.doc))
			if tt.wantNum != 0 {
				var e *core.Error
				if !errors.As(err, &e) || e.Num != tt.wantNum || e.Message == "" {
					t.Fatalf("got %v, want error %d", err, tt.wantNum)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id := decode(t, out)["_id"]; id != tt.wantID {
				t.Errorf("_id %v, want %s", id, tt.wantID)
			}
		})
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

func TestSaveLoad(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	for range 3 {
		if _, err := s.Put(ctx, "orders", []byte(`{"x":1}`)); err != nil {
			t.Fatal(err)
		}
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
}

func TestAsError(t *testing.T) {
	e := core.AsError(fmt.Errorf("wrapped: %w", core.ErrConflict))
	if e.Num != 1200 || e.Code != "conflict" || !strings.Contains(e.Message, "wrapped") {
		t.Errorf("got %+v", e)
	}
	if e := core.AsError(errors.New("boom")); e.Num != core.NumInternal {
		t.Errorf("got %+v", e)
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
