//go:build !js

package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/hilodb/hilodb/client"
)

// scriptedServer accepts websockets, answers hello, then answers each
// request with a message of type typ: {"id":…,"ok":true} padded with pad
// bytes. It reports the close status it got.
func scriptedServer(t *testing.T, typ websocket.MessageType, pad int) (string, <-chan websocket.StatusCode) {
	t.Helper()
	status := make(chan websocket.StatusCode, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ctx := r.Context()
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				status <- websocket.CloseStatus(err)
				return
			}
			var req struct {
				ID int64  `json:"id"`
				Op string `json:"op"`
			}
			_ = json.Unmarshal(data, &req)
			if req.Op == "hello" {
				reply, _ := json.Marshal(map[string]any{"id": req.ID, "ok": true, "serverTag": "A", "node": "n1"})
				_ = ws.Write(ctx, websocket.MessageText, reply)
				continue
			}
			reply, _ := json.Marshal(map[string]any{"id": req.ID, "ok": true, "pad": strings.Repeat("x", pad)})
			_ = ws.Write(ctx, typ, reply)
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/sync", status
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
