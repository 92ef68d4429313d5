//go:build js && wasm

package main

import (
	"context"
	"fmt"
	"syscall/js"
)

// tokenOption reads openStore's token: a string, or a function returning
// a Promise of one (signed tokens that expire), which becomes the client's
// TokenFunc.
func tokenOption(o js.Value) (string, func(context.Context) (string, error), error) {
	v := o.Get("token")
	switch v.Type() {
	case js.TypeUndefined, js.TypeNull:
		return "", nil, nil
	case js.TypeString:
		return v.String(), nil, nil
	case js.TypeFunction:
		return "", jsTokenFunc(v), nil
	}
	return "", nil, &argError{"openStore: token must be a string or a function returning a Promise of one"}
}

// jsTokenFunc calls fn, a JavaScript function returning a Promise of a
// token, from the client's goroutines (never the event loop's).
func jsTokenFunc(fn js.Value) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		type result struct {
			v   js.Value
			err error
		}
		ch := make(chan result, 1)
		go func() {
			v, err := awaitPromise(func() js.Value { return fn.Invoke() })
			ch <- result{v, err}
		}()
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("token function: %w", ctx.Err())
		case r := <-ch:
			if r.err != nil {
				return "", fmt.Errorf("token function: %w", r.err)
			}
			if r.v.Type() != js.TypeString {
				return "", fmt.Errorf("token function: resolved to a %s, want a string", r.v.Type())
			}
			return r.v.String(), nil
		}
	}
}
