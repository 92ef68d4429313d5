package syncserver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/coder/websocket"

	"github.com/hilodb/hilodb/syncserver/storage"
)

// FailFsync makes every later fsync of s's data file fail with err.
func FailFsync(s *Server, err error) {
	s.store.(*storage.File).SetSync(func() error { return err })
}

// fakeWS records what a conn writes.
type fakeWS struct {
	mu     sync.Mutex
	out    [][]byte
	closed websocket.StatusCode
}

func (f *fakeWS) Reader(ctx context.Context) (websocket.MessageType, io.Reader, error) {
	return 0, nil, errors.New("fake connection has nothing to read")
}

func (f *fakeWS) SetReadLimit(int64) {}

func (f *fakeWS) Write(ctx context.Context, typ websocket.MessageType, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out = append(f.out, append([]byte(nil), p...))
	return nil
}

func (f *fakeWS) Close(code websocket.StatusCode, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = code
	return nil
}

func (f *fakeWS) CloseNow() error { return f.Close(websocket.StatusAbnormalClosure, "") }

// HandleFrames feeds frames, in order, to one new loopback connection of s
// without a network, and returns every message the server wrote and whether
// it closed the connection.
func HandleFrames(s *Server, frames ...[]byte) (replies [][]byte, closed bool) {
	ws := &fakeWS{}
	r, _ := http.NewRequest(http.MethodGet, "/v1/sync", nil)
	r.RemoteAddr = "127.0.0.1:1"
	c := newConn(s, ws, r)
	for _, f := range frames {
		c.handle(context.Background(), f)
		if c.closing {
			break
		}
	}
	c.drain()
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.out, ws.closed != 0
}

// TestConn is one loopback connection of a Server driven frame by frame,
// without a network: several of them interleave requests as clients do.
type TestConn struct {
	c  *conn
	ws *fakeWS
}

// NewTestConn opens a TestConn on s.
func NewTestConn(s *Server) *TestConn {
	ws := &fakeWS{}
	r, _ := http.NewRequest(http.MethodGet, "/v1/sync", nil)
	r.RemoteAddr = "127.0.0.1:1"
	return &TestConn{c: newConn(s, ws, r), ws: ws}
}

// Handle feeds one frame and returns what the server wrote in answer, and
// whether the connection is closed.
func (tc *TestConn) Handle(frame []byte) (replies [][]byte, closed bool) {
	if !tc.c.closing {
		tc.c.handle(context.Background(), frame)
		tc.c.drain()
	}
	tc.ws.mu.Lock()
	defer tc.ws.mu.Unlock()
	replies, tc.ws.out = tc.ws.out, nil
	return replies, tc.c.closing
}

// Close ends the connection as the server does when a client goes.
func (tc *TestConn) Close() { tc.c.runClosers() }
