//go:build js && wasm

package main

import (
	"strings"
	"syscall/js"
	"testing"

	"github.com/hilodb/hilodb/wasm/mirror"
)

// fastText runs the function behind the hilodbGet export as index.js does:
// the id into the input buffer, the text out of the output buffer.
func fastText(number int32, id string) (string, int32) {
	n := copy(reads.In(), id)
	r := fastGet(number, int32(n))
	if r < 0 {
		return "", r
	}
	return string(reads.Out(int(r))), mirror.Hit
}

func TestFastGet(t *testing.T) {
	a := newAPI()
	st := openOffline(t, a)
	num := int32(st.Get("number").Int())

	wantResolve(t, st.Call("put", "orders", `{"_key":"k1","n":1}`))
	want := st.Call("getText", "orders/k1").String()
	if got, code := fastText(num, "orders/k1"); code != mirror.Hit || got != want {
		t.Errorf("after put: fast %q (%d), getText %q", got, code, want)
	}
	if _, code := fastText(num+1000, "orders/k1"); code != mirror.Miss {
		t.Errorf("unknown store: %d, want Miss", code)
	}

	// A later write is seen at once, before anything else runs.
	if r := st.Call("putText", "orders", `{"_key":"k1","n":2}`); r.Type() != js.TypeString {
		t.Fatalf("putText: %v", r)
	}
	if got, _ := fastText(num, "orders/k1"); !strings.Contains(got, `"n":2`) {
		t.Errorf("after a second put: %q", got)
	}
	wantResolve(t, st.Call("delete", "orders/k1"))
	if got, code := fastText(num, "orders/k1"); code != mirror.Miss {
		t.Errorf("after delete: %q (%d), want Miss", got, code)
	}

	// Too big for the output buffer: getText answers and grows it.
	big := `{"_key":"big","pad":"` + strings.Repeat("x", mirror.OutStart) + `"}`
	wantResolve(t, st.Call("put", "orders", big))
	if _, code := fastText(num, "orders/big"); code != mirror.TooBig {
		t.Errorf("big document: %d, want TooBig", code)
	}
	before := fastOutput()
	want = st.Call("getText", "orders/big").String()
	if fastOutput() == before {
		t.Error("getText of a big document: the output buffer did not move")
	}
	if got, code := fastText(num, "orders/big"); code != mirror.Hit || got != want {
		t.Errorf("big document after getText: %d bytes (%d), want %d", len(got), code, len(want))
	}

	wantResolve(t, st.Call("close"))
	if _, code := fastText(num, "orders/big"); code != mirror.Miss {
		t.Errorf("after close: %d, want Miss", code)
	}
}

// TestFastGetAllocatesNothing: the export itself, in the wasm runtime,
// allocates nothing, so it can never start a garbage collection or an
// assist that parks.
func TestFastGetAllocatesNothing(t *testing.T) {
	a := newAPI()
	st := openOffline(t, a)
	num := int32(st.Get("number").Int())
	wantResolve(t, st.Call("put", "orders", `{"_key":"k1","n":1}`))
	for _, id := range []string{"orders/k1", "orders/none"} {
		n := int32(copy(reads.In(), id))
		var r int32
		if allocs := testing.AllocsPerRun(1000, func() { r = fastGet(num, n) }); allocs != 0 {
			t.Errorf("fastGet(%q) = %d: %v allocations per call, want 0", id, r, allocs)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { fastInput(); fastInputSize(); fastOutput() }); allocs != 0 {
		t.Errorf("buffer addresses: %v allocations per call, want 0", allocs)
	}
}
