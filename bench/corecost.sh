#!/usr/bin/env bash
# The Go core's Put and InsertMany100 under WebAssembly (Node as the wasm
# host), at an older commit and at the work tree, side by side in one run:
# the two test binaries alternate, round after round, so that a busy
# machine slows both alike. Besides Go's ns/op (wall clock) it reports the
# CPU time per operation of the whole Node process (user + system, less a
# run of one iteration), which holds steadier on a shared machine.
# Usage: bench/corecost.sh OLD_COMMIT [rounds] [iterations]
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: bench/corecost.sh OLD_COMMIT [rounds] [iterations]}
rounds=${2:-5}
n=${3:-20000}
go=${GO:-go}
exec_js="$("$go" env GOROOT)/lib/wasm/go_js_wasm_exec"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$tmp/src"
git archive "$old" | tar -x -C "$tmp/src"
(cd "$tmp/src" && GOOS=js GOARCH=wasm "$go" test -c -o "$tmp/old.wasm" ./core/)
GOOS=js GOARCH=wasm "$go" test -c -o "$tmp/new.wasm" ./core/

# cpu BIN BENCH ITERS: prints "ns/op B/op allocs/op cpu-seconds".
cpu() {
	local out
	out=$( { TIMEFORMAT='%3U %3S'; time (cd core && "$exec_js" "$1" -test.run '^$' \
		-test.bench "^Benchmark$2\$" -test.benchmem -test.benchtime "$3x" >"$tmp/bench.txt"); } 2>&1)
	local stats
	stats=$(awk '/^Benchmark/ { for (i = 1; i <= NF; i++) { if ($(i+1) == "ns/op") ns = $i; if ($(i+1) == "B/op") b = $i; if ($(i+1) == "allocs/op") a = $i } } END { print ns, b, a }' "$tmp/bench.txt")
	echo "$stats $(echo "$out" | awk '{ print $1 + $2 }')"
}

for bench in Put InsertMany100; do
	base_old=$(cpu "$tmp/old.wasm" "$bench" 1 | awk '{ print $4 }')
	base_new=$(cpu "$tmp/new.wasm" "$bench" 1 | awk '{ print $4 }')
	for r in $(seq "$rounds"); do
		for side in old new; do
			base=$base_old
			[ "$side" = new ] && base=$base_new
			read -r ns b a s < <(cpu "$tmp/$side.wasm" "$bench" "$n")
			echo "$bench $side $r $ns $b $a $(awk -v s="$s" -v b="$base" -v n="$n" 'BEGIN { printf "%.0f", (s - b) * 1e9 / n }')"
		done
	done
done | awk '
{ key = $1 " " $2; ns[key] = ns[key] " " $4; cpu[key] = cpu[key] " " $7; mem[key] = $5 " B/op, " $6 " allocs/op"; keys[key] = 1 }
function med(list,   arr, k, i, j, t) {
	k = split(list, arr, " ")
	for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (arr[j] + 0 < arr[i] + 0) { t = arr[i]; arr[i] = arr[j]; arr[j] = t }
	return (k % 2) ? arr[(k + 1) / 2] : (arr[k / 2] + arr[k / 2 + 1]) / 2
}
function lo(list,   arr, k, i, m) {
	k = split(list, arr, " "); m = arr[1]
	for (i = 2; i <= k; i++) if (arr[i] + 0 < m + 0) m = arr[i]
	return m
}
END {
	for (key in keys) printf "%-22s ns/op median %8.0f min %8.0f   CPU ns/op median %8.0f min %8.0f   %s\n", key, med(ns[key]), lo(ns[key]), med(cpu[key]), lo(cpu[key]), mem[key]
}' | sort
