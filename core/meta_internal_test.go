package core

import "testing"

func FuzzSyncMeta(f *testing.F) {
	f.Add("", "_l6zhVDW---A", false, true)
	f.Add("r:1", "r2\n", true, false)
	f.Fuzz(func(t *testing.T, base, rev string, deleted, dirty bool) {
		m := syncMeta{Base: base, Rev: rev, Deleted: deleted, Dirty: dirty}
		got, err := decodeMeta(string(m.appendTo(nil)))
		if err != nil || got != m {
			t.Fatalf("round trip of %+v: %+v, %v", m, got, err)
		}
	})
}

func TestDecodeMetaJSON(t *testing.T) {
	m, err := decodeMeta(`{"b":"r1","r":"r2","p":true}`)
	if err != nil || m != (syncMeta{Base: "r1", Rev: "r2", Dirty: true}) {
		t.Fatalf("got %+v, %v", m, err)
	}
	for _, bad := range []string{"", "x", "9:ab", "2", "25:ab", "2-1:a"} {
		if _, err := decodeMeta(bad); err == nil {
			t.Errorf("decodeMeta(%q) accepted", bad)
		}
	}
}

// TestDecodeMetaAllocatesNothing: the sync state is decoded for every
// acknowledged, pushed or re-written document, and under WebAssembly an
// allocation each cost a tenth of a push's time.
func TestDecodeMetaAllocatesNothing(t *testing.T) {
	v := string(syncMeta{Base: "base", Rev: "rev", Dirty: true}.appendTo(nil))
	if n := testing.AllocsPerRun(100, func() { _, _ = decodeMeta(v) }); n != 0 {
		t.Errorf("decodeMeta allocates %v times a call, want 0", n)
	}
}
