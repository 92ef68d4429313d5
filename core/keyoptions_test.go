package core_test

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/keygen"
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
