//go:build js && wasm

package main

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"syscall/js"
	"time"
)

// turnHeader carries a request's turn token from the glue to Go. The glue
// sets it on every request, replacing any value a client sent, and the Go
// side removes it before the API handler sees the request.
const turnHeader = "X-Hilodb-Turn"

// turnWait bounds how long a finished response waits for its request's turn;
// the glue gives up on a request after 20 s.
const turnWait = 30 * time.Second

// turns writes every response during a JS turn of its own request.
//
// One Go instance serves every request of an isolate, and a goroutine runs
// in whichever JS turn made it runnable: a request that waits on a HiLo
// lease another request started wakes up inside that other request's socket
// event. workerd binds I/O objects, the Response body stream among them, to
// the request in whose turn they were created, so a response built there
// fails with "Cannot perform I/O on behalf of a different request".
//
// The same holds for a request's connection to the sync server: opened in
// another request's turn, it belongs to that request and dies with it; and
// a goroutine woken in another request's turn (by a lease, or a lock
// released there) cannot write to its own request's socket.
//
// So a goroutine that is about to do I/O for its request first enters that
// request's turn: it asks the glue to wake the request (wakeTurn settles a
// promise the request created, and workerd runs the continuation in the
// request's own turn), the continuation calls resumeTurn, and the goroutine
// goes on during that call. The handler's response is buffered and written
// after entering the turn; every call to the sync server, and the hang-up,
// enters the turn first (see remote.enterTurn).
//
// A turns is safe for concurrent use.
type turns struct {
	wake js.Value // the glue's wakeTurn(token)

	mu      sync.Mutex
	waiting map[string]chan struct{}
}

// newTurns installs the resumeTurn binding for the glue and returns the
// turns, or nil when the glue offers no wakeTurn (responses are then written
// in whatever turn they are ready in).
func newTurns(binding js.Value) *turns {
	wake := binding.Get("wakeTurn")
	if wake.Type() != js.TypeFunction {
		return nil
	}
	t := &turns{wake: wake, waiting: make(map[string]chan struct{})}
	// resumeTurn must not block: it runs inside a JS call. It only lets the
	// waiting goroutine go on, which Go then runs before returning to JS.
	binding.Set("resumeTurn", js.FuncOf(func(_ js.Value, args []js.Value) any {
		if len(args) > 0 && args[0].Type() == js.TypeString {
			t.resume(args[0].String())
		}
		return nil
	}))
	return t
}

func (t *turns) resume(token string) {
	t.mu.Lock()
	ch := t.waiting[token]
	delete(t.waiting, token)
	t.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// turnKey is the context key of a request's turn token.
type turnKey struct{}

// enter returns during a JS turn of the request ctx belongs to, or false if
// that request did not come back within turnWait. Without a turn token in
// ctx it returns true at once.
func (t *turns) enter(ctx context.Context) bool {
	token, _ := ctx.Value(turnKey{}).(string)
	if t == nil || token == "" {
		return true
	}
	return t.await(token)
}

// await returns during a JS turn of the request holding token, or false if
// the request did not come back within turnWait.
func (t *turns) await(token string) bool {
	ch := make(chan struct{})
	t.mu.Lock()
	t.waiting[token] = ch
	t.mu.Unlock()
	t.wake.Invoke(token)
	timer := time.NewTimer(turnWait)
	defer timer.Stop()
	select {
	case <-ch:
		return true
	case <-timer.C:
		t.mu.Lock()
		delete(t.waiting, token)
		t.mu.Unlock()
		return false
	}
}

// wrap returns h with its responses written in their requests' own turns.
func (t *turns) wrap(h http.Handler) http.Handler {
	if t == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := r.Header.Get(turnHeader)
		r.Header.Del(turnHeader)
		if token == "" {
			h.ServeHTTP(w, r)
			return
		}
		buf := &bufferedResponse{header: make(http.Header)}
		h.ServeHTTP(buf, r.WithContext(context.WithValue(r.Context(), turnKey{}, token)))
		if !t.await(token) {
			return // the request is gone; nobody would read the answer
		}
		buf.writeTo(w)
	})
}

// bufferedResponse is an http.ResponseWriter that keeps the whole response
// for writing later.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	return b.body.Write(p)
}

func (b *bufferedResponse) writeTo(w http.ResponseWriter) {
	for k, v := range b.header {
		w.Header()[k] = v
	}
	if b.status == 0 {
		b.status = http.StatusOK
	}
	w.WriteHeader(b.status)
	_, _ = w.Write(b.body.Bytes())
}
