//go:build js && wasm

package main

import (
	"context"
	"errors"
	"sync"

	"github.com/hilodb/hilodb/client"
)

// unreachable reports whether err means the server could not be reached, as
// opposed to the server refusing the client.
func unreachable(err error) bool {
	return errors.Is(err, client.ErrDisconnected) || errors.Is(err, context.DeadlineExceeded)
}

// causeKey is the context key of a call's *cause.
type causeKey struct{}

// cause holds the first error the sync layer returned during one call.
type cause struct {
	mu  sync.Mutex
	err error
}

// noteCause records err in ctx's cause, if it has one, and returns err.
func noteCause(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if c, ok := ctx.Value(causeKey{}).(*cause); ok {
		c.mu.Lock()
		if c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
	}
	return err
}

// withCause runs fn with a context that collects the sync layer's errors
// and, when fn fails, joins the first of them to its error so that describe
// finds the sync layer's code.
func withCause(ctx context.Context, fn func(ctx context.Context) error) error {
	c := new(cause)
	err := fn(context.WithValue(ctx, causeKey{}, c))
	if err == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		return err
	}
	return &causedError{err: err, cause: c.err}
}

// causedError is an error from core together with the sync layer's error
// that caused it. Its text is core's; its chain holds both, the cause first.
type causedError struct{ err, cause error }

func (e *causedError) Error() string   { return e.err.Error() }
func (e *causedError) Unwrap() []error { return []error{e.cause, e.err} }
