package mirror

import (
	"testing"

	"github.com/hilodb/hilodb/core"
)

// TestGetBusy: with either lock held, Get answers Busy at once rather than
// wait for it.
func TestGetBusy(t *testing.T) {
	l, d := NewLookup(), NewDocs()
	l.Add(1, d)
	d.Apply([]core.Change{{Key: "doc/a/1", Value: "{}"}})
	n := int32(copy(l.in, "a/1"))
	if r := l.Get(1, n); r != 2 {
		t.Fatalf("Get: %d, want 2", r)
	}
	for name, lock := range map[string]func() func(){
		"mirror": func() func() { d.mu.Lock(); return d.mu.Unlock },
		"lookup": func() func() { l.mu.Lock(); return l.mu.Unlock },
	} {
		unlock := lock()
		r := l.Get(1, n)
		unlock()
		if r != Busy {
			t.Errorf("%s lock held: Get = %d, want Busy", name, r)
		}
	}
}
