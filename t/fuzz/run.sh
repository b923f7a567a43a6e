#!/bin/sh
# t/fuzz/run.sh SECONDS [TARGET...] - run each libFuzzer harness built by
# `make fuzz` for SECONDS, starting from its seeds (t/fuzz/seeds/<target>)
# and regression inputs (t/fuzz/regress/<target>), in a scratch corpus
# under the build folder.  Prints one line per harness: executions, exec/s,
# coverage (edges) and features; a crash leaves its input in
# t/fuzz/crashes/<target>/ and makes the exit status 1.  Run from the build
# folder (or set BUILDDIR).  Two harnesses run at a time (JOBS=2), each with
# SECONDS to itself.  CI: t/fuzz/run.sh 30 (about 3 minutes).
set -u
secs=${1:-60}
[ $# -gt 0 ] && shift
here=$(cd "$(dirname "$0")" && pwd)
bld=${BUILDDIR:-$(pwd)}
bin=$bld/t/fuzz/bin
targets=${*:-"json render apply proto manifest store etcd site conf admit archive kube"}
[ -d "$bin" ] || { echo "run.sh: no $bin (make fuzz first)"; exit 2; }
fail=0
# one harness: its line of figures in $bld/t/fuzz/$t.line, and nonzero on a crash
one() {
	t=$1
	[ -x "$bin/fuzz_$t" ] || { echo "$t: not built" >"$bld/t/fuzz/$t.line"; return 1; }
	corpus=$bld/t/fuzz/corpus/$t
	crashes=$here/crashes/$t
	mkdir -p "$corpus" "$crashes"
	log=$bld/t/fuzz/$t.log
	# -rss_limit_mb: the limits under test keep every input far below it
	dirs="$corpus"
	for d in "$here/seeds/$t" "$here/regress/$t"; do [ -d "$d" ] && dirs="$dirs $d"; done
	# shellcheck disable=SC2086
	"$bin/fuzz_$t" -max_total_time="$secs" -rss_limit_mb=1024 -timeout=10 \
	    -max_len=1048576 -print_final_stats=1 -artifact_prefix="$crashes/" \
	    $dirs > "$log" 2>&1
	rc=$?
	execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
	rate=$(awk '/stat::average_exec_per_sec/ {print $2}' "$log")
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
	ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | awk '{print $2}')
	res=ok
	if [ $rc -ne 0 ]; then res="CRASH (see $log, input in $crashes)"; fi
	printf '%-9s %10s %8s %6s %6s %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" \
	    "${ft:-?}" "$res" >"$bld/t/fuzz/$t.line"
	return $rc
}
mkdir -p "$bld/t/fuzz"
printf '%-9s %10s %8s %6s %6s %s\n' target execs exec/s cov ft result
# two harnesses at a time (JOBS): each still gets SECONDS of its own core
jobs=${JOBS:-2}
set -- $targets
while [ $# -gt 0 ]; do
	pids= names=
	n=0
	while [ $# -gt 0 ] && [ $n -lt "$jobs" ]; do
		one "$1" &
		pids="$pids $!"
		names="$names $1"
		n=$((n + 1))
		shift
	done
	for p in $pids; do
		wait "$p" || fail=1
	done
	for t in $names; do
		cat "$bld/t/fuzz/$t.line"
	done
done
exit $fail
