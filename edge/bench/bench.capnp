# workerd config of make bench-edge: the edge worker (as config.capnp) and a
# plain JavaScript worker answering fixed JSON, in one workerd.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "edge", worker = .edgeWorker),
    (name = "plain", worker = (
      modules = [(name = "plain.mjs", esModule = embed "plain.mjs")],
      compatibilityDate = "2026-05-01",
    )),
    (name = "internet", network = (allow = ["public", "private", "local"])),
    (name = "replicas", disk = (path = ".replicas", writable = true)),
  ],
  sockets = [
    (name = "http", address = "127.0.0.1:0", http = (), service = "edge"),
    (name = "plain", address = "127.0.0.1:0", http = (), service = "plain"),
  ],
);

const edgeWorker :Workerd.Worker = (
  modules = [
    (name = "worker.mjs", esModule = embed "../worker.mjs"),
    (name = "auth.mjs", esModule = embed "../auth.mjs"),
    (name = "wasm_exec.js", esModule = embed "../build/wasm_exec.js"),
    (name = "app.wasm", wasm = embed "../build/app.wasm"),
  ],
  durableObjectNamespaces = [
    (className = "Replica", uniqueKey = "hilodb-edge-replica", enableSql = true),
  ],
  durableObjectStorage = (localDisk = "replicas"),
  bindings = [
    (name = "HILODB_URL", fromEnvironment = "HILODB_URL"),
    (name = "HILODB_DB", fromEnvironment = "HILODB_DB"),
    (name = "HILODB_TOKEN", fromEnvironment = "HILODB_TOKEN"),
    (name = "REPLICA", durableObjectNamespace = "Replica"),
  ],
  compatibilityDate = "2026-05-01",
);
