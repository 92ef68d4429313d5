package client

import "context"

// Transport is conn, for the external tests.
type Transport = conn

// DialTransport is dial, for the external tests.
func DialTransport(ctx context.Context, url string, readLimit int64) (Transport, error) {
	return dial(ctx, url, readLimit)
}
