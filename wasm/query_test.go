//go:build js && wasm

package main

import (
	"encoding/json"
	"testing"
	"time"

	"syscall/js"

	"github.com/hilodb/hilodb/core"
)

func TestQueryCalls(t *testing.T) {
	a := newAPI()
	st := openOffline(t, a)
	for _, d := range []string{`{"_key":"a","s":"x","n":3}`, `{"_key":"b","s":"y","n":1}`, `{"_key":"c","s":"x","n":2}`} {
		wantResolve(t, st.Call("put", "items", d))
	}
	made := wantResolve(t, st.Call("createIndex", "items", `{"fields":["s","n"]}`))
	if got := jsJSON.Call("stringify", made).String(); got != `{"result":"created","name":"idx-s-n"}` {
		t.Errorf("createIndex = %s", got)
	}
	ixs := wantResolve(t, st.Call("getIndexes", "items"))
	if got := jsJSON.Call("stringify", ixs).String(); got != `{"indexes":[{"name":"idx-s-n","type":"json","def":{"fields":[{"s":"asc"},{"n":"asc"}]}}]}` {
		t.Errorf("getIndexes = %s", got)
	}
	q := `{"selector":{"s":"x"},"sort":["s","n"],"limit":1,"fields":["_key"]}`
	page := wantResolve(t, st.Call("find", "items", q))
	if got := jsJSON.Call("stringify", page.Get("docs")).String(); got != `[{"_key":"c"}]` {
		t.Errorf("find docs = %s", got)
	}
	next := wantResolve(t, st.Call("find", "items", `{"selector":{"s":"x"},"sort":["s","n"],"limit":1,"fields":["_key"],"bookmark":`+jsJSON.Call("stringify", page.Get("bookmark")).String()+`}`))
	if got := jsJSON.Call("stringify", next.Get("docs")).String(); got != `[{"_key":"a"}]` {
		t.Errorf("next page = %s", got)
	}
	text := wantResolve(t, st.Call("find", "items", q, false, true))
	if !text.InstanceOf(jsUint8Array) {
		t.Fatalf("find as text = %v, want a Uint8Array", text.Type())
	}
	raw := make([]byte, text.Length())
	js.CopyBytesToGo(raw, text)
	if !json.Valid(raw) || jsJSON.Call("stringify", jsJSON.Call("parse", string(raw)).Get("docs")).String() != `[{"_key":"c"}]` {
		t.Errorf("find as text = %s", raw)
	}
	if text.Get("byteOffset").Int() != 0 || text.Get("buffer").Get("byteLength").Int() != len(raw) {
		t.Errorf("find as text: the bytes are not the whole of their own buffer")
	}
	plan := wantResolve(t, st.Call("find", "items", q, true))
	if plan.Get("index").String() != "idx-s-n" || plan.Get("equality").Int() != 1 || !plan.Get("sortedByIndex").Bool() {
		t.Errorf("explain = %s", jsJSON.Call("stringify", plan).String())
	}
	if n := wantResolve(t, st.Call("count", "items", `{"n":{"$gte":2}}`)); n.Int() != 2 {
		t.Errorf("count = %v, want 2", n)
	}
	wantReject(t, st.Call("find", "items", `{"selector":{"n":{"$nope":1}}}`), "bad_query", 1912)
	wantReject(t, st.Call("count", "items", `[]`), "bad_query", 1912)
	wantReject(t, st.Call("find", "items", 5), "bad_request", 400)
	wantReject(t, st.Call("createIndex", "items", `{"fields":"s"}`), "bad_request", 400)
	wantReject(t, st.Call("watchQuery", "items", `{}`, "not a function"), "bad_request", 400)
	if ok := wantResolve(t, st.Call("deleteIndex", "items", "idx-s-n")); !ok.Get("ok").Bool() {
		t.Errorf("deleteIndex = %v", ok)
	}
	wantReject(t, st.Call("deleteIndex", "items", "idx-s-n"), "not_found", 1202)
}

