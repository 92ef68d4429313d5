package core

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// preparedIDs is an IDSource that records what it is asked to prepare.
type preparedIDs struct {
	tag  string
	want int
}

func (p *preparedIDs) NextID(ctx context.Context, tag string) (string, error) {
	return "", fmt.Errorf("no ids here")
}

func (p *preparedIDs) Prepare(tag string, want int) { p.tag, p.want = tag, want }

// TestPrepareIDsGuess: the count a bulk write prepares for is the exact
// count of a short array and close to it for a long one of alike
// documents, at most the limit, and nothing for documents that bring
// their own keys or ids.
func TestPrepareIDsGuess(t *testing.T) {
	array := func(n int, doc func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = doc(i)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	plain := func(i int) string { return fmt.Sprintf(`{"name":"customer %05d","k":"%05d"}`, i, i) }
	for _, tc := range []struct {
		name      string
		text      string
		max       int
		low, high int // the guess's bounds; 0, 0: no preparation
	}{
		{"three documents", array(3, plain), 0, 3, 3},
		{"eight documents", " [ " + array(8, plain)[1:], 0, 8, 8},
		{"10,000 alike documents", array(10000, plain), 0, 9500, 10500},
		{"capped at the limit", array(10000, plain), 5000, 5000, 5000},
		{"a first document with its own key", `[{"_key":"a"},{"n":1}]`, 0, 0, 0},
		{"a first document with its own id", `[{"_id":"orders/x"},{"n":1}]`, 0, 0, 0},
		{"a first document with a null id", `[{"_id":null},{"n":1}]`, 0, 2, 2},
		{"not objects", `[1,2,3]`, 0, 0, 0},
		{"empty", `[]`, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids := &preparedIDs{}
			s, err := Open(":memory:", Options{Node: "C", IDs: ids})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			g, err := s.collectionGen("orders")
			if err != nil {
				t.Fatal(err)
			}
			s.scanArray("orders", g, []byte(tc.text), tc.max, nil) // its errors are not this test's
			if ids.want < tc.low || ids.want > tc.high || tc.high > 0 && ids.tag != "orders" {
				t.Errorf("prepared %d ids of %q, want %d-%d of orders", ids.want, ids.tag, tc.low, tc.high)
			}
		})
	}
}
