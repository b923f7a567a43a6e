#!/bin/sh
# bench_batch.sh - N decofiles waiting at once for the renderer, then the
# publisher (file target): items per second and fsyncs per item.  The
# supervisor first runs the fetcher alone, so N render items pile up in the
# journal; then renderer and publisher start on them, each under
# `strace -f -e trace=fsync,fdatasync,syncfs` (one line per call, counted),
# and the run is timed from
# their start to the N-th published file.
#   sh bench/bench_batch.sh BUILD_DIR [N]
# CPU=1: no strace; renderer, publisher and notifier (no replicas) on the N
# waiting items, and each stage's CPU (user + system) once the notifier's
# last item is done: the pipeline's own cost per item.
set -eu
build=$(cd "${1:?usage: bench_batch.sh BUILD_DIR [N]}" && pwd)
n=${2:-1000}
T=$(mktemp -d "${TMPDIR:-/tmp}/decod-bench.XXXXXX")
PIDS=""
# (set -e holds in the trap too: a process already gone must not keep $T)
trap 'for p in $PIDS; do kill $p 2>/dev/null || true; done; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
trap 'exit 1' INT TERM HUP PIPE	# so the EXIT trap runs (a reader such as head gone too)
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
. "$(dirname "$0")/fs_note.sh"
fs_note "$T"

mkdir -p "$T/libexec"
ln -s "$build/daemons/fetcher/fetcher" "$T/libexec/fetcher"
for s in renderer publisher notifier; do
	if [ -n "${CPU:-}" ] || [ $s = notifier ]; then
		ln -s "$build/daemons/$s/$s" "$T/libexec/$s"
		continue
	fi
	# each under strace, one line per sync call
	printf '#!/bin/sh\nexec strace -f -qq -e trace=fsync,fdatasync,syncfs -o %s/strace-%s "%s" "$@"\n' \
	    "$T" "$s" "$build/daemons/$s/$s" >"$T/libexec/$s"
	chmod +x "$T/libexec/$s"
done
i=0
while [ $i -lt "$n" ]; do
	d="$T/sites/s$i"
	mkdir -p "$d/pages"
	printf '{"title": "Site %d", "menu": ["Home", "Offers"]}\n' $i >"$d/Header.json"
	printf '{"path": "/", "sections": [1, 2, 3]}\n' >"$d/pages/Home.json"
	i=$((i + 1))
done
conf() {
	cat >"$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
poll_period = 1h
stages = $1
CONF
}
start() {
	"$build/decod" 2>>"$T/decod.log" &
	dpid=$!
	PIDS="$PIDS $dpid"
	until [ "$("$build/decoctl" stages 2>/dev/null | grep -c READY)" -eq "$1" ]; do sleep 0.05; done
}
export DECOD_CONFIG="$T/decod.conf"

# 1. the fetcher alone: N render items wait in the journal
conf fetcher
start 1
i=0
while [ $i -lt "$n" ]; do
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"d%d","namespace":"bench"},"spec":{"source":"dir","dir":{"path":"%s"}}}\n' \
	    $i "$T/sites/s$i" >>"$T/all.json"
	i=$((i + 1))
done
split -l 1 -d -a 5 "$T/all.json" "$T/df."
for f in "$T"/df.*; do "$build/decoctl" apply -f "$f" >/dev/null; done
until [ "$(sqlite3 "$T/state/journal.db" "SELECT count(*) FROM items WHERE stage='renderer' AND state='pending'")" -ge "$n" ]; do
	sleep 0.2
done
kill "$dpid"
wait "$dpid" 2>/dev/null || true

if [ -n "${CPU:-}" ]; then
	# 2'. the three stages on the N waiting items, to the notifier's last
	conf "renderer publisher notifier"
	uptime
	t0=$(now_ms)
	start 3
	until [ "$(sqlite3 "$T/state/journal.db" "SELECT count(*) FROM items WHERE stage='notifier' AND state='done'")" -ge "$n" ]; do
		sleep 0.1
	done
	t1=$(now_ms)
	for p in $(ps -o pid= --ppid "$dpid"); do
		# comm, utime + stime in clock ticks (fields 14 and 15), minor
		# faults (10), and the write calls made (/proc/PID/io syscw)
		awk -v hz="$(getconf CLK_TCK)" -v w="$(awk '/^syscw/ {print $2}' "/proc/$p/io")" \
		    '{c=$2; gsub(/[()]/, "", c); printf "%s %.2f s, %d faults, %d writes\n", c, ($14 + $15) / hz, $10, w}' \
		    "/proc/$p/stat"
	done | sort
	echo "$n decofiles rendered, published and notified in $((t1 - t0)) ms (stage start included)"
	exit 0
fi

# 2. renderer and publisher on the N waiting items
conf "renderer publisher"
uptime
t0=$(now_ms)
start 2
until [ "$(find "$T/state/published/bench" -name 'decofile.*' 2>/dev/null | wc -l)" -ge "$n" ]; do
	sleep 0.05
done
t1=$(now_ms)
until [ "$(sqlite3 "$T/state/journal.db" "SELECT count(*) FROM items WHERE stage IN ('renderer','publisher') AND state='pending'")" -eq 0 ]; do
	sleep 0.05
done
t2=$(now_ms)
kill "$dpid"
wait "$dpid" 2>/dev/null || true
for s in renderer publisher; do
	sync=$(grep -cE '(fsync|fdatasync|syncfs)\(' "$T/strace-$s" || true)
	echo "$s: $sync sync calls for $n items: $(echo "$sync $n" | awk '{printf "%.2f", $1 / $2}') per item"
done
echo "$n decofiles: all published in $((t1 - t0)) ms ($(echo "$n $t0 $t1" | awk '{printf "%.0f", $1 * 1000 / ($3 - $2)}') items/s), journal settled in $((t2 - t0)) ms (stage start included)"
