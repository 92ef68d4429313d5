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
//	open(config, adapter, found) → Promise      open the replica
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
// goroutine, no Promise. Everything else runs in a goroutine that calls the
// glue's done function with the answer; done may be called before handle
// returns. No Promise is made on the Go side per request.
func main() {
	boot := js.Global().Get("__hilodbBoot")
	if boot.Type() != js.TypeObject {
		fmt.Println("edge: globalThis.__hilodbBoot is missing; start the program through worker.mjs")
		return
	}
	g := &glue{done: boot.Get("done"), workers: workers{idle: make(chan func())}}
	boot.Set("open", js.FuncOf(g.open))
	boot.Set("handle", js.FuncOf(g.handle))
	boot.Set("tick", js.FuncOf(g.tick))
	select {}
}

// glue holds the program's one replica.
type glue struct {
	app     *app     // set once open has succeeded; only read afterwards
	done    js.Value // the glue's done(token, response)
	workers workers
}

var (
	jsPromise    = js.Global().Get("Promise")
	jsUint8Array = js.Global().Get("Uint8Array")
	jsObject     = js.Global().Get("Object")
	jsError      = js.Global().Get("Error")
)

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
	return promise(func() (any, error) {
		a, err := openApp(context.Background(), cfg, st)
		if err != nil {
			return nil, err
		}
		g.app = a
		return nil, nil
	})
}

func (g *glue) handle(_ js.Value, args []js.Value) any {
	if g.app == nil || len(args) < 9 {
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
	if res, ok := quickSafely(g.app, r); ok {
		g.app.begin()
		return toJS(res)
	}
	g.app.begin()
	g.workers.run(func() {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout+time.Second)
		defer cancel()
		g.done.Invoke(token, toJS(serveSafely(ctx, g.app, r)))
	})
	return nil
}

// quickSafely and serveSafely run the app's quick and serve, turning a
// panic into a 500: one that escaped would end the Go program, and with it
// the replica every later request of the object needs.
func quickSafely(a *app, r *request) (res *response, ok bool) {
	defer func() {
		if v := recover(); v != nil {
			res, ok = panicked(r, v), true
		}
	}()
	return a.quick(r)
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
		if g.app == nil {
			return false, nil
		}
		g.app.begin()
		return g.app.tick(context.Background()), nil
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
