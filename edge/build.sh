#!/usr/bin/env bash
# Builds the edge worker into edge/build/: app.wasm (the Go program),
# worker.mjs and auth.mjs (the glue) and wasm_exec.js (Go's loader for it, copied from the Go toolchain in use so
# the two always match). Callable from any directory.
set -euo pipefail

edge_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$edge_dir/build"
mkdir -p "$out"

cp "$(go env GOROOT)/lib/wasm/wasm_exec.js" "$out/wasm_exec.js"
# wrangler bundles from build/ (wrangler.toml: main), beside what it imports.
cp "$edge_dir/worker.mjs" "$edge_dir/auth.mjs" "$out/"
(
  cd "$edge_dir"
  GOOS=js GOARCH=wasm go build -ldflags="-s -w" -trimpath -o "$out/app.wasm" .
)
echo "edge: built $out/app.wasm ($(wc -c <"$out/app.wasm") bytes) and $out/wasm_exec.js"
