#!/bin/sh
# bench_dir_watch.sh - N unchanged `dir` Decofiles idle, then edits: the CPU
# the fetcher (and renderer, publisher) spend idle over SECONDS, and each
# edit's time to the fetcher's read ("fetched" in its log) and to the
# published file, through the real supervisor and stages.  Run twice, side
# by side: with inotify (the default) and polled every 15 s
# (dir_watch_limit = 0, what decod did before and what a poller does).
#   sh bench/bench_dir_watch.sh BUILD_DIR [N] [SECONDS] [EDITS] [MODES]
# MODES: "watch poll" (default), or one of them.
set -eu
build=$(cd "${1:?usage: bench_dir_watch.sh BUILD_DIR [N] [SECONDS] [EDITS] [MODES]}" && pwd)
n=${2:-1000}
secs=${3:-300}
edits=${4:-20}
modes=${5:-watch poll}
T=$(mktemp -d "${TMPDIR:-/tmp}/decod-bench.XXXXXX")
PIDS=""
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; wait 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
trap 'exit 1' INT TERM HUP PIPE	# so the EXIT trap runs (a reader such as head gone too)
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
stage_pid() { pgrep -f "^$T/libexec/$1" | head -1; }

mkdir -p "$T/libexec"
for s in fetcher renderer publisher; do
	ln -s "$build/daemons/$s/$s" "$T/libexec/$s"
done
# N sites of three small blocks each, named as real sites name them
i=0
while [ $i -lt "$n" ]; do
	d="$T/sites/loja $i"
	mkdir -p "$d/páginas"
	printf '{"title": "Loja %d", "menu": ["Início", "Ofertas"]}\n' $i >"$d/Cabeçalho.json"
	printf '{"links": ["/ajuda", "/trocas"]}\n' >"$d/Rodapé%20da%20Loja.json"
	printf '{"path": "/", "sections": [1, 2, 3]}\n' >"$d/páginas/Página+Inicial.json"
	i=$((i + 1))
done

for mode in $modes; do
	rm -rf "$T/state" "$T/store" "$T/run"
	cat >"$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
stages = fetcher renderer publisher
log_level = ${LOG_LEVEL:-info}
CONF
	[ "$mode" = poll ] && echo "dir_watch_limit = 0" >>"$T/decod.conf"
	export DECOD_CONFIG="$T/decod.conf"
	"$build/decod" 2>"$T/decod-$mode.log" &
	dpid=$!
	PIDS="$PIDS $dpid"
	until [ "$("$build/decoctl" stages 2>/dev/null | grep -c READY)" -eq 3 ]; do sleep 0.05; done
	i=0
	while [ $i -lt "$n" ]; do
		printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"d%d","namespace":"bench"},"spec":{"source":"dir","dir":{"path":"%s"}}}\n' \
		    $i "$T/sites/loja $i" >"$T/df.json"
		"$build/decoctl" apply -f "$T/df.json" >/dev/null
		i=$((i + 1))
	done
	w=0
	until [ "$(find "$T/state/published/bench" -name decofile.json 2>/dev/null | wc -l)" -ge "$n" ]; do
		sleep 0.2
		w=$((w + 1))
		[ $w -lt 3000 ] || { echo "not all $n published in 600 s: $T/decod-$mode.log" >&2; exit 1; }
	done
	sleep 5	# the start-up burst settles (status writes, housekeeping)
	f=$(stage_pid fetcher); r=$(stage_pid renderer); p=$(stage_pid publisher)
	f0=$(ticks "$f"); r0=$(ticks "$r"); p0=$(ticks "$p"); t0=$(now_ms)
	sleep "$secs"
	f1=$(ticks "$f"); r1=$(ticks "$r"); p1=$(ticks "$p"); t1=$(now_ms)
	hz=$(getconf CLK_TCK)
	pct() { echo "$1 $2 $hz $t0 $t1" | awk '{printf "%.2f", ($2 - $1) * 100000 / $3 / ($5 - $4)}'; }
	echo "mode=$mode decofiles=$n idle_s=$(( (t1 - t0) / 1000 )) cpu_pct_of_one_core fetcher=$(pct "$f0" "$f1") renderer=$(pct "$r0" "$r1") publisher=$(pct "$p0" "$p1")"

	# edits: a block of site k rewritten; the fetcher's read and the publish
	: >"$T/lat-$mode"
	e=0
	while [ $e -lt "$edits" ]; do
		k=$(( (e * 37) % n ))
		out="$T/state/published/bench/d$k/decofile.json"
		s0=$(grep -c "msg=fetched ns=bench name=d$k " "$T/decod-$mode.log" || true)
		te=$(now_ms)
		printf '{"title": "Loja %d", "edição": "%s-%d"}\n' $k $mode $e >"$T/sites/loja $k/Cabeçalho.json"
		until [ "$(grep -c "msg=fetched ns=bench name=d$k " "$T/decod-$mode.log" || true)" -gt "$s0" ]; do
			sleep 0.01
			[ $(( $(now_ms) - te )) -lt 60000 ] || break
		done
		tf=$(grep "msg=fetched ns=bench name=d$k " "$T/decod-$mode.log" | tail -1 |
		    sed 's/^ts=\([^ ]*\) .*/\1/')
		until grep -q "\"edição\":\"$mode-$e\"" "$out" 2>/dev/null; do
			sleep 0.01
			[ $(( $(now_ms) - te )) -lt 60000 ] || break
		done
		tp=$(now_ms)
		python3 -c '
import datetime, sys
tf = datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
    tzinfo=datetime.timezone.utc).timestamp() * 1000
print(int(tf) - int(sys.argv[2]), int(sys.argv[3]) - int(sys.argv[2]))' "$tf" "$te" "$tp" >>"$T/lat-$mode"
		e=$((e + 1))
	done
	python3 - "$T/lat-$mode" "$mode" <<'PY'
import sys
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
def q(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))]
seen = [r[0] for r in rows]
pub = [r[1] for r in rows]
print("mode=%s edits=%d edit_to_fetched_ms p50=%d p90=%d max=%d edit_to_published_file_ms p50=%d p90=%d max=%d"
      % (sys.argv[2], len(rows), q(seen, .5), q(seen, .9), max(seen), q(pub, .5), q(pub, .9), max(pub)))
PY
	kill "$dpid"
	wait "$dpid" 2>/dev/null || true
done
