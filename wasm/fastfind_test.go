//go:build js && wasm

package main

import (
	"encoding/json"
	"fmt"
	"syscall/js"
	"testing"
)

// fastPage runs the function behind the hilodbFind export as index.js
// does: the collection and the query into the write buffer, the answer
// out of the page buffer.
func fastPage(a *api, number int, coll, query string) (string, int32) {
	c := copy(writes.buf, coll)
	q := copy(writes.buf[c:], query)
	r := fastFind(int32(number), int32(c), int32(q))
	switch {
	case r >= 0:
		return string(a.q.out[:r]), r
	case r <= findFailed:
		return string(a.q.out[:findFailed-r]), r
	}
	return "", r
}

// useFindAPI makes a the api the find export serves, for one test.
func useFindAPI(t *testing.T, a *api) {
	prev := findAPI.Swap(a)
	t.Cleanup(func() { findAPI.Store(prev) })
}

// ordinaryPage is the page of the store object's find, as its JSON text.
func ordinaryPage(t *testing.T, st js.Value, coll, query string) string {
	t.Helper()
	b := wantResolve(t, st.Call("find", coll, query, false, true))
	raw := make([]byte, b.Length())
	js.CopyBytesToGo(raw, b)
	return string(raw)
}

func TestFastFind(t *testing.T) {
	a := newAPI()
	useFindAPI(t, a)
	st := openOffline(t, a)
	num := st.Get("number").Int()
	for i := range 40 {
		wantResolve(t, st.Call("put", "items", fmt.Sprintf(`{"_key":"k%02d","s":%q,"n":%d,"t":"é %d"}`, i, []string{"x", "y", "z"}[i%3], i%7, i)))
	}
	wantResolve(t, st.Call("createIndex", "items", `{"fields":["s","n"]}`))

	// The same page as the store object's find, indexed or not, paged.
	for _, q := range []string{
		`{"selector":{"s":"x"},"sort":["s","n"],"limit":5}`,
		`{"selector":{"n":{"$gte":2,"$lt":5}},"sort":[{"n":"desc"}],"fields":["_key","n"]}`,
		`{"selector":{"t":{"$regex":"^é 1"}}}`,
		`{"selector":{"s":"nobody"}}`,
		`{}`,
	} {
		got, r := fastPage(a, num, "items", q)
		if want := ordinaryPage(t, st, "items", q); r < 0 || got != want {
			t.Errorf("%s: fast %q (%d), want %q", q, got, r, want)
		}
		var page struct{ Bookmark string }
		if err := json.Unmarshal([]byte(got), &page); err != nil {
			t.Fatalf("%s: page is not JSON: %v", q, err)
		}
		if page.Bookmark != "" {
			next := fmt.Sprintf(`{"selector":{"s":"x"},"sort":["s","n"],"limit":5,"bookmark":%q}`, page.Bookmark)
			if got, _ := fastPage(a, num, "items", next); got != ordinaryPage(t, st, "items", next) {
				t.Errorf("%s: the next page differs: %s", q, got)
			}
		}
	}

	// A write is seen by the next call.
	wantResolve(t, st.Call("put", "items", `{"_key":"new","s":"x","n":-1}`))
	if got, _ := fastPage(a, num, "items", `{"selector":{"s":"x"},"sort":["s","n"],"limit":1,"fields":["_key"]}`); got != `{"docs":[{"_key":"new"}],"bookmark":`+bookmarkOf(t, got)+`}` {
		t.Errorf("after a put: %s", got)
	}

	// Failures come back as the store object's find rejects them.
	for _, tt := range []struct {
		name, coll, query, code string
		num                     int
	}{
		{"unknown operator", "items", `{"selector":{"n":{"$nope":1}}}`, "bad_query", 1912},
		{"not JSON", "items", `{"selector":`, "bad_query", 1912},
		{"illegal collection", "no such/name", `{}`, "illegal_name", 1208},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text, r := fastPage(a, num, tt.coll, tt.query)
			if r > findFailed {
				t.Fatalf("answer %d (%q), want a failure", r, text)
			}
			var e struct {
				Code    string
				Num     int
				Message string
			}
			if err := json.Unmarshal([]byte(text), &e); err != nil || e.Code != tt.code || e.Num != tt.num || e.Message == "" {
				t.Errorf("failure %s (%v), want code %s num %d and a message", text, err, tt.code, tt.num)
			}
			wantReject(t, st.Call("find", tt.coll, tt.query), tt.code, tt.num)
		})
	}
	if text, r := fastPage(a, num+1000, "items", `{}`); r > findFailed || !json.Valid([]byte(text)) {
		t.Errorf("unknown store: %q (%d), want a failure", text, r)
	}

	// What the export cannot answer goes to the store object's find.
	if r := fastFind(int32(num), int32(len(writes.buf)), 1); r != findOrdinary {
		t.Errorf("lengths past the buffer: %d, want findOrdinary", r)
	}
	if r := fastFind(int32(num), -1, 2); r != findOrdinary {
		t.Errorf("a negative length: %d, want findOrdinary", r)
	}
	a.q.pageMu.Lock()
	_, r := fastPage(a, num, "items", `{}`)
	a.q.pageMu.Unlock()
	if r != findOrdinary {
		t.Errorf("page buffer busy: %d, want findOrdinary", r)
	}
	findAPI.Store(nil)
	if _, r := fastPage(a, num, "items", `{}`); r != findOrdinary || fastFindOutput() != 0 {
		t.Errorf("no api: %d, want findOrdinary", r)
	}
	findAPI.Store(a)
}

