# workerd config for the hilodb edge worker.
#
#   mkdir -p .replicas
#   HILODB_URL=ws://127.0.0.1:8080/v1/sync HILODB_DB=shop \
#     npx workerd serve config.capnp [--socket-addr http=127.0.0.1:8788] \
#       [--directory-path replicas=/path/to/dir]
#
# Run build.sh first: the worker's modules are embedded from build/. The
# Durable Objects (one replica per database) keep their storage in the
# "replicas" directory (.replicas by default, relative to where workerd
# runs; it must exist).

using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "edge", worker = .edgeWorker),
    # Outbound connections, the sync server's websocket included, go through
    # the "internet" service. Its default allows public addresses only; a
    # sync server on this machine or a private network needs these too.
    (name = "internet", network = (allow = ["public", "private", "local"])),
    (name = "replicas", disk = (path = ".replicas", writable = true)),
  ],
  sockets = [
    (name = "http", address = "127.0.0.1:8788", http = (), service = "edge"),
  ],
);

const edgeWorker :Workerd.Worker = (
  modules = [
    (name = "worker.mjs", esModule = embed "worker.mjs"),
    (name = "auth.mjs", esModule = embed "auth.mjs"),
    (name = "wasm_exec.js", esModule = embed "build/wasm_exec.js"),
    (name = "app.wasm", wasm = embed "build/app.wasm"),
  ],
  durableObjectNamespaces = [
    (className = "Replica", uniqueKey = "hilodb-edge-replica", enableSql = true),
  ],
  durableObjectStorage = (localDisk = "replicas"),
  # Text bindings read from workerd's environment; an unset variable gives
  # null, which the worker treats as not configured. On Cloudflare these are
  # ordinary vars and secrets (HILODB_TOKEN should be a secret).
  bindings = [
    (name = "HILODB_URL", fromEnvironment = "HILODB_URL"),
    (name = "HILODB_DB", fromEnvironment = "HILODB_DB"),
    (name = "HILODB_TOKEN", fromEnvironment = "HILODB_TOKEN"),
    (name = "HILODB_EDGE_TOKEN", fromEnvironment = "HILODB_EDGE_TOKEN"),
    # Signed tokens (auth.mjs, docs/auth.md "Edge worker").
    (name = "HILODB_JWT_SECRET", fromEnvironment = "HILODB_JWT_SECRET"),
    (name = "HILODB_JWKS", fromEnvironment = "HILODB_JWKS"),
    (name = "HILODB_JWKS_URL", fromEnvironment = "HILODB_JWKS_URL"),
    (name = "HILODB_JWT_ISSUER", fromEnvironment = "HILODB_JWT_ISSUER"),
    (name = "HILODB_JWT_AUDIENCE", fromEnvironment = "HILODB_JWT_AUDIENCE"),
    (name = "REPLICA", durableObjectNamespace = "Replica"),
  ],
  compatibilityDate = "2026-05-01",
);
