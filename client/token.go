package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hilodb/hilodb/internal/wire"
)

// ErrToken wraps the error of Options.TokenFunc.
var ErrToken = errors.New("get token")

// refreshWithin bounds a refresh on a live connection: the server warns
// 30 seconds before the token expires, and closes the connection then.
const refreshWithin = 25 * time.Second

// token returns the token for the next hello: Options.TokenFunc's, or
// Options.Token.
func (c *Client) token(ctx context.Context) (string, error) {
	if c.opts.TokenFunc == nil {
		return c.opts.Token, nil
	}
	t, err := c.opts.TokenFunc(ctx)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrToken, err)
	}
	return t, nil
}

// refreshToken answers the server's token_expiring on s: a fresh token
// from Options.TokenFunc goes to the live connection with an auth op.
// Without a TokenFunc, or if it fails, nothing is done: the server closes
// the connection at expiry and the next call connects with a fresh token.
func (c *Client) refreshToken(s *session) {
	if c.opts.TokenFunc == nil || !s.refreshing.CompareAndSwap(false, true) {
		return
	}
	defer s.refreshing.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), refreshWithin)
	defer cancel()
	token, err := c.token(ctx)
	if err != nil || !s.live() {
		return
	}
	id := c.nextID.Add(1)
	_ = c.roundTrip(ctx, s, id, wire.Auth{ID: id, Op: wire.OpAuth, Token: token}, nil)
}

// isUnauthorized reports whether err is the server's unauthorized reply.
func isUnauthorized(err error) bool {
	var we *wire.Error
	return errors.As(err, &we) && we.Code == wire.CodeUnauthorized
}
