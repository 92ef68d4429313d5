//go:build js && wasm

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall/js"
	"testing"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/idgen"
)

// Run with:
//
//	GOOS=js GOARCH=wasm go test -exec="$(go env GOROOT)/lib/wasm/go_js_wasm_exec" ./wasm
//
// TestMain installs a WebSocket that refuses every connection, so stores open
// offline as they do when the server cannot be reached.

// refusingWebSocket is a WebSocket class that fails every connection the way
// a browser's does when nothing listens: an error event, then a close event,
// and close codes other than 1000 and 3000–4999 refused with an exception.
const refusingWebSocket = `return class RefusingWebSocket {
	constructor(url) {
		this.url = url;
		this.readyState = 0;
		this.listeners = {};
		setTimeout(() => {
			this.readyState = 3;
			this.emit('error', { message: 'connection refused' });
			this.emit('close', { code: 1006, reason: '', wasClean: false });
		}, 0);
	}
	addEventListener(type, fn) { (this.listeners[type] ||= []).push(fn); }
	removeEventListener(type, fn) { this.listeners[type] = (this.listeners[type] || []).filter((f) => f !== fn); }
	emit(type, event) { for (const fn of [...(this.listeners[type] || [])]) fn(event); }
	close(code) {
		if (code !== undefined && code !== 1000 && !(code >= 3000 && code <= 4999)) {
			throw new Error('InvalidAccessError: close code ' + code);
		}
	}
	send() { throw new Error('InvalidStateError: not open'); }
}`

func TestMain(m *testing.M) {
	js.Global().Set("WebSocket", js.Global().Get("Function").New(refusingWebSocket).Invoke())
	os.Exit(m.Run())
}

// await waits for p to settle and returns its value or its rejection reason.
func await(t *testing.T, p js.Value) (value js.Value, reason js.Value, ok bool) {
	t.Helper()
	type outcome struct {
		v  js.Value
		ok bool
	}
	ch := make(chan outcome, 1)
	onOK := js.FuncOf(func(_ js.Value, args []js.Value) any { ch <- outcome{arg(args, 0), true}; return nil })
	onErr := js.FuncOf(func(_ js.Value, args []js.Value) any { ch <- outcome{arg(args, 0), false}; return nil })
	defer onOK.Release()
	defer onErr.Release()
	if p.Type() != js.TypeObject || p.Get("then").Type() != js.TypeFunction {
		t.Fatalf("got %v, want a Promise", p)
	}
	p.Call("then", onOK, onErr)
	o := <-ch
	if o.ok {
		return o.v, js.Undefined(), true
	}
	return js.Undefined(), o.v, false
}

// wantReject asserts that p rejects with an Error of the given code and num.
func wantReject(t *testing.T, p js.Value, code string, num int) js.Value {
	t.Helper()
	v, reason, ok := await(t, p)
	if ok {
		t.Fatalf("resolved with %v, want a rejection with code %q", v, code)
	}
	if !reason.InstanceOf(jsError) {
		t.Fatalf("rejected with %v, want an Error", reason)
	}
	if got := reason.Get("code").String(); got != code {
		t.Errorf("code = %q, want %q (message %q)", got, code, reason.Get("message").String())
	}
	if got := reason.Get("num").Int(); got != num {
		t.Errorf("num = %d, want %d (message %q)", got, num, reason.Get("message").String())
	}
	return reason
}

func wantResolve(t *testing.T, p js.Value) js.Value {
	t.Helper()
	v, reason, ok := await(t, p)
	if !ok {
		t.Fatalf("rejected with %v: %v", reason.Get("code"), reason.Get("message"))
	}
	return v
}

