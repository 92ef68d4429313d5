//go:build !js

package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/internal/servertest"
)

// scriptedServer accepts websockets, answers hello, then answers each
// request with a message of type typ: {"id":…,"ok":true} padded with pad
// bytes. It reports the close status it got.
func scriptedServer(t *testing.T, typ websocket.MessageType, pad int) (string, <-chan websocket.StatusCode) {
	t.Helper()
	return servertest.Scripted(t, func(op string, id int64) (websocket.MessageType, []byte) {
		if op == "hello" {
			reply, _ := json.Marshal(map[string]any{"id": id, "ok": true, "serverTag": "A", "node": "n1"})
			return websocket.MessageText, reply
		}
		reply, _ := json.Marshal(map[string]any{"id": id, "ok": true, "pad": strings.Repeat("x", pad)})
		return typ, reply
	})
}

func TestTransportEndsConnection(t *testing.T) {
	tests := []struct {
		name       string
		typ        websocket.MessageType
		pad        int
		wantStatus websocket.StatusCode
	}{
		{"binary message", websocket.MessageBinary, 0, websocket.StatusUnsupportedData},
		{"message over the read limit", websocket.MessageText, 100, websocket.StatusMessageTooBig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, status := scriptedServer(t, tt.typ, tt.pad)
			c := client.New(url, client.Options{Database: "shop", MaxMessageBytes: 64})
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := c.Ping(ctx); !errors.Is(err, client.ErrDisconnected) {
				t.Fatalf("got %v, want ErrDisconnected", err)
			}
			select {
			case got := <-status:
				if got != tt.wantStatus {
					t.Errorf("server got close status %v, want %v", got, tt.wantStatus)
				}
			case <-ctx.Done():
				t.Fatal("the server saw no close")
			}
		})
	}
}

func TestTransportClosesWith1000(t *testing.T) {
	url, status := scriptedServer(t, websocket.MessageText, 0)
	c := client.New(url, client.Options{Database: "shop"})
	if err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if got := <-status; got != websocket.StatusNormalClosure {
		t.Errorf("server got close status %v, want 1000", got)
	}
}
