//go:build js && wasm

package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall/js"
	"testing"
	"time"

	"github.com/hilodb/hilodb/client"
)

// fakeWebSocketJS defines a WebSocket class with the browser's rules and a
// scripted server behind it; every event is dispatched from a timer, as a
// host would, never from inside the call that caused it. FakeWebSocket.mode
// picks how a dial goes: "open", "refuse" (error, then close 1006) or
// "hang". The server answers every request with ok, a server tag and a node
// tag; push(data) sends one message of the server's own.
const fakeWebSocketJS = `
class FakeWebSocket extends EventTarget {
  static mode = "open";
  static sockets = [];
  constructor(url) {
    super();
    if (!url.startsWith("ws://")) throw new DOMException("bad URL " + url, "SyntaxError");
    this.url = url;
    this.readyState = 0;
    this.binaryType = "blob";
    this.sent = [];
    this.closes = [];
    this.listeners = 0;
    FakeWebSocket.sockets.push(this);
    const mode = FakeWebSocket.mode;
    if (mode === "open") this.later(() => { this.readyState = 1; this.dispatchEvent(new Event("open")); });
    if (mode === "refuse") this.later(() => this.fail("connect ECONNREFUSED 127.0.0.1:1"));
  }
  later(fn) { setTimeout(fn, 5); }
  failLater(message) { this.later(() => this.fail(message)); }
  closeLater(code, reason) { this.later(() => this.closed(code, reason)); }
  fail(message) {
    const err = new Event("error");
    err.message = message;
    this.dispatchEvent(err);
    this.closed(1006, "");
  }
  closed(code, reason) {
    if (this.readyState === 3) return;
    this.readyState = 3;
    const ev = new Event("close");
    ev.code = code;
    ev.reason = reason;
    this.dispatchEvent(ev);
  }
  // Go-backed listeners only: the permanent no-op error listener
  // (Function.prototype) is meant to stay.
  addEventListener(type, fn) { if (fn !== Function.prototype) this.listeners++; super.addEventListener(type, fn); }
  removeEventListener(type, fn) { this.listeners--; super.removeEventListener(type, fn); }
  send(data) {
    if (this.readyState === 0) throw new DOMException("still connecting", "InvalidStateError");
    if (this.readyState !== 1) return;
    this.sent.push(data);
    const req = JSON.parse(data);
    this.push(JSON.stringify({ id: req.id, ok: true, serverTag: "A", node: "n1" }));
  }
  push(data) {
    this.later(() => {
      if (this.readyState !== 1) return;
      const ev = new Event("message");
      ev.data = data;
      this.dispatchEvent(ev);
    });
  }
  close(code, reason) {
    if (code !== undefined && code !== 1000 && !(code >= 3000 && code <= 4999)) {
      throw new DOMException("close code " + code + " is neither 1000 nor in 3000-4999", "InvalidAccessError");
    }
    this.closes.push([code, reason]);
    if (this.readyState >= 2) return;
    this.readyState = 2;
    this.later(() => this.closed(code, reason));
  }
}
return FakeWebSocket;
`

// installFake makes the fake the global WebSocket for the test, in mode.
func installFake(t *testing.T, mode string) js.Value {
	t.Helper()
	fake := js.Global().Get("Function").New(fakeWebSocketJS).Invoke()
	fake.Set("mode", mode)
	old := js.Global().Get("WebSocket")
	js.Global().Set("WebSocket", fake)
	t.Cleanup(func() { js.Global().Set("WebSocket", old) })
	return fake
}

// lastSocket returns the fake's most recent socket.
func lastSocket(t *testing.T, fake js.Value) js.Value {
	t.Helper()
	sockets := fake.Get("sockets")
	if sockets.Length() == 0 {
		t.Fatal("no socket was made")
	}
	return sockets.Index(sockets.Length() - 1)
}

// closes returns the close calls made on sock as "code reason" strings.
func closes(sock js.Value) []string {
	calls := sock.Get("closes")
	var out []string
	for i := range calls.Length() {
		c := calls.Index(i)
		out = append(out, strings.TrimSpace(fmt.Sprint(c.Index(0).Int())+" "+c.Index(1).String()))
	}
	return out
}

// wait waits for ch, failing the test after a second.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Second):
		t.Fatalf("%s: not within a second", what)
	}
}

// settle lets the fake's pending timers run.
func settle() { time.Sleep(50 * time.Millisecond) }