func TestDescribe(t *testing.T) {
	illegal := core.ValidateKey("a b")
	if illegal == nil {
		t.Fatal(`ValidateKey("a b") = nil, want an error`)
	}
	tests := []struct {
		name string
		err  error
		code string
		num  int
	}{
		{"core error", illegal, "illegal_key", core.NumIllegalKey},
		{"wrapped core error", fmt.Errorf("put: %w", illegal), "illegal_key", core.NumIllegalKey},
		{"core sentinel", fmt.Errorf("x: %w", core.ErrNotFound), "not_found", core.NumDocumentNotFound},
		{"server error", fmt.Errorf("hello: %w", &client.Error{Code: "unauthorized", Num: 401, Message: "no"}), "unauthorized", 401},
		{"server error behind a core wrap", fmt.Errorf("generate id: %w", fmt.Errorf("lease range: %w", &client.Error{Code: "rate_limited", Num: 429})), "rate_limited", 429},
		{"unreachable", fmt.Errorf("dial: %w: refused", client.ErrDisconnected), "needs_server", 1900},
		{"dial timeout", fmt.Errorf("dial: %w", context.DeadlineExceeded), "needs_server", 1900},
		{"closed store", errClosed, "closed", 1902},
		{"closed client", fmt.Errorf("hilo.next: %w", client.ErrClosed), "closed", 1902},
		{"closed generator", fmt.Errorf("lease: %w", idgen.ErrClosed), "closed", 1902},
		{"bad argument", &argError{"x"}, "bad_request", 400},
		{"host without WebSocket", &hostError{"x"}, "unavailable", 503},
		{"panic", &panicError{"boom"}, "internal", core.NumInternal},
		{"anything else", errors.New("surprise"), "internal", core.NumInternal},
		{"core error caused by the server", &causedError{err: core.AsError(errors.New("lease failed")), cause: &client.Error{Code: "unauthorized", Num: 401}}, "unauthorized", 401},
		{"core error caused by going offline", &causedError{err: core.AsError(errors.New("lease failed")), cause: fmt.Errorf("dial: %w", client.ErrDisconnected)}, "needs_server", 1900},
		{"core error with a cause of no code", &causedError{err: illegal, cause: errors.New("odd")}, "illegal_key", core.NumIllegalKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, num := describe(tt.err)
			if code != tt.code || num != tt.num {
				t.Errorf("describe(%v) = %q, %d; want %q, %d", tt.err, code, num, tt.code, tt.num)
			}
			e := toJSError(tt.err)
			if got := e.Get("message").String(); got != tt.err.Error() {
				t.Errorf("message = %q, want %q", got, tt.err.Error())
			}
		})
	}
}

func TestWithCause(t *testing.T) {
	refused := &client.Error{Code: "unauthorized", Num: 401, Message: "no"}
	t.Run("keeps the first sync error of a failed call", func(t *testing.T) {
		err := withCause(context.Background(), func(ctx context.Context) error {
			_ = noteCause(ctx, refused)
			_ = noteCause(ctx, client.ErrDisconnected)
			return core.AsError(errors.New("generate id failed")) // core's own terms
		})
		var got *client.Error
		if !errors.As(err, &got) || got != refused {
			t.Fatalf("withCause = %v, want it to carry %v", err, refused)
		}
		if err.Error() != "generate id failed" {
			t.Errorf("text = %q, want core's", err.Error())
		}
	})
	t.Run("a call that succeeds returns nil", func(t *testing.T) {
		err := withCause(context.Background(), func(ctx context.Context) error {
			_ = noteCause(ctx, refused) // a retried lease that failed once
			return nil
		})
		if err != nil {
			t.Errorf("withCause = %v, want nil", err)
		}
	})
	t.Run("without a sync error the error is core's", func(t *testing.T) {
		want := core.AsError(core.ErrNotFound)
		err := withCause(context.Background(), func(ctx context.Context) error { return want })
		if err != want {
			t.Errorf("withCause = %v, want %v as it is", err, want)
		}
	})
	t.Run("noteCause without a cause in the context", func(t *testing.T) {
		if err := noteCause(context.Background(), refused); err != refused {
			t.Errorf("noteCause = %v, want its argument", err)
		}
	})
}

func TestPanicsReject(t *testing.T) {
	t.Run("while reading arguments", func(t *testing.T) {
		f := async(func(args []js.Value) (func() (any, error), error) { panic("boom in handler") })
		defer f.Release()
		r := wantReject(t, f.Invoke(), "internal", core.NumInternal)
		if msg := r.Get("message").String(); !strings.Contains(msg, "boom in handler") {
			t.Errorf("message = %q, want the panic value in it", msg)
		}
	})
	t.Run("while working", func(t *testing.T) {
		f := async(func(args []js.Value) (func() (any, error), error) {
			return func() (any, error) { panic("boom in goroutine") }, nil
		})
		defer f.Release()
		r := wantReject(t, f.Invoke(), "internal", core.NumInternal)
		if msg := r.Get("message").String(); !strings.Contains(msg, "boom in goroutine") {
			t.Errorf("message = %q, want the panic value in it", msg)
		}
	})
	t.Run("a result JavaScript cannot take", func(t *testing.T) {
		f := async(func(args []js.Value) (func() (any, error), error) {
			return func() (any, error) { return make(chan int), nil }, nil
		})
		defer f.Release()
		wantReject(t, f.Invoke(), "internal", core.NumInternal)
	})
}

