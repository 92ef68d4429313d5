#!/usr/bin/env bash
# build-web.sh OUTDIR assembles a web root for the demo page, to be served by
#   hilodb-server -static OUTDIR
# It builds the wasm (build.sh) and lays the package out as it is in js/:
#   OUTDIR/index.html, OUTDIR/demo.js    the demo page
#   OUTDIR/index.js, OUTDIR/runtime.js   the npm package's entry point and its Go runtime
#   OUTDIR/tabs.js, OUTDIR/shared.js,    stores shared by the tabs of an origin
#   OUTDIR/host.js
#   OUTDIR/dist/hilodb.wasm, OUTDIR/dist/wasm_exec.js
# Run it from any directory.
set -euo pipefail

if [[ $# -ne 1 || -z "$1" ]]; then
	echo "usage: $0 OUTDIR" >&2
	exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$1"

"$here/build.sh"
mkdir -p "$out/dist"
cp -f "$here/demo/index.html" "$here/demo/demo.js" "$here/demo/demo.css" "$out/"
cp -f "$here/index.js" "$here/store.js" "$here/events.js" "$here/options.js" "$here/platform.js" "$here/tabs.js" "$here/shared.js" "$here/host.js" "$here/collection.js" "$here/session.js" "$here/watch.js" "$here/persist.js" "$here/errors.js" "$here/closing.js" "$here/network.js" "$here/shell.js" "$here/sw.js" "$here/group.js" "$here/cache.js" "$here/opfs.js" "$here/writer.js" "$here/runtime.js" "$here/query.js" "$here/documentquery.js" "$here/token.js" "$out/"
cp -f "$here/dist/hilodb.wasm" "$here/dist/wasm_exec.js" "$out/dist/"
# Brotli and gzip copies beside each file, for hilodb-server to serve by
# the client's Accept-Encoding.
(cd "$here/.." && go run ./internal/precompress "$out")
echo "web root ready in $out"
