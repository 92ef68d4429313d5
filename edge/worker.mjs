// Glue between workerd and the Go program in app.wasm.
//
// syumai/workers' own glue starts a new Go instance for every request, which
// throws away the HiLo ranges the worker leased and the documents it cached.
// This glue starts the Go program once per isolate, on the first request,
// and hands every request to the handleRequest binding of that one instance.
//
// wasm_exec.js is Go's own loader, copied from $(go env GOROOT)/lib/wasm by
// build.sh; it defines globalThis.Go.
import "./wasm_exec.js";
import wasmModule from "./app.wasm";

// REQUEST_DEADLINE_MS bounds one request. The Go side gives up on a write
// after 10 s; this deadline only fires if the Go side never answers.
//
// The pending timer also keeps the request alive in workerd's eyes. A
// request waiting on a HiLo lease that another request started has no I/O of
// its own, and workerd cancels a request with nothing pending as hung ("would
// never generate a response"). With the timer it waits, and the answer Go
// settles during the other request's turn is delivered to it.
const REQUEST_DEADLINE_MS = 20_000;

// TURN_HEADER carries each request's turn token to Go (see turn_js.go).
const TURN_HEADER = "x-hilodb-turn";

// app is the running Go program, shared by every request of the isolate:
// { go, binding, waiting, turns }. null before the first request and after
// the program exits; the next request then starts a new one.
//
// No promise is shared between requests: workerd settles a promise only in
// the request that created it, and awaiting a pending promise of a request
// that has ended fails at once ("This promise was created by a request that
// has since ended"). Hence plain values here, and a waiting set of
// per-request callbacks to answer requests if the program exits.
let app = null;

// turnCount numbers the requests of the isolate for their turn tokens.
let turnCount = 0;

// start instantiates app.wasm and runs the Go program's main until it
// blocks. main calls workers.Ready synchronously, so the program is ready
// when start returns.
//
// The syumai/workers packages read globalThis.context as they initialise:
// env (the bindings), ctx (the ExecutionContext) and binding (where Go puts
// handleRequest and resumeTurn, and finds wakeTurn). Bindings are the same
// for every request of a worker, so the first request's env serves all of
// them; ctx stays the first request's and must not be used by the Go code
// (this worker does not use it).
function start(env, ctx) {
  // turns maps the turn token of each request in flight to the function
  // that wakes it: it settles a promise the request created, so workerd runs
  // the continuation (which calls back into Go) in that request's own turn.
  const turns = new Map();
  const binding = {
    wakeTurn(token) {
      const wake = turns.get(token);
      turns.delete(token);
      wake?.();
    },
  };
  globalThis.context = { env, ctx, binding };
  const go = new Go();
  let ready = false;
  const instance = new WebAssembly.Instance(wasmModule, {
    ...go.importObject,
    workers: {
      ready: () => {
        ready = true;
      },
    },
  });
  const current = { go, binding, waiting: new Set(), turns };
  go.exit = (code) => stopped(current, `the Go program exited with code ${code}`);
  go.run(instance).catch((err) => stopped(current, `the Go program failed: ${err?.message ?? err}`));
  if (!ready || typeof binding.handleRequest !== "function") {
    throw new Error("the Go program did not call workers.Ready");
  }
  return current;
}

// stopped forgets an exited program and answers the requests it held.
function stopped(current, reason) {
  console.error(`edge: ${reason}; the next request starts a new instance`);
  if (app === current) {
    app = null;
  }
  for (const answer of current.waiting) {
    answer(errorResponse(500, "internal", 4, reason));
  }
}

// errorResponse answers in the API's JSON error shape.
function errorResponse(status, code, errorNum, errorMessage) {
  return new Response(JSON.stringify({ error: true, code, errorNum, errorMessage }), {
    status,
    headers: { "content-type": "application/json; charset=utf-8" },
  });
}

async function fetch(request, env, ctx) {
  if (app === null || app.go.exited) {
    try {
      app = start(env, ctx);
    } catch (err) {
      app = null;
      return errorResponse(500, "internal", 4, `start the Go program: ${err?.message ?? err}`);
    }
  }
  const current = app;
  let timer;
  let answer;
  const cutOff = new Promise((resolve) => {
    answer = resolve;
    timer = setTimeout(
      () => resolve(errorResponse(504, "timeout", 504, `no answer within ${REQUEST_DEADLINE_MS} ms`)),
      REQUEST_DEADLINE_MS,
    );
  });
  current.waiting.add(answer);

  // Go calls the sync server (a lease, a push, a get), hangs up and writes
  // the response only during this request's own turn: it calls
  // wakeTurn(token), and the continuation below, which workerd runs in this
  // request's turn, lets it go on.
  const token = String(++turnCount);
  let finished = false;
  const arm = () =>
    new Promise((resolve) => current.turns.set(token, resolve))
      .then(() => {
        if (finished) {
          return;
        }
        // Re-arm first: Go may ask for this turn again (a lease, a push,
        // the hang-up, then the response).
        arm();
        current.binding.resumeTurn(token);
      })
      .catch((err) => console.error(`edge: resume turn ${token}: ${err?.message ?? err}`));
  arm();
  const headers = new Headers(request.headers);
  headers.set(TURN_HEADER, token);

  try {
    return await Promise.race([current.binding.handleRequest(new Request(request, { headers })), cutOff]);
  } catch (err) {
    return errorResponse(500, "internal", 4, String(err?.message ?? err));
  } finally {
    finished = true;
    clearTimeout(timer);
    current.waiting.delete(answer);
    current.turns.delete(token);
  }
}

export default { fetch };
