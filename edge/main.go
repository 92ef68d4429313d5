//go:build js && wasm

package main

import (
	"context"
	"fmt"
	"syscall/js"
	"time"

	"github.com/hilodb/hilodb/errcode"
)

// main hands the glue (worker.mjs) its entry points on the object the glue
// left at globalThis.__hilodbBoot, then waits forever: the program lives as
// long as its Durable Object.
//
//	open(config, adapter, found)  start the replica (starter): returns
//	                              undefined at once; the store loads once the first
//	                              request has its answer, and if that
//	                              fails, the program calls the glue's
//	                              failed(message)
//	handle(token, method, path, query, ifMatch, ifNoneMatch, body, role, cacheControl)
//	                              → {status, headers, body}, or undefined and
//	                                later done(token, {status, headers, body});
//	                                role is what the request's token grants
//	                                ("read", "write", "admin"; roles.go);
//	                                cacheControl: the request's header
//	                                (no-cache: a read must be fresh)
//	tick()                        → Promise<boolean>  sync round; true while writes are pending
//
// A read the replica can answer at once is answered synchronously: no
// goroutine, no Promise; before the store is loaded, a read is answered so
// from the bytes the object's storage held. Everything else runs in a
// goroutine that calls the glue's done function with the answer; done may
// be called before handle returns. No Promise is made on the Go side per
// request.
func main() {
	boot := js.Global().Get("__hilodbBoot")
	if boot.Type() != js.TypeObject {
		fmt.Println("edge: globalThis.__hilodbBoot is missing; start the program through worker.mjs")
		return
	}
	g := &glue{done: boot.Get("done"), failed: boot.Get("failed"), workers: workers{idle: make(chan func())}}
	boot.Set("open", js.FuncOf(g.open))
	boot.Set("handle", js.FuncOf(g.handle))
	boot.Set("tick", js.FuncOf(g.tick))
	select {}
}

// glue holds the program's one replica.
type glue struct {
	start   *starter // set by open; only read afterwards
	done    js.Value // the glue's done(token, response)
	failed  js.Value // the glue's failed(message): the replica failed to open
	workers workers
}

var (
	jsPromise    = js.Global().Get("Promise")
	jsUint8Array = js.Global().Get("Uint8Array")
	jsObject     = js.Global().Get("Object")
	jsError      = js.Global().Get("Error")
	jsSetTimeout = js.Global().Get("setTimeout")
)

// afterAnswerMs is the delay of afterAnswer's timeout.
const afterAnswerMs = 0

// promise runs fn in a goroutine and returns a Promise of its result.
func promise(fn func() (any, error)) js.Value {
	var executor js.Func
	executor = js.FuncOf(func(_ js.Value, args []js.Value) any {
		resolve, reject := args[0], args[1]
		executor.Release()
		go func() {
			v, err := fn()
			if err != nil {
				reject.Invoke(jsError.New(err.Error()))
				return
			}
			resolve.Invoke(v)
		}()
		return nil
	})
	return jsPromise.New(executor)
}

func (g *glue) open(_ js.Value, args []js.Value) any {
	if len(args) < 3 {
		return jsPromise.Call("reject", jsError.New("open(config, adapter, found)"))
	}
	cfg := config{URL: str(args[0].Get("url")), Database: str(args[0].Get("database")), Token: str(args[0].Get("token"))}
	st := newDOStorage(args[1], args[2])
	g.start = newStarter(cfg, st, st.snapshot, st.log, afterAnswer, func(err error) {
		if g.failed.Type() == js.TypeFunction {
			g.failed.Invoke(err.Error())
		}
	})
	return nil
}

// afterAnswer runs fn in a later turn of the event loop (setTimeout), once
// the answer handle is returning has gone out.
func afterAnswer(fn func()) {
	var f js.Func
	f = js.FuncOf(func(js.Value, []js.Value) any {
		f.Release()
		fn()
		return nil
	})
	jsSetTimeout.Invoke(f, afterAnswerMs)
}

func (g *glue) handle(_ js.Value, args []js.Value) any {
	if g.start == nil || len(args) < 9 {
		return toJS(errorResponse(errcode.Internal, "the replica is not open"))
	}
	token := args[0]
	r := &request{method: args[1].String(), path: args[2].String(), query: str(args[3]),
		ifMatch: str(args[4]), ifNoneMatch: str(args[5]), noCache: noCache(str(args[8]))}
	if b := args[6]; b.Type() == js.TypeObject {
		r.body = make([]byte, b.Get("length").Int())
		js.CopyBytesToGo(r.body, b)
	}
	if res := refuse(r, parseRole(str(args[7]))); res != nil {
		return toJS(res)
	}
	a, err, opened := g.start.opened()
	switch {
	case opened && err != nil:
		return toJS(openFailure(err))
	case opened:
		if res, ok := quickSafely(r, a.quick); ok {
			a.begin()
			return toJS(res)
		}
		a.begin()
	default:
		if res, ok := quickSafely(r, g.start.quick); ok {
			g.start.begin()
			return toJS(res)
		}
	}
	g.workers.run(func() {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout+time.Second)
		defer cancel()
		a, err := g.start.wait(ctx)
		if err != nil {
			g.done.Invoke(token, toJS(openFailure(err)))
			return
		}
		g.done.Invoke(token, toJS(serveSafely(ctx, a, r)))
	})
	return nil
}

// quickSafely and serveSafely run a quick answer and the app's serve, turning a
// panic into a 500: one that escaped would end the Go program, and with it
// the replica every later request of the object needs.
func quickSafely(r *request, quick func(*request) (*response, bool)) (res *response, ok bool) {
	defer func() {
		if v := recover(); v != nil {
			res, ok = panicked(r, v), true
		}
	}()
	return quick(r)
}

func serveSafely(ctx context.Context, a *app, r *request) (res *response) {
	defer func() {
		if v := recover(); v != nil {
			res = panicked(r, v)
		}
	}()
	return a.serve(ctx, r)
}

func panicked(r *request, v any) *response {
	fmt.Printf("edge: panic serving %s %s: %v\n", r.method, r.path, v)
	return errorResponse(errcode.Internal, fmt.Sprint("internal error: ", v))
}

// workers runs requests on goroutines kept between requests: a new
// goroutine's stack grows (and is copied) on every request it serves,
// which costs a write a few percent of its CPU.
type workers struct {
	idle chan func() // an idle worker receives here
}

// run hands job to an idle worker, or to a new one if none is idle.
func (w *workers) run(job func()) {
	select {
	case w.idle <- job:
	default:
		go w.work(job)
	}
}

func (w *workers) work(job func()) {
	for {
		job()
		job = <-w.idle
	}
}

func (g *glue) tick(js.Value, []js.Value) any {
	return promise(func() (any, error) {
		if g.start == nil {
			return false, nil
		}
		a, err := g.start.wait(context.Background())
		if err != nil {
			return false, fmt.Errorf("open the replica: %w", err)
		}
		a.begin()
		return a.tick(context.Background()), nil
	})
}

// toJS is a response as the glue reads it.
func toJS(r *response) js.Value {
	o := jsObject.New()
	o.Set("status", r.status)
	if len(r.header) > 0 {
		h := make([]any, len(r.header))
		for i, s := range r.header {
			h[i] = s
		}
		o.Set("headers", h)
	}
	if r.body != nil {
		u8 := jsUint8Array.New(len(r.body))
		js.CopyBytesToJS(u8, r.body)
		o.Set("body", u8)
	}
	return o
}

// str is v's text, "" for anything that is not a string.
func str(v js.Value) string {
	if v.Type() != js.TypeString {
		return ""
	}
	return v.String()
}
