package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// TestLiveHeapNearTheMarkedHeap checks the estimate against the runtime's
// own count of the heap the last cycle marked, for a small and a large
// live heap and the percentages a tuner sets.
func TestLiveHeapNearTheMarkedHeap(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	const mb = 1 << 20
	for _, tc := range []struct {
		name    string
		keep    int // bytes kept live
		percent int
	}{
		{"small heap, GOGC 100", 1 * mb, 100},
		{"64 MiB live, GOGC 100", 64 * mb, 100},
		{"64 MiB live, GOGC 400", 64 * mb, 400},
		{"16 MiB live, GOGC 1000", 16 * mb, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keep := make([][]byte, tc.keep/4096)
			for i := range keep {
				keep[i] = make([]byte, 4096)
			}
			debug.SetGCPercent(tc.percent)
			runtime.GC()
			tu := &tuner{percent: tc.percent}
			got := tu.liveHeap()
			s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
			metrics.Read(s)
			want := s[0].Value.Uint64()
			runtime.KeepAlive(keep)
			t.Logf("estimate %.1f MiB, marked %.1f MiB", float64(got)/mb, float64(want)/mb)
			// Stacks and globals add a little; the runtime's floor on
			// the goal (4 MiB at GOGC 100) lifts a tiny heap's estimate.
			slack := uint64(2*mb) + want/10
			if got+slack/2 < want || got > want+slack+4*mb {
				t.Errorf("liveHeap() = %.1f MiB, the runtime marked %.1f MiB", float64(got)/mb, float64(want)/mb)
			}
		})
	}
}

func TestLiveHeapWithCollectionOff(t *testing.T) {
	tu := &tuner{percent: -1}
	if got := tu.liveHeap(); got != 0 {
		t.Errorf("liveHeap() = %d with collection off, want 0", got)
	}
}
