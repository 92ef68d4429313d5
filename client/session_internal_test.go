package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hilodb/hilodb/internal/wire"
)

// TestSessionLive: a session whose reader has ended is not used for a
// call, even before the reader has cleared it from the client: a call woken
// by the cut connection may ask for a session in between (it then failed
// with the broken connection's error instead of dialing again).
func TestSessionLive(t *testing.T) {
	running := &session{done: make(chan struct{})}
	ended := &session{done: make(chan struct{})}
	close(ended.done)
	dropped := &session{done: make(chan struct{})}
	dropped.dead.Store(true)
	for _, tc := range []struct {
		name string
		s    *session
		want bool
	}{
		{"reader running", running, true},
		{"reader ended", ended, false},
		{"given up on", dropped, false},
		{"none", nil, false},
	} {
		if got := tc.s.live(); got != tc.want {
			t.Errorf("%s: live() = %v, want %v", tc.name, got, tc.want)
		}
		c := &Client{}
		c.setSession(tc.s)
		if got := c.Connected(); got != tc.want {
			t.Errorf("%s: Connected() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// failingConn is a connection whose writes fail, as a cut one's do before
// its reader notices.
type failingConn struct{ closed chan string }

func (f *failingConn) ReadText(context.Context) ([]byte, error) { select {} }
func (f *failingConn) WriteText(context.Context, []byte) error  { return errors.New("broken pipe") }
func (f *failingConn) Close(reason string) error {
	f.closed <- reason
	return nil
}

// TestFailedWriteGivesUpTheSession: a call whose write fails leaves no
// session for the next call to write to; it is closed, so its reader ends.
func TestFailedWriteGivesUpTheSession(t *testing.T) {
	fc := &failingConn{closed: make(chan string, 1)}
	s := &session{conn: fc, pending: map[int64]chan []byte{}, done: make(chan struct{})}
	c := &Client{urls: []string{"ws://127.0.0.1:1/v1/sync"}}
	c.setSession(s)
	err := c.roundTrip(context.Background(), s, 1, wire.Ping{ID: 1, Op: wire.OpPing}, nil)
	if !errors.Is(err, ErrDisconnected) {
		t.Fatalf("roundTrip = %v, want ErrDisconnected", err)
	}
	if c.Connected() {
		t.Error("Connected() after a failed write")
	}
	select {
	case reason := <-fc.closed:
		if reason != "write failed" {
			t.Errorf("closed with %q", reason)
		}
	case <-time.After(5 * time.Second):
		t.Error("the session was not closed")
	}
	// A write that failed because the caller gave up says nothing of the
	// connection: the session stays.
	s2 := &session{conn: fc, pending: map[int64]chan []byte{}, done: make(chan struct{})}
	c.setSession(s2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = c.roundTrip(ctx, s2, 2, wire.Ping{ID: 2, Op: wire.OpPing}, nil)
	if !c.Connected() {
		t.Error("a cancelled call gave up a session")
	}
}
