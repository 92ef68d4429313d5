//go:build !js

package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/coder/websocket"
)

// wsConn is the native transport, a coder/websocket connection.
type wsConn struct {
	ws *websocket.Conn
}

var _ conn = wsConn{}

// dial opens a websocket to url whose messages from the server may be at
// most readLimit bytes; a larger one closes it with 1009.
func dial(ctx context.Context, url string, readLimit int64) (conn, error) {
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(readLimit)
	return wsConn{ws: ws}, nil
}

func (c wsConn) ReadText(ctx context.Context) ([]byte, error) {
	typ, data, err := c.ws.Read(ctx)
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageText {
		_ = c.ws.Close(websocket.StatusUnsupportedData, "text messages only")
		return nil, fmt.Errorf("websocket: %v message from the server: text messages only", typ)
	}
	return data, nil
}

func (c wsConn) WriteText(ctx context.Context, msg []byte) error {
	return c.ws.Write(ctx, websocket.MessageText, msg)
}

func (c wsConn) Close(reason string) error {
	err := c.ws.Close(websocket.StatusNormalClosure, reason)
	var ce websocket.CloseError
	if err == nil || errors.Is(err, context.Canceled) || errors.As(err, &ce) {
		// A CloseError is the peer's close frame: the handshake completed.
		return nil
	}
	return err
}
