#!/usr/bin/env bash
# Replication side by side: hilodb (Go client, real sync server) and PouchDB 9
# (pouchdb-node + memory adapter, express-pouchdb), both over 127.0.0.1, in
# one run so the ratio holds on a noisy machine. Usage: bench/sync.sh [docs]
set -euo pipefail
cd "$(dirname "$0")/.."
docs=${1:-10000}
rounds=${ROUNDS:-3}
(cd bench/pouchdb && [ -d node_modules ] || npm ci --no-audit --no-fund >/dev/null)
go build -o build/bin/bench-sync ./bench/sync
results=()
for r in $(seq "$rounds"); do
  results+=("$(build/bin/bench-sync -docs "$docs")")
  results+=("$(node bench/pouchdb/pouch.mjs "$docs")")
done
printf '%s\n' "${results[@]}" | node -e '
const lines = require("fs").readFileSync(0, "utf8").trim().split("\n").map(JSON.parse);
const best = {};
for (const l of lines) {
  const b = best[l.system] ||= { push: 0, pull: 0 };
  b.push = Math.max(b.push, l.pushDocsPerSec);
  b.pull = Math.max(b.pull, l.pullDocsPerSec);
  console.log(`${l.system.padEnd(8)} push ${String(l.pushDocsPerSec).padStart(7)} docs/s   pull ${String(l.pullDocsPerSec).padStart(7)} docs/s`);
}
const h = best.hilodb, p = best.pouchdb;
console.log(`best of each: hilodb/pouchdb push ${(h.push / p.push).toFixed(1)}x, pull ${(h.pull / p.pull).toFixed(1)}x`);
'