func TestHostWebSocketRoundTripAndClose(t *testing.T) {
	fake := installFake(t, "open")
	c := client.New("ws://fake/v1/sync", client.Options{Database: "shop"})
	if err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := c.ServerTag(); got != "A" {
		t.Errorf("server tag %q, want A", got)
	}
	sock := lastSocket(t, fake)
	if got := sock.Get("binaryType").String(); got != "arraybuffer" {
		t.Errorf("binaryType %q, want arraybuffer", got)
	}
	if sent := sock.Get("sent"); sent.Length() != 2 || sent.Index(0).Type() != js.TypeString {
		t.Errorf("sent %d messages (first a %v), want hello and ping as strings", sent.Length(), sent.Index(0).Type())
	}
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if got := closes(sock); len(got) != 1 || got[0] != "1000" {
		t.Errorf("close calls %q, want one with 1000", got)
	}
	if n := sock.Get("listeners").Int(); n != 0 {
		t.Errorf("%d listeners left after close", n)
	}
	if err := c.Ping(context.Background()); !errors.Is(err, client.ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}

func TestHostWebSocketDialFails(t *testing.T) {
	tests := []struct {
		name    string
		mode    string
		url     string
		timeout time.Duration
		want    []error
		closed  bool // the dial closed the socket itself
	}{
		// Failing at the deadline rather than at the error would be too late.
		{"refused", "refuse", "ws://fake/v1/sync", 10 * time.Second, []error{client.ErrDisconnected}, false},
		{"no answer", "hang", "ws://fake/v1/sync", 100 * time.Millisecond, []error{client.ErrDisconnected, context.DeadlineExceeded}, true},
		{"bad URL", "open", "http://fake/v1/sync", 10 * time.Second, []error{client.ErrDisconnected}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := installFake(t, tt.mode)
			c := client.New(tt.url, client.Options{Database: "shop"})
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			start := time.Now()
			err := c.Ping(ctx)
			for _, want := range tt.want {
				if !errors.Is(err, want) {
					t.Errorf("got %v, want %v", err, want)
				}
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("failed after %v, want promptly", d)
			}
			if fake.Get("sockets").Length() == 0 {
				return // the constructor threw
			}
			sock := lastSocket(t, fake)
			settle()
			if n := sock.Get("listeners").Int(); n != 0 {
				t.Errorf("%d listeners left after a failed dial", n)
			}
			if got := closes(sock); tt.closed && (len(got) != 1 || !strings.HasPrefix(got[0], "1000 ")) {
				t.Errorf("close calls %q, want one with 1000", got)
			}
		})
	}
}

func TestHostWebSocketNone(t *testing.T) {
	old := js.Global().Get("WebSocket")
	js.Global().Set("WebSocket", js.Undefined())
	defer js.Global().Set("WebSocket", old)
	c := client.New("ws://fake/v1/sync", client.Options{Database: "shop"})
	defer c.Close()
	if err := c.Ping(context.Background()); !errors.Is(err, client.ErrDisconnected) {
		t.Fatalf("got %v, want ErrDisconnected", err)
	}
}

func TestHostWebSocketEnds(t *testing.T) {
	tests := []struct {
		name      string
		push      func(sock js.Value)
		wantClose string // the close call the client makes, "" for none
	}{
		{"message over the read limit", func(sock js.Value) {
			sock.Call("push", `{"op":"changes","pad":"`+strings.Repeat("x", 100)+`"}`)
		}, "1000 message too big"},
		{"binary message", func(sock js.Value) {
			sock.Call("push", js.Global().Get("ArrayBuffer").New(8))
		}, "1000 text messages only"},
		{"server closes", func(sock js.Value) {
			sock.Call("closeLater", 1001, "going away")
		}, ""},
		{"socket error", func(sock js.Value) {
			sock.Call("failLater", "read ECONNRESET")
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := installFake(t, "open")
			c := client.New("ws://fake/v1/sync", client.Options{Database: "shop", MaxMessageBytes: 64})
			defer c.Close()
			if err := c.Ping(context.Background()); err != nil {
				t.Fatal(err)
			}
			sock := lastSocket(t, fake)
			done := c.Done()
			tt.push(sock)
			wait(t, done, "connection end")
			settle()
			got := closes(sock)
			if tt.wantClose == "" && len(got) != 0 || tt.wantClose != "" && (len(got) != 1 || got[0] != tt.wantClose) {
				t.Errorf("close calls %q, want %q", got, tt.wantClose)
			}
			if n := sock.Get("listeners").Int(); n != 0 {
				t.Errorf("%d listeners left", n)
			}
			// The next call dials again.
			if err := c.Ping(context.Background()); err != nil {
				t.Fatalf("after reconnect: %v", err)
			}
			if n := fake.Get("sockets").Length(); n != 2 {
				t.Errorf("%d sockets, want 2", n)
			}
		})
	}
}

func TestHostWebSocketCanceled(t *testing.T) {
	installFake(t, "open")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := client.DialTransport(ctx, "ws://fake/v1/sync", 64); !errors.Is(err, context.Canceled) {
		t.Fatalf("dial: got %v, want context.Canceled", err)
	}
	tr, err := client.DialTransport(context.Background(), "ws://fake/v1/sync", 64)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close("")
	rctx, rcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer rcancel()
	if _, err := tr.ReadText(rctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("read: got %v, want context.DeadlineExceeded", err)
	}
	if err := tr.WriteText(ctx, []byte(`{"id":1,"op":"ping"}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("write: got %v, want context.Canceled", err)
	}
	// The connection is still good.
	if err := tr.WriteText(context.Background(), []byte(`{"id":2,"op":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	msg, err := tr.ReadText(context.Background())
	if err != nil || !strings.Contains(string(msg), `"id":2`) {
		t.Fatalf("read: %s, %v", msg, err)
	}
	if err := tr.Close(""); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.ReadText(context.Background()); err == nil || !strings.Contains(err.Error(), "1000") {
		t.Errorf("read after close: got %v, want the close status 1000", err)
	}
}
