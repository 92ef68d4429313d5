#!/usr/bin/env bash
# build.sh builds the browser build of hilodb (wasm/) into js/dist/:
#   dist/hilodb.wasm    the Go program, GOOS=js GOARCH=wasm
#   dist/wasm_exec.js   the Go runtime's JavaScript support, from the same Go
# Run it from any directory. GO overrides the go command.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
go="${GO:-go}"
dist="$here/dist"

mkdir -p "$dist"
goroot="$("$go" env GOROOT)"
exec_js="$goroot/lib/wasm/wasm_exec.js"
if [[ ! -f "$exec_js" ]]; then
	exec_js="$goroot/misc/wasm/wasm_exec.js" # Go before 1.24
fi

# Build to a temporary name and rename, so a reader never sees half a file.
(cd "$root" && GOOS=js GOARCH=wasm "$go" build -ldflags="-s -w" -trimpath -o "$dist/hilodb.wasm.tmp" ./wasm)
mv -f "$dist/hilodb.wasm.tmp" "$dist/hilodb.wasm"
cp -f "$exec_js" "$dist/wasm_exec.js"
echo "built $dist/hilodb.wasm ($(wc -c <"$dist/hilodb.wasm") bytes)"
