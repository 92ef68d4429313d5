package hostrand_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/hilodb/hilodb/internal/hostrand"
)

// TestRead: reads of any length are filled, and no two reads of 32 bytes
// are alike (a chance of 2^-256 if the bytes are random), also across the
// 256-byte batches the wasm build fetches from the host.
func TestRead(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range []int{1, 7, 32, 255, 256, 257, 1000} {
		b := make([]byte, n)
		hostrand.Read(b)
		if n >= 32 && bytes.Equal(b, make([]byte, n)) {
			t.Errorf("Read of %d bytes left them zero", n)
		}
	}
	for range 100 {
		b := make([]byte, 32)
		hostrand.Read(b)
		if seen[string(b)] {
			t.Fatalf("Read gave %x twice", b)
		}
		seen[string(b)] = true
	}
}

func TestReadConcurrent(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				b := make([]byte, 16)
				hostrand.Read(b)
				mu.Lock()
				if seen[string(b)] {
					t.Errorf("Read gave %x twice", b)
				}
				seen[string(b)] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}
