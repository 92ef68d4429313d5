//go:build !js

package client

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/internal/servertest"
	"github.com/hilodb/hilodb/syncserver"
)

// brokenOnce is a live connection whose next write fails, as a cut one's
// does before its reader notices; it reads nothing.
type brokenOnce struct {
	conn
	mu     sync.Mutex
	broken bool
}

func (b *brokenOnce) WriteText(ctx context.Context, msg []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.broken {
		b.broken = true
		return errors.New("use of closed network connection")
	}
	return b.conn.WriteText(ctx, msg)
}

// TestWriteFailureRetriedOnce: a call whose write fails goes once more on a
// new connection and succeeds; the lease it asked for is made once (the
// next range follows the last), and the session it failed on is given up.
func TestWriteFailureRetriedOnce(t *testing.T) {
	addr, stop := servertest.Serve(t, syncserver.Config{DataDir: t.TempDir()}, "127.0.0.1:0")
	defer stop()
	c := New("ws://"+addr+"/v1/sync", Options{Database: "shop"})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r1, err := c.NextRange(ctx, "orders", idgen.Range{})
	if err != nil {
		t.Fatal(err)
	}
	dead := breakNextWrite(t, c)
	r2, err := c.NextRange(ctx, "orders", r1)
	if err != nil {
		t.Fatalf("NextRange after a failed write: %v", err)
	}
	if r2.Low != r1.High+1 {
		t.Errorf("range after the retry starts at %d, want %d: the failed write leased one", r2.Low, r1.High+1)
	}
	if dead.live() {
		t.Error("the session whose write failed is still in use")
	}
	// When no new connection can be made either, the call fails.
	breakNextWrite(t, c)
	c.mu.Lock()
	c.urls = []string{"ws://127.0.0.1:1/v1/sync"} // the redial fails too
	c.mu.Unlock()
	if _, err := c.NextRange(ctx, "orders", r2); !errors.Is(err, ErrDisconnected) {
		t.Fatalf("NextRange with no server: %v, want ErrDisconnected", err)
	}
}

// breakNextWrite hands c's next call a session whose connection fails its
// first write; a session with no reader, so the test decides when it
// fails. The session it replaces is closed when the test ends.
func breakNextWrite(t *testing.T, c *Client) *session {
	dead := &session{conn: &brokenOnce{conn: failingReads{}}, pending: map[int64]chan []byte{}, done: make(chan struct{})}
	c.mu.Lock()
	old := c.sess
	c.sess = dead
	c.mu.Unlock()
	t.Cleanup(func() { old.conn.Close("test over") })
	return dead
}

// failingReads is a connection that never reads anything and writes
// nowhere; brokenOnce fails its first write.
type failingReads struct{}

func (failingReads) ReadText(ctx context.Context) ([]byte, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (failingReads) WriteText(context.Context, []byte) error { return errors.New("nowhere to write") }
func (failingReads) Close(string) error                      { return nil }