func bookmarkOf(t *testing.T, page string) string {
	t.Helper()
	var p struct{ Bookmark string }
	if err := json.Unmarshal([]byte(page), &p); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p.Bookmark)
	return string(b)
}

// TestFastFindNeverWaits: a query answers while a write waits for its
// append to the storage (the adapter's append not settled), as the
// export must (fastfind.go): a wait there would hang this test. The write
// is in the page: it was applied before it waited.
func TestFastFindNeverWaits(t *testing.T) {
	a := newAPI()
	useFindAPI(t, a)
	mem := jsObject.New()
	held := js.Global().Get("Function").New(`return function (mem) {
		return {
			load: async () => ({ snapshot: null, log: null, node: null, ranges: {} }),
			append: (bytes) => new Promise((resolve) => { if (!mem.hold) return resolve(); (mem.held ||= []).push(resolve); }),
			compact: async () => {},
			saveNode: async () => {},
			saveRange: async () => {},
			close: async () => {},
		};
	}`).Invoke()
	opts := map[string]any{"url": "ws://127.0.0.1:1/v1/sync", "database": "shop", "persist": held.Invoke(mem)}
	st := wantResolve(t, a.value.Call("openStore", opts))
	t.Cleanup(func() {
		mem.Set("hold", false)
		release(mem)
		await(t, st.Call("close"))
	})
	num := st.Get("number").Int()
	wantResolve(t, st.Call("createIndex", "items", `{"fields":["n"]}`))
	mem.Set("hold", true)

	settled := false
	then := js.FuncOf(func(js.Value, []js.Value) any { settled = true; return nil })
	defer then.Release()
	put := st.Call("put", "items", `{"_key":"waiting","n":7}`)
	put.Call("then", then, then)
	for mem.Get("held").IsUndefined() {
		await(t, js.Global().Get("Promise").Call("resolve")) // let the put reach its append
	}
	got, r := fastPage(a, num, "items", `{"selector":{"n":7},"fields":["_key"]}`)
	if r < 0 || got != `{"docs":[{"_key":"waiting"}]}` {
		t.Errorf("while a put waits for its append: %q (%d)", got, r)
	}
	if settled {
		t.Error("the put settled before its append did: the test proves nothing")
	}
	mem.Set("hold", false)
	release(mem)
	wantResolve(t, put)
}

// release settles every append the held adapter holds.
func release(mem js.Value) {
	held := mem.Get("held")
	if held.IsUndefined() {
		return
	}
	for i := range held.Length() {
		held.Index(i).Invoke()
	}
	mem.Set("held", js.Global().Get("Array").New())
}