// openOffline opens a store through the JavaScript API; it opens offline.
func openOffline(t *testing.T, a *api) js.Value {
	t.Helper()
	opts := map[string]any{"url": "ws://127.0.0.1:1/v1/sync", "database": "shop"}
	st := wantResolve(t, a.value.Call("openStore", opts))
	t.Cleanup(func() { await(t, st.Call("close")) })
	return st
}

func TestOfflineStore(t *testing.T) {
	a := newAPI()
	st := openOffline(t, a)

	info := wantResolve(t, st.Call("info"))
	if info.Get("connected").Bool() {
		t.Error("connected = true, want false without a server")
	}

	doc := wantResolve(t, st.Call("put", "orders", `{"_key":"k1","n":1}`))
	if got := doc.Get("_id").String(); got != "orders/k1" {
		t.Errorf("_id = %q, want orders/k1", got)
	}
	if doc.Get("_rev").Type() != js.TypeString || doc.Get("_rev").String() == "" {
		t.Errorf("_rev = %v, want a revision", doc.Get("_rev"))
	}

	obj := js.ValueOf(map[string]any{"_key": "k2", "list": []any{1, "two"}})
	doc = wantResolve(t, st.Call("put", "orders", obj))
	if got := doc.Get("list").Index(1).String(); got != "two" {
		t.Errorf("list[1] = %q, want two", got)
	}

	got := wantResolve(t, st.Call("get", "orders/k2"))
	if got.Get("_rev").String() != doc.Get("_rev").String() {
		t.Errorf("get _rev = %v, want %v", got.Get("_rev"), doc.Get("_rev"))
	}

	// No range was ever leased: a time-ordered UUID id (docs/ids.md); an
	// identity needs the server.
	if id := wantResolve(t, st.Call("put", "orders", `{"n":2}`)).Get("_id").String(); !strings.HasPrefix(id, "orders/") || len(id) != len("orders/")+36 {
		t.Errorf("offline put without an id: _id = %q, want orders/<UUIDv7>", id)
	}
	wantReject(t, st.Call("put", "orders", `{"_id":"orders|"}`), "needs_server", 1900)
	wantReject(t, st.Call("put", "orders", `{"_key":"a b"}`), "illegal_key", 1221)
	wantReject(t, st.Call("put", "orders", `[1]`), "bad_json", 600)
	wantReject(t, st.Call("get", "orders/none"), "not_found", 1202)
	wantReject(t, st.Call("get"), "bad_request", 400)
	wantReject(t, st.Call("put", 1, `{}`), "bad_request", 400)

	cyclic := jsObject.New()
	cyclic.Set("self", cyclic)
	wantReject(t, st.Call("put", "orders", cyclic), "bad_json", 600)

	if v := wantResolve(t, st.Call("delete", "orders/k1")); !v.IsUndefined() {
		t.Errorf("delete resolved with %v, want undefined", v)
	}
	wantReject(t, st.Call("get", "orders/k1"), "not_found", 1202)
}

func TestClose(t *testing.T) {
	a := newAPI()
	st := openOffline(t, a)
	wantResolve(t, st.Call("put", "orders", `{"_key":"k"}`))
	wantResolve(t, st.Call("close"))
	wantResolve(t, st.Call("close"))
	wantReject(t, st.Call("get", "orders/k"), "closed", 1902)
	wantReject(t, st.Call("put", "orders", `{"_key":"k"}`), "closed", 1902)
	a.mu.Lock()
	n := len(a.stores)
	a.mu.Unlock()
	if n != 0 {
		t.Errorf("%d stores still registered after close, want 0", n)
	}
}

