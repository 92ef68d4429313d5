package servertest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// Answer is what a Scripted server sends in reply to the request with id
// and op: a message of type typ (nil msg: nothing).
type Answer func(op string, id int64) (typ websocket.MessageType, msg []byte)

// Scripted serves a websocket on 127.0.0.1 that answers each request with
// answer: a stand-in for a server that speaks less than this one (an older
// version) or breaks the protocol on purpose, parts the real server cannot
// play. It returns the URL to dial and a channel that gets the close status
// of the first connection that ends; the test's cleanup stops it.
func Scripted(t testing.TB, answer Answer) (url string, closed <-chan websocket.StatusCode) {
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
				select {
				case status <- websocket.CloseStatus(err):
				default:
				}
				return
			}
			var req struct {
				ID int64  `json:"id"`
				Op string `json:"op"`
			}
			_ = json.Unmarshal(data, &req)
			if typ, msg := answer(req.Op, req.ID); msg != nil {
				if err := ws.Write(ctx, typ, msg); err != nil {
					return
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/sync", status
}
