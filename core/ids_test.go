package core_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/keygen"
	"github.com/hilodb/hilodb/core/uuid"
	"github.com/hilodb/hilodb/idgen"
)

func TestParseID(t *testing.T) {
	tests := []struct {
		id, prefix, key string
		ok              bool
	}{
		{"orders/1-A", "orders", "1-A", true},
		{"orders/1/lines/2", "orders/1/lines", "2", true},
		{"bc151542-8fa7-45ac-bc04-509b343a8720", "", "bc151542-8fa7-45ac-bc04-509b343a8720", true},
		{"companies/0000000000000000027-A", "companies", "0000000000000000027-A", true},
		{"", "", "", false},
		{"orders/", "", "", false},
		{"/1", "", "", false},
		{"a//b", "", "", false},
		{"a b/c", "", "", false},
		{"a/b c", "", "", false},
		{"a|b", "", "", false},
		{strings.Repeat("p", 600) + "/k", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			p, k, err := core.ParseID(tt.id, "/")
			if (err == nil) != tt.ok || p != tt.prefix || k != tt.key {
				t.Fatalf("ParseID(%q) = %q, %q, %v", tt.id, p, k, err)
			}
			if err != nil {
				wantErr(t, err, 1221, core.ErrIllegalKey)
			}
		})
	}
}

func FuzzParseID(f *testing.F) {
	for _, s := range []string{"orders/1-A", "a/b/c", "x", "", "/", "a//b", "companies|", "ü/x"} {
		f.Add(s, "/")
	}
	f.Add("a::b", "::")
	f.Fuzz(func(t *testing.T, id, sep string) {
		if sep == "" {
			return
		}
		prefix, key, err := core.ParseID(id, sep)
		if err != nil {
			return
		}
		if core.ValidateKey(key) != nil {
			t.Fatalf("ParseID(%q) accepted the illegal key %q", id, key)
		}
		joined := key
		if prefix != "" {
			joined = prefix + sep + key
		}
		if joined != id {
			t.Fatalf("ParseID(%q, %q) = %q, %q: does not join back", id, sep, prefix, key)
		}
	})
}

func FuzzCollectionName(f *testing.F) {
	for _, s := range []string{"orders", "1x", "", "a-b_c", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := core.ValidateCollectionName(name)
		ok := len(name) >= 1 && len(name) <= 256
		for i := 0; i < len(name) && ok; i++ {
			c := name[i]
			letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
			ok = letter || i > 0 && (c >= '0' && c <= '9' || c == '_' || c == '-')
		}
		if (err == nil) != ok {
			t.Fatalf("ValidateCollectionName(%q) = %v, want ok=%v", name, err, ok)
		}
	})
}

func TestFormatNodeSeqID(t *testing.T) {
	if got := core.FormatNodeSeqID("companies/", 27, "A"); got != "companies/0000000000000000027-A" {
		t.Errorf("got %q", got)
	}
	if got := core.FormatNodeSeqID("x/", 1<<63, "B"); got != "x/9223372036854775808-B" {
		t.Errorf("wide: %q", got)
	}
}

// TestMillionIDsNoDuplicate makes 1,000,000 ids across every strategy —
// HiLo on several clients sharing one range source, traditional,
// autoincrement and padded keys from leased numbers, node sequences of two
// nodes, identities, UUIDs, and semantic ids through the store — and finds
// no two alike.
func TestMillionIDsNoDuplicate(t *testing.T) {
	const total = 1_000_000
	ctx := context.Background()
	seen := make(map[string]struct{}, total)
	var mu sync.Mutex
	add := func(ids []string) {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			if _, dup := seen[id]; dup {
				t.Fatalf("duplicate id %q", id)
			}
			seen[id] = struct{}{}
		}
	}
	src := newMemRanges(1000)
	// 1. HiLo: 4 clients × 4 goroutines, 400,000 ids.
	var wg sync.WaitGroup
	for c := range 4 {
		gen := idgen.NewGenerator(src)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ids := make([]string, 0, 25_000)
				for range 25_000 {
					id, err := gen.NextID(ctx, "orders")
					if err != nil {
						t.Error(err)
						return
					}
					ids = append(ids, id)
				}
				add(ids)
			}()
		}
		_ = c
	}
	wg.Wait()
	// 2. Key generators over leased numbers: 3 clients, 300,000 ids. All
	// three generators of one collection share the collection's counter, so
	// their keys never meet either.
	for c := range 3 {
		gen := idgen.NewGenerator(src)
		ids := make([]string, 0, 100_000)
		for i := range 100_000 {
			n, _, err := gen.NextNumber(ctx, "things")
			if err != nil {
				t.Fatal(err)
			}
			switch (c + i) % 3 {
			case 0:
				ids = append(ids, fmt.Sprintf("things/%d", n))
			case 1:
				v, _ := keygen.AutoincrementKey(n, 0, 1)
				ids = append(ids, fmt.Sprintf("things/%d", v))
			case 2:
				ids = append(ids, "things/"+keygen.PaddedKey(uint64(n)))
			}
		}
		add(ids)
	}
	// 3. Node sequences of two nodes that use the same numbers: 100,000.
	ids := make([]string, 0, 100_000)
	for n := uint64(1); n <= 50_000; n++ {
		ids = append(ids, core.FormatNodeSeqID("companies/", n, "B"), core.FormatNodeSeqID("companies/", n, "C"))
	}
	add(ids)
	// 4. Identities: 100,000.
	idents := newMemIdentities()
	names := make([]string, 100_000)
	for i := range names {
		names[i] = "companies"
	}
	vals, _ := idents.NextIdentities(ctx, names)
	ids = ids[:0]
	for _, v := range vals {
		ids = append(ids, fmt.Sprintf("companies/%d", v))
	}
	add(ids)
	// 5. UUIDs: 99,000.
	ids = ids[:0]
	for range 99_000 {
		ids = append(ids, uuid.New())
	}
	add(ids)
	// 6. Through the store, every strategy, 1,000 documents.
	s := newTestStore(t)
	var docs [][]byte
	for i := range 1000 {
		switch i % 5 {
		case 0:
			docs = append(docs, []byte(`{}`))
		case 1:
			docs = append(docs, []byte(`{"_id":""}`))
		case 2:
			docs = append(docs, []byte(`{"_id":"firms/"}`))
		case 3:
			docs = append(docs, []byte(`{"_id":"firms|"}`))
		case 4:
			docs = append(docs, []byte(fmt.Sprintf(`{"_id":"semantic/%d"}`, i)))
		}
	}
	rs, err := s.InsertMany(ctx, "firms", docs, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids = ids[:0]
	for _, r := range rs {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		ids = append(ids, r.ID)
	}
	add(ids)
	if len(seen) != total {
		t.Fatalf("%d ids, want %d", len(seen), total)
	}
}