func TestOpenArguments(t *testing.T) {
	a := newAPI()
	tests := []struct {
		name string
		args []any
	}{
		{"no options", nil},
		{"not an object", []any{"ws://x"}},
		{"no url", []any{map[string]any{"database": "shop"}}},
		{"no database", []any{map[string]any{"url": "ws://127.0.0.1:1/v1/sync"}}},
		{"token not a string", []any{map[string]any{"url": "ws://127.0.0.1:1/v1/sync", "database": "shop", "token": 5}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantReject(t, a.value.Call("openStore", tt.args...), "bad_request", 400)
		})
	}
}

func TestNoWebSocket(t *testing.T) {
	ws := js.Global().Get("WebSocket")
	js.Global().Delete("WebSocket")
	defer js.Global().Set("WebSocket", ws)
	opts := map[string]any{"url": "ws://127.0.0.1:1/v1/sync", "database": "shop"}
	wantReject(t, newAPI().value.Call("openStore", opts), "unavailable", 503)
}

func TestSeparateStores(t *testing.T) {
	a := newAPI()
	s1, s2 := openOffline(t, a), openOffline(t, a)
	wantResolve(t, s1.Call("put", "orders", `{"_key":"only-in-1"}`))
	wantReject(t, s2.Call("get", "orders/only-in-1"), "not_found", 1202)
	n1 := wantResolve(t, s1.Call("info")).Get("node").String()
	n2 := wantResolve(t, s2.Call("info")).Get("node").String()
	if n1 == "" || n1 == n2 {
		t.Errorf("node tags %q and %q, want two different local tags", n1, n2)
	}
}

// memoryAdapter is a storage adapter (see persister) over a JavaScript
// object, with saveRange failing while failRanges is set.
const memoryAdapter = `return function (mem) {
	return {
		load: async () => {
			const log = mem.log || [];
			const all = new Uint8Array(log.reduce((n, b) => n + b.length, 0));
			let at = 0;
			for (const b of log) { all.set(b, at); at += b.length; }
			return { snapshot: mem.snapshot || null, log: all, node: mem.node || null, ranges: { ...(mem.ranges || {}) } };
		},
		append: async (bytes) => { (mem.log ||= []).push(bytes.slice()); mem.appends = (mem.appends || 0) + 1; },
		compact: async (bytes) => { mem.snapshot = bytes.slice(); mem.log = []; },
		saveNode: async (node) => { mem.node = node; },
		saveRange: async (tag, text) => {
			if (mem.failRanges) { const e = new Error('disk full'); e.code = 'unavailable'; e.num = 503; throw e; }
			(mem.ranges ||= {})[tag] = text;
		},
		close: async () => { mem.closed = (mem.closed || 0) + 1; },
	};
}`

func TestPersistedStore(t *testing.T) {
	a := newAPI()
	mem := jsObject.New()
	adapter := js.Global().Get("Function").New(memoryAdapter).Invoke()
	open := func() js.Value {
		opts := map[string]any{"url": "ws://127.0.0.1:1/v1/sync", "database": "shop", "persist": adapter.Invoke(mem)}
		return wantResolve(t, a.value.Call("openStore", opts))
	}
	st := open()
	doc := wantResolve(t, st.Call("put", "orders", `{"_key":"k1","n":1}`))
	wantResolve(t, st.Call("close"))
	if got := mem.Get("closed").Int(); got != 1 {
		t.Errorf("adapter closed %d times, want 1", got)
	}
	if mem.Get("appends").IsUndefined() {
		t.Fatal("the write appended nothing to the log")
	}

	st = open()
	t.Cleanup(func() { await(t, st.Call("close")) })
	got := wantResolve(t, st.Call("get", "orders/k1"))
	if got.Get("_rev").String() != doc.Get("_rev").String() {
		t.Errorf("reopened _rev = %v, want %v", got.Get("_rev"), doc.Get("_rev"))
	}
	if n := wantResolve(t, st.Call("pending")).Int(); n != 1 {
		t.Errorf("pending after reopen = %d, want 1", n)
	}
	appends := mem.Get("appends").Int()
	wantResolve(t, st.Call("flush")) // nothing changed: nothing appended
	if got := mem.Get("appends").Int(); got != appends {
		t.Errorf("flush without changes appended (%d appends, want %d)", got, appends)
	}
	// A write is durable when put resolves: appended before, not after.
	wantResolve(t, st.Call("put", "orders", `{"_key":"k2"}`))
	if got := mem.Get("appends").Int(); got != appends+1 {
		t.Errorf("put resolved after %d appends, want %d", got, appends+1)
	}
}

