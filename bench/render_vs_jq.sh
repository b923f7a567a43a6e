#!/bin/sh
# render_vs_jq.sh - one round of issue 25's comparison, all in a few
# seconds so that the machine's load is the same for every figure:
#   bench/render_vs_jq.sh DIR OLD_BENCH_RENDER NEW_BENCH_RENDER
# runs OLD, NEW -1 (sha256 on the calling thread) and NEW (the hashing
# thread) with -n 40 in turn three times, then jq doing the same merge three
# times, and prints the load average and UTC time before and after
# (doc/benchmarks.md, render section, session 9).
set -eu
D=${1:?usage: render_vs_jq.sh DIR OLD NEW}
OLD=${2:?}
NEW=${3:?}
command -v jq >/dev/null || { echo "render_vs_jq.sh: jq is needed" >&2; exit 1; }
t0=$(date -u +%T)
l0=$(cut -d' ' -f1-3 /proc/loadavg)
for _ in 1 2 3; do
	for run in old one new; do
		case $run in
		old) out=$("$OLD" -n 40 "$D") ;;
		one) out=$("$NEW" -1 -n 40 "$D") ;;
		new) out=$("$NEW" -n 40 "$D") ;;
		esac
		echo "$run: $(echo "$out" | grep -o 'hash=[0-9a-f]\{8\}\|median_ms=[0-9.]*\|min_ms=[0-9.]*' | tr '\n' ' ')"
	done
done
files=$(find "$D" -name '*.json')
for _ in 1 2 3; do
	s=$(date +%s%N)
	# shellcheck disable=SC2086
	jq -n -c 'reduce inputs as $x ({}; . + {(input_filename): $x}) | to_entries |
	    sort_by(.key) | from_entries' $files >/dev/null
	e=$(date +%s%N)
	echo "jq: $(( (e - s) / 1000000 )) ms"
done
echo "time $t0 -> $(date -u +%T), load $l0 -> $(cut -d' ' -f1-3 /proc/loadavg)"
