package client

import "context"

// conn is the client's transport: one websocket to the sync server carrying
// text messages, each a JSON document. dial opens one; it has two
// implementations, chosen by build tags: transport_native.go over
// coder/websocket, and transport_js.go over the host's WebSocket.
//
// The methods are safe for concurrent use, but the client has one reader at
// a time.
type conn interface {
	// ReadText returns the next text message. A binary message or one larger
	// than the read limit ends the connection with an error, as does the
	// connection closing.
	ReadText(ctx context.Context) ([]byte, error)
	// WriteText sends msg as one text message.
	WriteText(ctx context.Context, msg []byte) error
	// Close closes the connection with status 1000 (the only one browsers let
	// a script send) and reason, waiting a bounded time for the closing
	// handshake. A connection already closed by the peer is not an error.
	Close(reason string) error
}
