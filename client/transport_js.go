//go:build js && wasm

package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall/js"
	"time"
	"unsafe"
)

// closeWait bounds how long Close waits for the host's close event. workerd
// may never deliver it once the request that opened the socket has ended.
const closeWait = 5 * time.Second

// maxCloseReason is the longest close reason, in bytes, a host accepts.
const maxCloseReason = 123

// readyOpen is WebSocket.OPEN.
const readyOpen = 1

// jsObject is JavaScript's Object.
var jsObject = js.Global().Get("Object")

// errNoWebSocket is returned by dial when the host has no WebSocket global.
var errNoWebSocket = errors.New("websocket: this host has no global WebSocket")

// jsConn is the transport under GOOS=js: the host's WebSocket, driven
// through syscall/js.
//
// The host calls the event listeners from its event loop, and Go runs each on
// the goroutine that entered from JavaScript; until it returns, the event
// loop, and with it every event that could unblock it, waits. So listeners
// never wait: they append to an unbounded queue, signal a one-slot channel
// and return. Nor do they, or anything calling into JavaScript, hold mu while
// doing so: a JavaScript call may run a listener on the same goroutine.
type jsConn struct {
	ws    js.Value
	limit int64

	opened chan struct{} // closed by the open event
	ready  chan struct{} // one slot: a message was queued
	done   chan struct{} // closed by end; err is set by then

	mu        sync.Mutex
	isOpen    bool
	queue     [][]byte
	err       error              // why the connection ended
	listeners map[string]js.Func // nil once ended and released
}

var _ conn = (*jsConn)(nil)

