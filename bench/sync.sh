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
  results+=("$(build/bin/bench-sync -docs "$docs" | sed "s/}\$/,\"round\":$r}/")")
  results+=("$(node bench/js/wasm.mjs build/bin/hilodb-server "$docs" | sed "s/}\$/,\"round\":$r}/")")
  results+=("$(node bench/pouchdb/pouch.mjs "$docs" 100 | sed "s/}\$/,\"round\":$r}/")")
  results+=("$(node bench/pouchdb/pouch.mjs "$docs" 1000 | sed "s/}\$/,\"round\":$r}/")")
done
printf '%s\n' "${results[@]}" | node -e '
const lines = require("fs").readFileSync(0, "utf8").trim().split("\n").map(JSON.parse);
for (const l of lines) {
  console.log(`round ${l.round} ${l.system.padEnd(20)} push ${String(l.pushDocsPerSec).padStart(7)} docs/s   pull ${String(l.pullDocsPerSec).padStart(7)} docs/s`);
}
// Per round: each hilodb system against the better PouchDB setting of the
// same round (default batch_size 100, or 1000); then the median of rounds.
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rounds = [...new Set(lines.map((l) => l.round))];
for (const s of ["hilodb", "hilodb-wasm"]) {
  const push = [], pull = [];
  for (const r of rounds) {
    const h = lines.find((l) => l.round === r && l.system === s);
    const ps = lines.filter((l) => l.round === r && l.system.startsWith("pouchdb"));
    push.push(h.pushDocsPerSec / Math.max(...ps.map((p) => p.pushDocsPerSec)));
    pull.push(h.pullDocsPerSec / Math.max(...ps.map((p) => p.pullDocsPerSec)));
  }
  console.log(`${s} against the better PouchDB setting, per round (median of ${rounds.length}): push ${median(push).toFixed(1)}x, pull ${median(pull).toFixed(1)}x`);
}
'
