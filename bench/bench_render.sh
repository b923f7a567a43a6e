#!/bin/sh
# bench_render.sh - the renderer's benchmarks (doc/benchmarks.md):
#   bench/bench_render.sh BUILD_DIR      (or: make bench-render)
# Generates the 4.2 MB / 25 MB / 100 MB folders with bench/gen (seed 1),
# times merge+validate+hash and the default render against jq and the
# brotli CLI, sweeps brotli qualities, and measures peak RSS at 100 MB.
# Needs jq and brotli.  Work files go to ${BENCH_DIR:-/tmp/decod-bench-render}.
set -eu
B=${1:?usage: bench_render.sh BUILD_DIR}
W=${BENCH_DIR:-/tmp/decod-bench-render}
GEN=$B/bench/gen
BR=$B/bench/bench_render
for t in jq brotli; do
	command -v $t >/dev/null || { echo "bench_render.sh: $t is needed" >&2; exit 1; }
done
mkdir -p "$W"

gen() { # gen NAME FILES BYTES
	[ -d "$W/$1" ] || "$GEN" -s 1 -n "$2" -b "$3" "$W/$1"
}
ms() { echo $(( $(date +%s%N) / 1000000 )); }
best_of() { # best_of N CMD...: best wall time in ms of N runs
	n=$1; shift; best=
	for i in $(seq "$n"); do
		t0=$(ms); "$@" >/dev/null; t=$(( $(ms) - t0 ))
		[ -z "$best" ] || [ "$t" -lt "$best" ] && best=$t
	done
	echo "$best"
}
# the same merge with jq: {key: content} per file, keys sorted, compact
jq_merge() {
	find "$1" -type f -name '*.json' -print0 | xargs -0 jq -n -c \
	    'reduce inputs as $x ({}; . + {(input_filename | sub(".*/"; "") | sub("\\.json$"; "")): $x}) | to_entries | sort_by(.key) | from_entries'
}

echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "# $(jq --version), brotli $(brotli --version 2>&1 | head -1)"
gen d4 360 4.2MB
gen d25 2100 25MB
gen d100 8500 100MB

for d in d4 d25; do
	echo "## $d"
	"$BR" -n 20 -o "$W/$d.json" "$W/$d"
	echo "jq_merge best_ms=$(best_of 3 jq_merge "$W/$d")"
	for q in 9 11; do
		t=$(best_of 1 brotli -f -q $q -w 24 -o "$W/$d.q$q.br" "$W/$d.json")
		echo "brotli_cli q=$q w=24 ms=$t bytes=$(stat -c %s "$W/$d.q$q.br") json_bytes=$(stat -c %s "$W/$d.json")"
	done
	[ $d = d4 ] && "$BR" -n 1 -q 11 -w 24 "$W/$d" | grep '^render'
done
echo "## sweep d4"
"$BR" -n 3 -S "$W/d4" | grep '^sweep'
echo "## rss d100"
"$BR" -R "$W/d100"
"$BR" -R "$W/d25"
"$BR" -R "$W/d4"
