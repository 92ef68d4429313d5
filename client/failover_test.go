//go:build !js

package client_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/internal/servertest"
	"github.com/hilodb/hilodb/syncserver"
)

// deadURL is a loopback address nothing listens on.
func deadURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "ws://" + addr + "/v1/sync"
}

// hungURL is a loopback address that accepts connections and never answers.
func hungURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	return "ws://" + ln.Addr().String() + "/v1/sync"
}

func TestFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tests := []struct {
		name  string
		first func(t *testing.T) string
	}{
		{"unreachable", deadURL},
		{"not answering", hungURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, _ := servertest.Serve(t, syncserver.Config{DataDir: t.TempDir(), ServerTag: "B"}, "127.0.0.1:0")
			live := "ws://" + addr + "/v1/sync"
			c := client.New(tt.first(t), client.Options{Database: "shop", URLs: []string{live}, RequestTimeout: 500 * time.Millisecond})
			defer c.Close()
			v, err := c.NextIdentity(ctx, "companies")
			if err != nil || v != 1 {
				t.Fatalf("identity through the second server: %d, %v", v, err)
			}
			if c.URL() != live || c.ServerTag() != "B" {
				t.Errorf("in use: %s (tag %s), want %s", c.URL(), c.ServerTag(), live)
			}
		})
	}

	t.Run("server gone mid-session", func(t *testing.T) {
		addrA, stopA := servertest.Serve(t, syncserver.Config{DataDir: t.TempDir(), ServerTag: "S"}, "127.0.0.1:0")
		addrB, _ := servertest.Serve(t, syncserver.Config{DataDir: t.TempDir(), ServerTag: "T"}, "127.0.0.1:0")
		c := client.New("ws://"+addrA+"/v1/sync", client.Options{Database: "shop", URLs: []string{"ws://" + addrB + "/v1/sync"}})
		defer c.Close()
		if _, err := c.NextIdentity(ctx, "companies"); err != nil || c.ServerTag() != "S" {
			t.Fatalf("first server: %v (tag %s)", err, c.ServerTag())
		}
		node := c.Node()
		stopA()
		// Calls made before the client has seen the connection end fail with
		// ErrDisconnected (how many depends on the machine's load); then one
		// dials the next server.
		var err error
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err = c.NextIdentity(ctx, "companies"); err == nil {
				break
			}
			if !errors.Is(err, client.ErrDisconnected) {
				t.Fatalf("call as the server went: %v", err)
			}
		}
		if err != nil || c.ServerTag() != "T" {
			t.Fatalf("after the first server went: %v (tag %s)", err, c.ServerTag())
		}
		if c.Node() != node {
			t.Errorf("node tag %s after the move, had %s", c.Node(), node)
		}
	})

	t.Run("refusal is not a failure", func(t *testing.T) {
		addrA, _ := servertest.Serve(t, syncserver.Config{DataDir: t.TempDir(), Tokens: map[string]string{"shop": "secret"}}, "127.0.0.1:0")
		addrB, _ := servertest.Serve(t, syncserver.Config{DataDir: t.TempDir()}, "127.0.0.1:0")
		c := client.New("ws://"+addrA+"/v1/sync", client.Options{Database: "shop", Token: "wrong", URLs: []string{"ws://" + addrB + "/v1/sync"}})
		defer c.Close()
		_, err := c.NextIdentity(ctx, "companies")
		var e *client.Error
		if !errors.As(err, &e) || e.Code != "unauthorized" {
			t.Fatalf("wrong token: %v, want unauthorized from the first server, not a move", err)
		}
	})
}

// TestRefusalIsNeverLost: a server that refuses a hello answers with the
// error and then closes the connection; the client reports the error, never
// a bare disconnect, however the reply and the close are scheduled.
func TestRefusalIsNeverLost(t *testing.T) {
	addr, _ := servertest.Serve(t, syncserver.Config{DataDir: t.TempDir(), Tokens: map[string]string{"shop": "secret"}}, "127.0.0.1:0")
	ctx := context.Background()
	for i := range 300 {
		c := client.New("ws://"+addr+"/v1/sync", client.Options{Database: "shop", Token: "wrong"})
		_, err := c.NextIdentity(ctx, "companies")
		c.Close()
		var e *client.Error
		if !errors.As(err, &e) || e.Code != "unauthorized" {
			t.Fatalf("attempt %d: %v, want unauthorized", i, err)
		}
	}
}
