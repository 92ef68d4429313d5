package keygen_test

import (
	"context"
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core/keygen"
)

func ptr[T any](v T) *T { return &v }

func TestValidate(t *testing.T) {
	f := ptr[float64]
	tests := []struct {
		name string
		opts keygen.Options
		msg  string // "" for valid
	}{
		{"default", keygen.Options{}, ""},
		{"hilo", keygen.Options{Type: "hilo"}, ""},
		{"autoincrement defaults", keygen.Options{Type: "autoincrement"}, ""},
		{"autoincrement max increment", keygen.Options{Type: "autoincrement", Increment: f(65535), Offset: f(0)}, ""},
		{"increment zero", keygen.Options{Type: "autoincrement", Increment: f(0)}, "increment value must be greater than zero"},
		{"increment NaN", keygen.Options{Type: "autoincrement", Increment: f(math.NaN())}, "increment value must be greater than zero"},
		{"increment 65536", keygen.Options{Type: "autoincrement", Increment: f(65536)}, "increment value must be greater than zero and smaller than 65536"},
		{"offset NaN", keygen.Options{Type: "autoincrement", Offset: f(math.NaN())}, "offset value must be zero or greater"},
		{"offset too high", keygen.Options{Type: "autoincrement", Offset: f(math.MaxUint64)}, "offset value is too high"},
		{"unknown type", keygen.Options{Type: "snowflake"}, `invalid key generator type "snowflake"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				return
			}
			var e *keygen.Error
			if !errors.As(err, &e) || !errors.Is(err, keygen.ErrInvalid) || e.Message != err.Error() {
				t.Fatalf("got %v (%T), want a *keygen.Error of kind ErrInvalid", err, err)
			}
			if !strings.HasPrefix(e.Message, tt.msg) {
				t.Errorf("message %q, want %q", e.Message, tt.msg)
			}
		})
	}
}

// numbers hands out 1, 2, 3, … and says it is server "A".
type numbers struct{ n int64 }

func (s *numbers) NextNumber(ctx context.Context, tag string) (int64, string, error) {
	s.n++
	return s.n, "A", nil
}

func TestNextKey(t *testing.T) {
	f := ptr[float64]
	tests := []struct {
		name string
		opts keygen.Options
		want []string
	}{
		{"traditional", keygen.Options{Type: "traditional"}, []string{"1", "2", "3"}},
		{"autoincrement offset 100 increment 10", keygen.Options{Type: "autoincrement", Offset: f(100), Increment: f(10)}, []string{"100", "110", "120"}},
		{"padded", keygen.Options{Type: "padded"}, []string{"0000000000000001", "0000000000000002", "0000000000000003"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := tt.opts.Compile()
			if err != nil {
				t.Fatal(err)
			}
			src := &numbers{}
			for _, want := range tt.want {
				got, err := g.NextKey(context.Background(), src, "things")
				if err != nil || got != want {
					t.Fatalf("NextKey = %q, %v; want %q", got, err, want)
				}
			}
		})
	}
	g, _ := keygen.Options{Type: "traditional"}.Compile()
	if _, err := g.NextKey(context.Background(), nil, "things"); !errors.Is(err, keygen.ErrNoNumbers) {
		t.Errorf("without numbers: %v, want ErrNoNumbers", err)
	}
	g, _ = keygen.Options{Type: "autoincrement", Offset: f(math.MaxUint64 - 1e6), Increment: f(65535)}.Compile()
	src := &numbers{n: math.MaxInt64 - 1}
	if _, err := g.NextKey(context.Background(), src, "things"); !errors.Is(err, keygen.ErrOutOfKeys) {
		t.Errorf("past 64 bits: %v, want ErrOutOfKeys", err)
	}
}

func TestPaddedOrder(t *testing.T) {
	nums := []uint64{0, 1, 9, 10, 15, 16, 255, 256, 1 << 32, 1<<53 - 1, math.MaxUint64}
	var keys []string
	for _, n := range nums {
		k := keygen.PaddedKey(n)
		if len(k) != 16 || strings.ToLower(k) != k {
			t.Fatalf("PaddedKey(%d) = %q", n, k)
		}
		if v, _ := strconv.ParseUint(k, 16, 64); v != n {
			t.Fatalf("PaddedKey(%d) = %q decodes to %d", n, k, v)
		}
		keys = append(keys, k)
	}
	if !sort.StringsAreSorted(keys) {
		t.Errorf("string order differs from number order: %v", keys)
	}
}

func TestAutoincrementMapping(t *testing.T) {
	if v, ok := keygen.AutoincrementKey(1, 0, 1); !ok || v != 1 {
		t.Errorf("first key %d", v)
	}
	if v, ok := keygen.AutoincrementKey(1, 7, 3); !ok || v != 7 {
		t.Errorf("first key with offset %d", v)
	}
	if _, ok := keygen.AutoincrementKey(math.MaxInt64, math.MaxUint64-5, 65535); ok {
		t.Error("overflow not detected")
	}
	if _, ok := keygen.AutoincrementKey(0, 0, 1); ok {
		t.Error("number 0 accepted")
	}
	// One-to-one: numbers leased to different clients give different keys.
	seen := map[uint64]int64{}
	for n := int64(1); n < 5000; n++ {
		v, _ := keygen.AutoincrementKey(n, 3, 7)
		if m, dup := seen[v]; dup {
			t.Fatalf("numbers %d and %d both give %d", m, n, v)
		}
		if (v-3)%7 != 0 {
			t.Fatalf("%d is not offset + k·increment", v)
		}
		seen[v] = n
	}
}