// TestRelaxedDurability: a relaxed store answers before the append, and
// flush waits for it.
func TestRelaxedDurability(t *testing.T) {
	a := newAPI()
	mem := jsObject.New()
	adapter := js.Global().Get("Function").New(memoryAdapter).Invoke()
	opts := map[string]any{"url": "ws://127.0.0.1:1/v1/sync", "database": "shop", "persist": adapter.Invoke(mem), "durability": "relaxed"}
	st := wantResolve(t, a.value.Call("openStore", opts))
	wantResolve(t, st.Call("put", "orders", `{"_key":"k1"}`))
	wantResolve(t, st.Call("flush"))
	if mem.Get("appends").IsUndefined() {
		t.Error("flush of a relaxed store appended nothing")
	}
	wantResolve(t, st.Call("close"))
	bad := map[string]any{"url": "ws://127.0.0.1:1/v1/sync", "database": "shop", "persist": adapter.Invoke(mem), "durability": "sometimes"}
	wantReject(t, a.value.Call("openStore", bad), "bad_request", 400)
}

// TestMeta: the persister keeps the node tag and each HiLo tag's journal
// entry through the adapter, and a failed save is an error that leaves the
// previous entry.
func TestMeta(t *testing.T) {
	mem := jsObject.New()
	adapter := js.Global().Get("Function").New(memoryAdapter).Invoke()
	p, err := loadPersister(adapter.Invoke(mem))
	if err != nil {
		t.Fatal(err)
	}
	entry := `{"range":{"Prefix":"orders/","Low":33,"High":64,"LastSize":32,"ServerTag":"A"},"mark":40}`
	if err := p.SaveRange("orders", []byte(entry)); err != nil {
		t.Fatalf("SaveRange: %v", err)
	}
	if err := p.SaveNode("QZ"); err != nil {
		t.Fatalf("SaveNode: %v", err)
	}
	// A new persister (a reload) finds them.
	p2, err := loadPersister(adapter.Invoke(mem))
	if err != nil {
		t.Fatal(err)
	}
	node, ranges, err := p2.LoadMeta()
	if err != nil || node != "QZ" || string(ranges["orders"]) != entry || len(ranges) != 1 {
		t.Errorf("LoadMeta = %q, %q, %v; want QZ and the entry saved", node, ranges, err)
	}
	// A failed journal write is an error, so HiLo hands out nothing from it.
	mem.Set("failRanges", true)
	err = p2.SaveRange("orders", []byte(`{"mark":48}`))
	if code, num := describe(err); code != "unavailable" || num != 503 {
		t.Errorf("SaveRange on a failing adapter = %v (%s %d), want unavailable 503", err, code, num)
	}
	p3, _ := loadPersister(adapter.Invoke(mem))
	if _, ranges, _ := p3.LoadMeta(); string(ranges["orders"]) != entry {
		t.Errorf("entry after a failed save = %s, want the previous one", ranges["orders"])
	}
}

// TestPersistedHiLoAcrossReloads: a persisted store that has a journaled
// range and reserve makes HiLo ids offline after a reopen, from where the
// last session stopped, and keeps what is left at close.
func TestPersistedHiLoAcrossReloads(t *testing.T) {
	a := newAPI()
	mem := jsObject.New()
	ranges := jsObject.New()
	ranges.Set("orders", `{"range":{"Prefix":"orders/","Low":1,"High":4,"LastSize":4,"ServerTag":"A"},"mark":2,`+
		`"reserve":[{"Prefix":"orders/","Low":5,"High":8,"LastSize":4,"ServerTag":"A"}]}`)
	mem.Set("ranges", ranges)
	adapter := js.Global().Get("Function").New(memoryAdapter).Invoke()
	open := func() js.Value {
		opts := map[string]any{"url": "ws://127.0.0.1:1/v1/sync", "database": "shop", "persist": adapter.Invoke(mem)}
		return wantResolve(t, a.value.Call("openStore", opts))
	}
	st := open()
	var got []string
	for range 3 {
		got = append(got, wantResolve(t, st.Call("put", "orders", `{}`)).Get("_id").String())
	}
	wantResolve(t, st.Call("close"))
	if want := "orders/3-A orders/4-A orders/5-A"; strings.Join(got, " ") != want {
		t.Errorf("offline ids %v, want %s", got, want)
	}
	st = open()
	t.Cleanup(func() { await(t, st.Call("close")) })
	if id := wantResolve(t, st.Call("put", "orders", `{}`)).Get("_id").String(); id != "orders/6-A" {
		t.Errorf("after a reopen: %s, want orders/6-A", id)
	}
}

