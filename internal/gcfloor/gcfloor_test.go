package gcfloor_test

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/hilodb/hilodb/internal/gcfloor"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		name        string
		live, floor uint64
		base, want  int
	}{
		{"small heap: the floor sets the goal", 8 * mb, 32 * mb, 100, 400},
		{"large heap: GOGC as it was", 64 * mb, 32 * mb, 100, 100},
		{"a heap the size of the floor", 32 * mb, 32 * mb, 100, 100},
		{"a tiny heap is capped", 1 * mb, 32 * mb, 100, 1000},
		{"nothing live yet", 0, 32 * mb, 100, 1000},
		{"a higher GOGC is kept", 8 * mb, 32 * mb, 800, 800},
		{"collection off stays off", 8 * mb, 32 * mb, -1, -1},
		{"no floor", 8 * mb, 0, 100, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := gcfloor.Percent(tc.live, tc.floor, tc.base); got != tc.want {
				t.Errorf("Percent(%d, %d, %d) = %d, want %d", tc.live, tc.floor, tc.base, got, tc.want)
			}
		})
	}
}

// percent reads the GOGC percentage in force.
func percent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestStartRaisesThePercentOfASmallHeap(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	stop := gcfloor.Start(1 << 30) // a floor far above this test's heap
	if got := percent(); got != 1000 {
		t.Fatalf("GOGC %d at once after Start with a floor far above the heap, want 1000 before any cycle", got)
	}
	debug.SetGCPercent(100) // as if changed meanwhile: the next cycle sets it again
	deadline := time.Now().Add(5 * time.Second)
	for percent() == 100 && time.Now().Before(deadline) {
		runtime.GC() // the cycle's finalizer sets the percentage
		time.Sleep(10 * time.Millisecond)
	}
	if got := percent(); got != 1000 {
		t.Fatalf("GOGC %d after a cycle with a floor far above the live heap, want 1000", got)
	}
	stop()
	if got := percent(); got != 100 {
		t.Errorf("GOGC %d after stop, want 100 again", got)
	}
	// Stopped: later cycles leave the percentage alone.
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	runtime.GC()
	if got := percent(); got != 100 {
		t.Errorf("GOGC %d after cycles past stop, want 100", got)
	}
}

func TestStartAgainReplacesTheFirst(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	stop1 := gcfloor.Start(1 << 30)
	stop2 := gcfloor.Start(0) // no floor: GOGC as it was
	defer stop2()
	for range 3 {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	if got := percent(); got != 100 {
		t.Errorf("GOGC %d with the second Start's zero floor, want 100", got)
	}
	stop1() // already replaced: changes nothing
	if got := percent(); got != 100 {
		t.Errorf("GOGC %d after the replaced Start's stop, want 100", got)
	}
}