func TestWatchQuery(t *testing.T) {
	a := newAPI()
	st := openOffline(t, a)
	got := make(chan string, 16)
	fn := js.FuncOf(func(_ js.Value, args []js.Value) any { got <- args[0].String(); return nil })
	defer fn.Release()
	next := func() map[string]any {
		t.Helper()
		select {
		case text := <-got:
			var r map[string]any
			if err := json.Unmarshal([]byte(text), &r); err != nil {
				t.Fatalf("result %q is not JSON: %v", text, err)
			}
			return r
		case <-time.After(5 * time.Second):
			t.Fatal("no result")
		}
		return nil
	}
	wantResolve(t, st.Call("put", "items", `{"_key":"a","n":1}`))
	w := wantResolve(t, st.Call("watchQuery", "items", `{"selector":{"n":{"$gt":0}},"sort":["n"]}`, fn))
	if r := next(); len(r["docs"].([]any)) != 1 {
		t.Fatalf("first result %v", r)
	}
	wantResolve(t, st.Call("put", "items", `{"_key":"b","n":0.5}`))
	r := next()
	changes := r["changes"].([]any)
	if len(changes) != 1 || changes[0].(map[string]any)["id"] != "items/b" || changes[0].(map[string]any)["index"] != 0.0 {
		t.Errorf("changes = %v", changes)
	}
	wantResolve(t, st.Call("unwatchQuery", w))
	wantResolve(t, st.Call("put", "items", `{"_key":"c","n":2}`))
	select {
	case text := <-got:
		t.Errorf("a result after unwatchQuery: %s", text)
	case <-time.After(100 * time.Millisecond):
	}
	// A watch still running when its store closes stops with it.
	wantResolve(t, st.Call("watchQuery", "items", `{"selector":{}}`, fn))
	next()
	a.watches.mu.Lock()
	n := len(a.watches.all)
	a.watches.mu.Unlock()
	if n != 1 {
		t.Errorf("%d watches, want 1", n)
	}
	wantResolve(t, st.Call("close"))
	a.watches.mu.Lock()
	n = len(a.watches.all)
	a.watches.mu.Unlock()
	if n != 0 {
		t.Errorf("%d watches after close, want 0", n)
	}
}

func TestLiveResultJSON(t *testing.T) {
	r := core.LiveResult{
		Docs: [][]byte{[]byte(`{"_id":"a/1"}`), []byte(`{"_id":"a/0"}`), []byte(`{"_id":"a/2","v":2}`)},
		Changes: []core.LiveChange{
			{Kind: "added", ID: "a/1", Index: 0, OldIndex: -1, Doc: []byte(`{"_id":"a/1"}`)},
			{Kind: "changed", ID: "a/2", Index: 2, OldIndex: 2, Doc: []byte(`{"_id":"a/2","v":2}`)},
			{Kind: "removed", ID: "a/\u2028\"x", Index: -1, OldIndex: 3},
		},
	}
	want := `{"n":3,"changes":[{"type":"added","id":"a/1","index":0,"oldIndex":-1},{"type":"changed","id":"a/2","index":2,"oldIndex":2},{"type":"removed","id":"a/\u2028\"x","index":-1,"oldIndex":3}],"docs":[{"_id":"a/1"},{"_id":"a/2","v":2}]}`
	got := string(liveResultJSON(r))
	if got != want {
		t.Errorf("liveResultJSON = %s\nwant %s", got, want)
	}
	if !json.Valid([]byte(got)) {
		t.Errorf("not JSON: %s", got)
	}
}

// TestAppendString: quoted as encoding/json quotes it, for strings that
// need no escape and for those that do.
func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "todos/1-A", "a b", "q\"uote", "back\\slash", "<tag>&", "\u2028", "é", "tab\t", "\x7f", "ctl\x01"} {
		want, _ := json.Marshal(s)
		if got := appendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("appendString(%q) = %s, want x%s", s, got, want)
		}
	}
}
