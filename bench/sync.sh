#!/usr/bin/env bash
# Replication side by side, over 127.0.0.1, in one run so the ratios hold on
# a noisy machine:
#   hilodb       the Go client (replica.Push / Pull) and the real sync server
#   hilodb-wasm  the npm package (the same Go core as WebAssembly) in Node,
#                store.sync(), against the real hilodb-server binary
#   pouchdb      PouchDB 9: pouchdb-node + memory adapter, express-pouchdb
# Usage: bench/sync.sh [docs]   (ROUNDS=n for more rounds; default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
docs=${1:-10000}
rounds=${ROUNDS:-3}
(cd bench/pouchdb && [ -d node_modules ] || npm ci --no-audit --no-fund >/dev/null)
(cd js && [ -d node_modules ] || npm ci --no-audit --no-fund >/dev/null)
bash js/build.sh >/dev/null
mkdir -p build/bin
go build -o build/bin/bench-sync ./bench/sync
go build -o build/bin/hilodb-server ./cmd/hilodb-server
results=()
for r in $(seq "$rounds"); do
  results+=("$(build/bin/bench-sync -docs "$docs")")
  results+=("$(node bench/js/wasm.mjs build/bin/hilodb-server "$docs")")
  results+=("$(node bench/pouchdb/pouch.mjs "$docs")")
done
printf '%s\n' "${results[@]}" | node -e '
const lines = require("fs").readFileSync(0, "utf8").trim().split("\n").map(JSON.parse);
const best = {};
for (const l of lines) {
  const b = best[l.system] ||= { push: 0, pull: 0 };
  b.push = Math.max(b.push, l.pushDocsPerSec);
  b.pull = Math.max(b.pull, l.pullDocsPerSec);
  console.log(`${l.system.padEnd(12)} push ${String(l.pushDocsPerSec).padStart(7)} docs/s   pull ${String(l.pullDocsPerSec).padStart(7)} docs/s`);
}
const p = best.pouchdb;
for (const s of ["hilodb", "hilodb-wasm"]) {
  const h = best[s];
  console.log(`best of each: ${s}/pouchdb push ${(h.push / p.push).toFixed(1)}x, pull ${(h.pull / p.pull).toFixed(1)}x`);
}
'