func TestMergeFunctionFallsBack(t *testing.T) {
	local := core.Version{ID: "orders/k", Rev: "l", Doc: []byte(`{"v":"local"}`)}
	remote := core.Version{ID: "orders/k", Rev: "r", Doc: []byte(`{"v":"remote"}`)}
	tests := []struct {
		name    string
		fn      string // the body of a function (local, remote) returning {kind, ...}
		want    string // rev of the version kept, "" for a new one
		deleted bool
		failed  bool
	}{
		{"remote", `return {kind: 'remote'}`, "r", false, false},
		{"local", `return {kind: 'local'}`, "l", false, false},
		{"merged", `return {kind: 'doc', doc: '{"v":"both"}'}`, "", false, false},
		{"delete", `return {kind: 'delete'}`, "", true, false},
		{"error", `return {kind: 'error', message: 'no'}`, "r", false, true},
		{"throws", `throw new Error('boom')`, "r", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errs []string
			emit := js.FuncOf(func(_ js.Value, args []js.Value) any {
				errs = append(errs, args[0].String()+" "+args[1].Get("code").String())
				return nil
			})
			defer emit.Release()
			fn := js.Global().Get("Function").New("local", "remote", tt.fn)
			res, err := jsResolver(fn, &events{emit: emit.Value})(local, remote)
			if err != nil {
				t.Fatalf("resolver error %v, want none: it must never stall replication", err)
			}
			if res.Rev != tt.want || res.Deleted != tt.deleted {
				t.Errorf("kept rev %q deleted %v, want %q %v", res.Rev, res.Deleted, tt.want, tt.deleted)
			}
			if tt.failed != (len(errs) == 1 && errs[0] == "error merge_failed") {
				t.Errorf("error events %v, want merge_failed: %v", errs, tt.failed)
			}
		})
	}
}

// collection() takes a receipt's key and seq after its options: a write
// stores the receipt with its result (receipt() reads it back), a read
// stores none, and a bad receipt is refused.
func TestCollectionReceipts(t *testing.T) {
	a := newAPI()
	st := openOffline(t, a)
	undef := js.Undefined()

	res := wantResolve(t, st.Call("collection", "save", "orders", `{"_key":"r1"}`, `{"returnNew":true}`, "tab/l/1", 3))
	text := wantResolve(t, st.Call("receipt", "tab/l/1"))
	var r core.Receipt
	if err := json.Unmarshal([]byte(text.String()), &r); err != nil {
		t.Fatal(err)
	}
	if r.Seq != 3 || len(r.Items) != 1 || r.Items[0].ID != "orders/r1" || r.Items[0].Rev != res.Get("_rev").String() || len(r.Items[0].New) == 0 {
		t.Errorf("receipt of a save %+v, answer _rev %v", r, res.Get("_rev"))
	}

	wantResolve(t, st.Call("collection", "create", "invoices", `{}`, undef, "tab/l/2", 4))
	if text := wantResolve(t, st.Call("receipt", "tab/l/2")); !strings.Contains(text.String(), `"seq":4`) {
		t.Errorf("receipt of a create: %v", text)
	}

	wantResolve(t, st.Call("collection", "count", "orders", undef, undef, "tab/l/3", 5))
	if v := wantResolve(t, st.Call("receipt", "tab/l/3")); !v.IsUndefined() {
		t.Errorf("a count stored a receipt: %v", v)
	}
	wantReject(t, st.Call("collection", "save", "orders", `{}`, undef, "tab/l/4", "5"), "bad_request", 400)
}
