//go:build js && wasm

package main

import (
	"errors"
	"fmt"
	"syscall/js"
	"unsafe"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/database"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/internal/wire"
	"github.com/hilodb/hilodb/replica"
)

// async wraps fn as a JavaScript function returning a Promise. fn runs on the
// event loop and only reads its arguments; the work it returns runs in its
// own goroutine and settles the Promise. Nothing panics into JavaScript.
func async(fn func(args []js.Value) (func() (any, error), error)) js.Func {
	return js.FuncOf(func(_ js.Value, args []js.Value) (ret any) {
		defer func() {
			if r := recover(); r != nil {
				ret = rejected(&panicError{r})
			}
		}()
		work, err := fn(args)
		if err != nil {
			return rejected(err)
		}
		return promise(work)
	})
}

// direct wraps fn as a store function that answers at once, without a
// Promise: fn gets the store's number (the bound first argument) and the
// arguments, and its answer goes to JavaScript as it is. A panic becomes an
// Error returned, as does a call without a store number.
func direct(fn func(id int, args []js.Value) any) js.Func {
	return js.FuncOf(func(_ js.Value, args []js.Value) (ret any) {
		defer func() {
			if r := recover(); r != nil {
				ret = toJSError(&panicError{r})
			}
		}()
		id, err := storeNumber(args)
		if err != nil {
			return toJSError(err)
		}
		return fn(id, args)
	})
}

// immediate wraps fn as a JavaScript function returning a Promise, like
// async, but runs the work at once on the event loop and returns a Promise
// already settled: no goroutine, no executor, one entry into Go per call.
// Only for work that never waits (reads of the in-memory store).
func immediate(fn func(args []js.Value) (func() (any, error), error)) js.Func {
	return js.FuncOf(func(_ js.Value, args []js.Value) (ret any) {
		defer func() {
			if r := recover(); r != nil {
				ret = rejected(&panicError{r})
			}
		}()
		work, err := fn(args)
		if err != nil {
			return rejected(err)
		}
		v, err := protect(work)
		if err != nil {
			return rejected(err)
		}
		if v == nil {
			v = js.Undefined()
		}
		return jsPromise.Call("resolve", v)
	})
}

// promise returns a Promise settled by work, which runs in a goroutine.
func promise(work func() (any, error)) js.Value {
	var resolve, reject js.Value
	executor := js.FuncOf(func(_ js.Value, args []js.Value) any {
		resolve, reject = args[0], args[1]
		return nil
	})
	p := jsPromise.New(executor) // the executor runs before New returns
	executor.Release()
	go settle(resolve, reject, work)
	return p
}

// settle runs work and resolves or rejects with its outcome.
func settle(resolve, reject js.Value, work func() (any, error)) {
	v, err := protect(work)
	if v == nil {
		v = js.Undefined() // ValueOf(nil) would be null
	}
	if err == nil {
		_, err = protect(func() (any, error) { resolve.Invoke(v); return nil, nil })
		if err == nil {
			return
		}
	}
	if _, perr := protect(func() (any, error) { reject.Invoke(toJSError(err)); return nil, nil }); perr != nil {
		// Building the Error itself failed: reject with the text alone.
		reject.Invoke(err.Error())
	}
}

// protect runs fn, turning a panic into a *panicError.
func protect(fn func() (any, error)) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, &panicError{r}
		}
	}()
	return fn()
}

// rejected returns a Promise rejected with err.
func rejected(err error) js.Value {
	return jsPromise.Call("reject", toJSError(err))
}

// describe returns the stable code word and number for err.
func describe(err error) (code string, num int) {
	var pe *panicError
	var ae *argError
	var he *hostError
	var we *client.Error
	var me *mergeError
	var hc *hostCodedError
	switch {
	case errors.As(err, &me):
		return codeMergeFailed, numMergeFailed
	case errors.As(err, &hc):
		return hc.code, hc.num
	case errors.Is(err, replica.ErrRejected):
		return codeRejected, numRejected
	case errors.Is(err, database.ErrDamaged):
		return errcode.Damaged.Name, errcode.Damaged.Num
	case errors.As(err, &he):
		return wire.CodeUnavailable, wire.NumUnavailable
	case errors.As(err, &pe):
		return codePanic, numPanic
	case errors.As(err, &ae):
		return wire.CodeBadRequest, wire.NumBadRequest
	case errors.As(err, &we):
		return we.Code, we.Num
	case errors.Is(err, errClosed), errors.Is(err, client.ErrClosed), errors.Is(err, idgen.ErrClosed):
		return codeClosed, numClosed
	case unreachable(err):
		return wire.CodeNeedsServer, wire.NumNeedsServer
	}
	ce := core.AsError(err)
	return ce.Code, ce.Num
}

