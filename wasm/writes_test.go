//go:build js && wasm

package main

import (
	"encoding/binary"
	"strconv"
	"strings"
	"syscall/js"
	"testing"
	"unsafe"
)

// putIn runs the store's putIn as index.js does: the strings into the write
// buffer, the stored text out of the output buffer.
func putIn(st js.Value, coll, text, key string, seq int) js.Value {
	setLengths(len(coll), len(text), len(key))
	n := writeHeader + copy(writes.buf[writeHeader:], coll)
	n += copy(writes.buf[n:], text)
	copy(writes.buf[n:], key)
	return st.Call("putIn", seq)
}

func setLengths(lens ...int) {
	for i, n := range lens {
		binary.LittleEndian.PutUint32(writes.buf[4*i:], uint32(n))
	}
}

func TestPutIn(t *testing.T) {
	a := newAPI()
	st := openOffline(t, a)

	// What index.js asks once: where the buffer is, and how big. Exported
	// calls: they must not allocate (and so never park).
	if got, want := fastWriteInput(), uint32(uintptr(unsafe.Pointer(&writes.buf[0]))); got != want {
		t.Errorf("hilodbWriteInput = %d, want %d", got, want)
	}
	if got := fastWriteInputSize(); int(got) != len(writes.buf) {
		t.Errorf("hilodbWriteInputSize = %d, want %d", got, len(writes.buf))
	}
	if allocs := testing.AllocsPerRun(100, func() { fastWriteInput(); fastWriteInputSize() }); allocs != 0 {
		t.Errorf("write buffer's address: %v allocations per call, want 0", allocs)
	}

	r := putIn(st, "orders", `{"_key":"k1","n":1,"name":"Zoë"}`, "", 0)
	if r.Type() != js.TypeNumber {
		t.Fatalf("putIn: %v, want the stored text's length", r)
	}
	got := string(reads.Out(r.Int()))
	if want := st.Call("getText", "orders/k1").String(); got != want {
		t.Errorf("output buffer %q, stored %q", got, want)
	}
	if !strings.Contains(got, `"name":"Zoë"`) {
		t.Errorf("stored %q: the UTF-8 text did not come through", got)
	}

	// With a receipt: stored in the same transaction.
	if r := putIn(st, "orders", `{"_key":"k2"}`, "tab/link/1", 7); r.Type() != js.TypeNumber {
		t.Fatalf("putIn with a receipt: %v", r)
	}
	rcpt := wantResolve(t, st.Call("receipt", "tab/link/1"))
	if rcpt.Type() != js.TypeString || !strings.Contains(rcpt.String(), `"seq":7`) || !strings.Contains(rcpt.String(), "orders/k2") {
		t.Errorf("receipt: %v", rcpt)
	}

	// A rejected document is an Error, as from putText.
	if r := putIn(st, "orders", `{"_key":"bad key!"}`, "", 0); r.Type() != js.TypeObject || r.Get("code").Type() != js.TypeString {
		t.Errorf("illegal key: %v, want an Error with a code", r)
	}

	// Lengths past the buffer are refused, not read.
	for _, lens := range [][3]int{{-1, 1, 0}, {1, writeSize - writeHeader, 0}, {0, 0, writeSize}, {1 << 31, 1 << 31, 1 << 31}} {
		setLengths(lens[:]...)
		r := st.Call("putIn")
		if r.Type() != js.TypeObject || r.Get("code").String() != "bad_request" {
			t.Errorf("putIn with lengths %v: %v, want bad_request", lens, r)
		}
	}
	// A key without its sequence is refused.
	setLengths(6, 2, 3)
	copy(writes.buf[writeHeader:], "orders{}abc")
	if r := st.Call("putIn"); r.Type() != js.TypeObject || r.Get("code").String() != "bad_request" {
		t.Errorf("putIn with a key and no seq: %v, want bad_request", r)
	}

	// A stored text longer than the output buffer grows it, and the
	// answer is still its length there.
	big := `{"_key":"big","pad":"` + strings.Repeat("x", 20<<10) + `"}`
	if r := putIn(st, "orders", big, "", 0); r.Type() != js.TypeNumber || r.Int() < len(big) {
		t.Errorf("big document: %v", r)
	}
}

func TestDropLog(t *testing.T) {
	a := newAPI()
	var dropped []string
	invalidate := js.FuncOf(func(_ js.Value, args []js.Value) any {
		if ids := args[0].String(); ids != "" {
			dropped = append(dropped, ids)
		}
		return nil
	})
	defer invalidate.Release()
	opts := map[string]any{"url": "ws://127.0.0.1:1/v1/sync", "database": "shop", "invalidate": invalidate, "dropLog": true}
	st := wantResolve(t, a.value.Call("openStore", opts))
	defer func() { await(t, st.Call("close")) }()
	at := st.Get("dropLog")
	if at.Type() != js.TypeNumber {
		t.Fatalf("dropLog = %v, want its address", at)
	}
	a.mu.Lock()
	h := a.stores[st.Get("number").Int()]
	a.mu.Unlock()
	if h == nil || h.drops == nil {
		t.Fatalf("store %v: no handle with a drop log", st.Get("number"))
	}
	if h.drops.addr() != at.Int() {
		t.Fatalf("dropLog address %d, log at %d", at.Int(), h.drops.addr())
	}
	logged := func() (ids []string, over bool) {
		b := h.drops.buf
		used := binary.LittleEndian.Uint32(b)
		for _, id := range strings.Split(string(b[dropHeader:dropHeader+int(used)]), "\x00") {
			if id != "" {
				ids = append(ids, id)
			}
		}
		return ids, b[4] != 0
	}
	empty := func() {
		for i := range 5 {
			h.drops.buf[i] = 0
		}
	}

	wantResolve(t, st.Call("putMany", "orders", `[{"_key":"a"},{"_key":"b"}]`))
	if ids, over := logged(); strings.Join(ids, ",") != "orders/a,orders/b" || over {
		t.Errorf("after putMany: %v (overflow %v), want orders/a and orders/b", ids, over)
	}
	wantResolve(t, st.Call("delete", "orders/a"))
	if ids, _ := logged(); len(ids) != 3 || ids[2] != "orders/a" {
		t.Errorf("after delete: %v, want orders/a added", ids)
	}
	if len(dropped) != 0 {
		t.Errorf("invalidate called with %q: the ids belong in the log", dropped)
	}

	// More than the log holds: it says so, and the cache drops everything.
	empty()
	var docs []string
	for i := range 2000 {
		docs = append(docs, `{"_key":"k`+strings.Repeat("0", 10)+strconv.Itoa(i)+`"}`)
	}
	wantResolve(t, st.Call("putMany", "orders", "["+strings.Join(docs, ",")+"]"))
	if _, over := logged(); !over {
		t.Error("2,000 ids: overflow not set")
	}
	empty()
	if ids, over := logged(); len(ids) != 0 || over {
		t.Errorf("emptied: %v %v", ids, over)
	}
	wantResolve(t, st.Call("put", "orders", `{"_key":"c"}`))
	if ids, _ := logged(); len(ids) != 1 || ids[0] != "orders/c" {
		t.Errorf("after emptying and a put: %v", ids)
	}
}
