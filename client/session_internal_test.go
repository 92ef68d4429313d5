package client

import "testing"

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
		c := &Client{sess: tc.s}
		if got := c.Connected(); got != tc.want {
			t.Errorf("%s: Connected() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
