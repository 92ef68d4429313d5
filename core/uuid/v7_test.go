package uuid_test

import (
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/hilodb/hilodb/core/uuid"
)

var uuidv7Form = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNewUUIDv7(t *testing.T) {
	before := time.Now().UnixMilli()
	const n = 20000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid.NewV7()
	}
	after := time.Now().UnixMilli()
	seen := make(map[string]bool, n)
	for i, id := range ids {
		if !uuidv7Form.MatchString(id) {
			t.Fatalf("NewV7() = %q, want the version 7 form", id)
		}
		if seen[id] {
			t.Fatalf("NewV7() made %q twice", id)
		}
		seen[id] = true
		if i > 0 && id <= ids[i-1] {
			t.Fatalf("NewV7() made %q after %q: want ascending", id, ids[i-1])
		}
	}
	var ms int64
	for _, c := range ids[0][:8] + ids[0][9:13] {
		ms = ms<<4 | int64(hexValue(c))
	}
	// The counter may run a few milliseconds ahead of the clock.
	if ms < before || ms > after+n/4096+1 {
		t.Errorf("time of %q = %d, want between %d and %d", ids[0], ms, before, after)
	}
}

func TestNewUUIDv7Concurrent(t *testing.T) {
	const workers, each = 8, 2000
	var mu sync.Mutex
	seen := make(map[string]bool, workers*each)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := ""
			for range each {
				id := uuid.NewV7()
				if id <= last {
					t.Errorf("NewV7() made %q after %q in one goroutine: want ascending", id, last)
				}
				last = id
				mu.Lock()
				if seen[id] {
					t.Errorf("NewV7() made %q twice", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func hexValue(c rune) int {
	if c >= 'a' {
		return int(c-'a') + 10
	}
	return int(c - '0')
}
