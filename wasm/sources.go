//go:build js && wasm

package main

import (
	"context"
	"errors"
	"sync"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/idgen"
)

// unreachable reports whether err means the server could not be reached, as
// opposed to the server refusing the client.
func unreachable(err error) bool {
	return errors.Is(err, client.ErrDisconnected) || errors.Is(err, context.DeadlineExceeded)
}

// syncSources gives core its HiLo ids and numbers (from the generator) and
// its identities (from the client), and records why a lease failed in the
// cause the call put in its context: core reports such failures in its own
// terms, and the Promise should reject with the sync layer's code, such as
// "unauthorized", or "needs_server" when the server cannot be reached.
type syncSources struct {
	gen    *idgen.Generator
	client *client.Client
}

var (
	_ core.IDSource       = syncSources{}
	_ core.NumberSource   = syncSources{}
	_ core.IdentitySource = syncSources{}
)

// NextID implements core.IDSource.
func (s syncSources) NextID(ctx context.Context, tag string) (string, error) {
	id, err := s.gen.NextID(ctx, tag)
	return id, noteCause(ctx, err)
}

// NextNumber implements core.NumberSource.
func (s syncSources) NextNumber(ctx context.Context, tag string) (int64, string, error) {
	n, serverTag, err := s.gen.NextNumber(ctx, tag)
	return n, serverTag, noteCause(ctx, err)
}

// NextIdentity implements core.IdentitySource.
func (s syncSources) NextIdentity(ctx context.Context, name string) (int64, error) {
	if idgen.IsNoWait(ctx) {
		return 0, noteCause(ctx, idgen.ErrWouldWait)
	}
	v, err := s.client.NextIdentity(ctx, name)
	return v, noteCause(ctx, err)
}

// NextIdentities implements core.IdentitySource.
func (s syncSources) NextIdentities(ctx context.Context, names []string) ([]int64, error) {
	if idgen.IsNoWait(ctx) {
		return nil, noteCause(ctx, idgen.ErrWouldWait)
	}
	vs, err := s.client.NextIdentities(ctx, names)
	return vs, noteCause(ctx, err)
}

// SeedIdentity implements core.IdentitySource.
func (s syncSources) SeedIdentity(ctx context.Context, name string, value int64, force bool) (int64, error) {
	if idgen.IsNoWait(ctx) {
		return 0, noteCause(ctx, idgen.ErrWouldWait)
	}
	v, err := s.client.SeedIdentity(ctx, name, value, force)
	return v, noteCause(ctx, err)
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