// dial opens the host's WebSocket to url and waits for it to open, to fail
// (an error or close event, as when the server is unreachable) or for ctx to
// end. Messages from the server may be at most readLimit bytes.
func dial(ctx context.Context, url string, readLimit int64) (conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctor := js.Global().Get("WebSocket")
	if ctor.Type() != js.TypeFunction {
		return nil, errNoWebSocket
	}
	c := &jsConn{
		limit:  readLimit,
		opened: make(chan struct{}),
		ready:  make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	// The constructor throws for a malformed URL, or one the host refuses.
	if err := catch(func() { c.ws = ctor.New(url) }); err != nil {
		return nil, fmt.Errorf("websocket: %w", err)
	}
	c.ws.Set("binaryType", "arraybuffer") // no Blob to read asynchronously
	// An error listener that stays after ours are removed: Node's ws emits
	// "error" when a socket still connecting is closed, and an emitter's
	// error event without a listener is an uncaught exception. The no-op is
	// Function.prototype, so no Go callback (and no eval) is involved.
	_ = catch(func() { c.ws.Call("addEventListener", "error", js.Global().Get("Function").Get("prototype")) })
	c.listen()
	select {
	case <-c.opened:
		return c, nil
	case <-c.done:
		return nil, c.endErr()
	case <-ctx.Done():
		c.abandon(ctx.Err(), "dial canceled")
		return nil, ctx.Err()
	}
}

// listen adds the event listeners. Each returns undefined: workerd warns of
// a listener that returns anything else, null included.
func (c *jsConn) listen() {
	undefined := js.Undefined()
	c.listeners = map[string]js.Func{
		"open": js.FuncOf(func(js.Value, []js.Value) any {
			c.mu.Lock()
			first := !c.isOpen && c.listeners != nil
			c.isOpen = true
			c.mu.Unlock()
			if first {
				close(c.opened)
			}
			return undefined
		}),
		"message": js.FuncOf(func(_ js.Value, args []js.Value) any {
			if len(args) > 0 {
				c.received(args[0].Get("data"))
			}
			return undefined
		}),
		"error": js.FuncOf(func(_ js.Value, args []js.Value) any {
			// Browsers say nothing more; Node's ws and workerd have a message.
			err := errors.New("websocket: error")
			if len(args) > 0 {
				if m := args[0].Get("message"); m.Type() == js.TypeString && m.String() != "" {
					err = fmt.Errorf("websocket: %s", m.String())
				}
			}
			// A close event follows; do not wait for it.
			c.end(err)
			return undefined
		}),
		"close": js.FuncOf(func(_ js.Value, args []js.Value) any {
			err := errors.New("websocket: closed")
			if len(args) > 0 {
				ev := args[0]
				err = fmt.Errorf("websocket: closed with status %d", ev.Get("code").Int())
				if r := ev.Get("reason"); r.Type() == js.TypeString && r.String() != "" {
					err = fmt.Errorf("%w: %s", err, r.String())
				}
			}
			c.end(err)
			return undefined
		}),
	}
	for name, fn := range c.listeners {
		c.ws.Call("addEventListener", name, fn)
	}
}

// received queues one message, or ends the connection for a binary one or
// one over the read limit. Browsers refuse to send 1003 or 1009 from
// script, so the host closes with 1000 and the error tells which it is.
func (c *jsConn) received(data js.Value) {
	if data.Type() != js.TypeString {
		c.abandon(errors.New("websocket: binary message from the server (1003 unsupported data): text messages only"), "text messages only")
		return
	}
	// A string has at least as many UTF-8 bytes as UTF-16 code units: a
	// string with too many units need not be copied to be refused. Its
	// length is read through a String object: syscall/js reads properties
	// of objects only.
	n := int64(jsObject.Invoke(data).Length())
	var msg []byte
	if n <= c.limit {
		// The string's own bytes, not a copy of them: a message is only
		// read (decoders slice it, and copy what they keep).
		s := data.String()
		msg = unsafe.Slice(unsafe.StringData(s), len(s))
		n = int64(len(msg))
	}
	if n > c.limit {
		c.abandon(fmt.Errorf("websocket: message of at least %d bytes exceeds the read limit of %d (1009 message too big)", n, c.limit), "message too big")
		return
	}
	c.mu.Lock()
	live := c.listeners != nil
	if live {
		c.queue = append(c.queue, msg)
	}
	c.mu.Unlock()
	if live {
		select {
		case c.ready <- struct{}{}:
		default:
		}
	}
}

// end records why the connection ended, wakes everyone waiting on it, and
// removes and releases the listeners, so no event reaches a released Func.
// Only its first call counts.
func (c *jsConn) end(err error) {
	c.mu.Lock()
	listeners := c.listeners
	if listeners == nil {
		c.mu.Unlock()
		return
	}
	c.listeners = nil
	c.err = err
	c.mu.Unlock()
	close(c.done)
	for name, fn := range listeners {
		_ = catch(func() { c.ws.Call("removeEventListener", name, fn) })
		fn.Release() // allowed while fn runs, as it may: end is called from listeners
	}
}

// endErr returns why the connection ended; call it after done is closed.
func (c *jsConn) endErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// abandon closes the socket without waiting for its close event and ends
// the connection with err.
func (c *jsConn) abandon(err error, reason string) {
	_ = c.closeSocket(reason)
	c.end(err)
}

// closeSocket asks the host to close with 1000 and reason. It does not block.
func (c *jsConn) closeSocket(reason string) error {
	if len(reason) > maxCloseReason {
		reason = reason[:maxCloseReason] // ASCII reasons only, so never mid-rune
	}
	return catch(func() { c.ws.Call("close", 1000, reason) })
}

func (c *jsConn) ReadText(ctx context.Context) ([]byte, error) {
	for {
		// Messages that arrived before the end are still delivered.
		c.mu.Lock()
		if len(c.queue) > 0 {
			msg := c.queue[0]
			c.queue[0] = nil
			c.queue = c.queue[1:]
			c.mu.Unlock()
			return msg, nil
		}
		err := c.err
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case <-c.ready:
		case <-c.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// WriteText hands msg to the host, which buffers it: sending never blocks,
// so ctx is only checked first.
func (c *jsConn) WriteText(ctx context.Context, msg []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-c.done:
		return c.endErr()
	default:
	}
	// A closing socket drops what it is given without an error: refuse first.
	if state := c.ws.Get("readyState").Int(); state != readyOpen {
		return fmt.Errorf("websocket: not open (readyState %d)", state)
	}
	// JavaScript copies the text during the call: a string over msg's own
	// bytes spares a Go copy of a push of megabytes.
	if err := catch(func() { c.ws.Call("send", unsafe.String(unsafe.SliceData(msg), len(msg))) }); err != nil {
		return fmt.Errorf("websocket: send: %w", err)
	}
	return nil
}

// Close closes with 1000 and waits, at most closeWait, for the close event.
func (c *jsConn) Close(reason string) error {
	select {
	case <-c.done:
		return nil
	default:
	}
	if err := c.closeSocket(reason); err != nil {
		c.end(fmt.Errorf("websocket: close: %w", err))
		return fmt.Errorf("websocket: %w", err)
	}
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		c.end(fmt.Errorf("websocket: no close event within %v of closing", closeWait))
	}
	return nil
}

// catch runs fn, which calls into JavaScript, and returns what it threw as
// an error rather than a panic.
func catch(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			jerr, ok := r.(js.Error)
			if !ok {
				panic(r)
			}
			err = jerr
		}
	}()
	fn()
	return nil
}
