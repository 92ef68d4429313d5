#!/usr/bin/env bash
# build-web.sh OUTDIR assembles a web root for the demo page, to be served by
#   hilodb-server -static OUTDIR
# It builds the wasm (build.sh), bundles the package (build-web.mjs: one
# module per page or worker, content-hashed names but for the entry) and
# copies the demo page:
#   OUTDIR/index.html, OUTDIR/demo.js, OUTDIR/demo.css   the demo page
#   OUTDIR/index.js                  the npm package's browser entry, bundled
#   OUTDIR/shared-<hash>.js          the shared worker and the tabs' host workers
#   OUTDIR/writer-<hash>.js          the OPFS writer worker
#   OUTDIR/dist/hilodb-<hash>.wasm   the Go program
#   OUTDIR/shell.js, OUTDIR/sw.js    the app shell (registerShell, its service worker)
# esbuild comes from js/node_modules (npm ci there when it is missing).
# Run it from any directory.
set -euo pipefail

if [[ $# -ne 1 || -z "$1" ]]; then
	echo "usage: $0 OUTDIR" >&2
	exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$1"

"$here/build.sh"
if [[ ! -f "$here/node_modules/esbuild/package.json" ]]; then
	(cd "$here" && npm ci --no-audit --no-fund)
fi
mkdir -p "$out/dist"
cp -f "$here/demo/index.html" "$here/demo/demo.js" "$here/demo/demo.css" "$out/"
node "$here/build-web.mjs" "$out"
# Brotli and gzip copies beside each file, for hilodb-server to serve by
# the client's Accept-Encoding.
(cd "$here/.." && go run ./internal/precompress "$out")
echo "web root ready in $out"