// toJSError builds the JavaScript Error a Promise is rejected with.
func toJSError(err error) js.Value {
	code, num := describe(err)
	e := jsError.New(err.Error())
	e.Set("code", code)
	e.Set("num", num)
	return e
}

// arg returns args[i], or undefined past the end.
func arg(args []js.Value, i int) js.Value {
	if i < len(args) {
		return args[i]
	}
	return js.Undefined()
}

// storeNumber reads the store number a store object's functions are bound to.
func storeNumber(args []js.Value) (int, error) {
	v := arg(args, 0)
	if v.Type() != js.TypeNumber {
		return 0, &argError{"store functions must be called on an object from openStore"}
	}
	return v.Int(), nil
}

// stringArg reads args[i], which must be a string.
func stringArg(args []js.Value, i int, what string) (string, error) {
	v := arg(args, i)
	if v.Type() != js.TypeString {
		return "", &argError{what + " must be a string"}
	}
	return v.String(), nil
}

// stringField reads o[name], which must be a string, or absent when not
// required.
func stringField(o js.Value, name string, required bool) (string, error) {
	v := o.Get(name)
	switch v.Type() {
	case js.TypeString:
		return v.String(), nil
	case js.TypeUndefined, js.TypeNull:
		if !required {
			return "", nil
		}
		return "", &argError{fmt.Sprintf("openStore: %s is required", name)}
	}
	return "", &argError{fmt.Sprintf("openStore: %s must be a string", name)}
}

// stringsField reads an optional array of strings.
func stringsField(o js.Value, name string) ([]string, error) {
	v := o.Get(name)
	switch {
	case v.Type() == js.TypeUndefined || v.Type() == js.TypeNull:
		return nil, nil
	case v.Type() != js.TypeObject || !js.Global().Get("Array").Call("isArray", v).Bool():
		return nil, &argError{fmt.Sprintf("openStore: %s must be an array of strings", name)}
	}
	out := make([]string, v.Length())
	for i := range out {
		e := v.Index(i)
		if e.Type() != js.TypeString {
			return nil, &argError{fmt.Sprintf("openStore: %s must be an array of strings", name)}
		}
		out[i] = e.String()
	}
	return out, nil
}

// docText returns a document as JSON text: a string is taken as JSON already,
// anything else goes through the host's JSON.stringify, which throws for
// cyclic values and BigInts. Text that is not a JSON object is left for core
// to refuse with its bad-JSON error.
func docText(v js.Value) (text string, err error) {
	switch v.Type() {
	case js.TypeString:
		return v.String(), nil
	case js.TypeUndefined, js.TypeFunction, js.TypeSymbol:
		return "", nil
	}
	defer func() {
		if r := recover(); r != nil {
			text, err = "", fmt.Errorf("put: document cannot be turned into JSON: %v: %w", r, core.ErrBadJSON)
		}
	}()
	s := jsJSON.Call("stringify", v)
	if s.Type() != js.TypeString {
		return "", nil
	}
	return s.String(), nil
}

// object returns a JavaScript object with the keys and values kv holds,
// key after value, set in that order: a Go map would set them in an order
// that changes from run to run, and the order shows when an app prints the
// object.
func object(kv ...any) js.Value {
	o := jsObject.New()
	for i := 0; i+1 < len(kv); i += 2 {
		o.Set(kv[i].(string), kv[i+1])
	}
	return o
}

// parseJSON turns JSON text from the store into a JavaScript value with the
// host's JSON.parse. The text crosses as a string made over b's bytes, not
// a copy of them: JavaScript copies it before the call returns, and nothing
// keeps it.
func parseJSON(b []byte) js.Value {
	return jsJSON.Call("parse", unsafe.String(unsafe.SliceData(b), len(b)))
}
