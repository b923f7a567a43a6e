#!/bin/sh
# bench_fetch_batch.sh - the fetcher alone on N Decofiles (two small blocks
# each) until N render items wait in the journal, under
# `strace -f -qq -e trace=fsync,fdatasync,syncfs`: sync calls per item, by
# call.  The first phase of bench_batch.sh, with the fetcher traced.
#   sh bench/bench_fetch_batch.sh BUILD_DIR [N]
# SOURCE=dir|inline (dir).  COLD=1 (default): every Decofile is in the store
# before the fetcher starts (a cold start: many fetches finish at once);
# COLD=0: applied one by one while it runs, as bench_batch.sh does.
# ORDER=1: trace renames and the journal's WAL writes too (-y: fd paths) and
# count the WAL writes made while a rename into the spool was not yet
# covered by a syncfs (or an fsync of its folder): with the fetch batches
# the workers rename nothing and that count must be 0.  (Before them, the
# workers' own renames race the loop's commits of other Decofiles, so the
# count is not meaningful there.)
# CPU=1: no strace; the fetcher's CPU seconds (user + system, all threads,
# from /proc when the N items wait) and the wall time instead.
set -eu
build=$(cd "${1:?usage: bench_fetch_batch.sh BUILD_DIR [N]}" && pwd)
n=${2:-1000}
source=${SOURCE:-dir}
cold=${COLD:-1}
T=$(mktemp -d "${TMPDIR:-/tmp}/decod-bench.XXXXXX")
PIDS=""
trap 'for p in $PIDS; do kill $p 2>/dev/null || true; done; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
trap 'exit 1' INT TERM HUP PIPE	# so the EXIT trap runs (a reader such as head gone too)
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

trace=fsync,fdatasync,syncfs
[ "${ORDER:-0}" = 1 ] && trace="-y -e trace=$trace,rename,renameat,renameat2,pwrite64,pwritev"
[ "${ORDER:-0}" = 1 ] || trace="-e trace=$trace"
mkdir -p "$T/libexec"
printf '#!/bin/sh\nexec strace -f -qq %s -o %s/strace-fetcher "%s" "$@"\n' \
    "$trace" "$T" "$build/daemons/fetcher/fetcher" >"$T/libexec/fetcher"
[ "${CPU:-0}" = 1 ] && printf '#!/bin/sh\nexec "%s" "$@"\n' \
    "$build/daemons/fetcher/fetcher" >"$T/libexec/fetcher"
chmod +x "$T/libexec/fetcher"
cat >"$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
poll_period = 1h
stages = fetcher
CONF
export DECOD_CONFIG="$T/decod.conf"

i=0
while [ $i -lt "$n" ]; do
	if [ "$source" = dir ]; then
		d="$T/sites/s$i"
		mkdir -p "$d/pages"
		printf '{"title": "Site %d", "menu": ["Home", "Offers"]}\n' $i >"$d/Header.json"
		printf '{"path": "/", "sections": [1, 2, 3]}\n' >"$d/pages/Home.json"
		spec=$(printf '{"source":"dir","dir":{"path":"%s"}}' "$d")
	else
		spec=$(printf '{"source":"inline","inline":{"value":{"Header":{"title":"Site %d","menu":["Home","Offers"]},"Home":{"path":"/","sections":[1,2,3]}}}}' $i)
	fi
	printf -- '---\n{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"d%d","namespace":"bench"},"spec":%s}\n' \
	    $i "$spec" >>"$T/all.yaml"
	i=$((i + 1))
done
start() {
	"$build/decod" 2>>"$T/decod.log" &
	dpid=$!
	PIDS="$PIDS $dpid"
	until [ "$("$build/decoctl" stages 2>/dev/null | grep -c READY)" -eq 1 ]; do sleep 0.05; done
}

cat /proc/loadavg
if [ "$cold" = 1 ]; then
	"$build/decoctl" apply -f "$T/all.yaml" >/dev/null
	t0=$(now_ms)
	start
else
	t0=$(now_ms)
	start
	csplit -s -z -f "$T/df." "$T/all.yaml" '/^---$/' '{*}'
	for f in "$T"/df.*; do "$build/decoctl" apply -f "$f" >/dev/null; done
fi
until [ "$(sqlite3 "$T/state/journal.db" "SELECT count(*) FROM items WHERE stage='renderer' AND state='pending'" 2>/dev/null || echo 0)" -ge "$n" ]; do
	sleep 0.1
done
t1=$(now_ms)
if [ "${CPU:-0}" = 1 ]; then
	fpid=$(pgrep -P "$dpid" -f "$build/daemons/fetcher/fetcher" | head -1)
	tck=$(getconf CLK_TCK)
	# utime and stime: fields 14 and 15 of /proc/PID/stat (12 and 13 after comm)
	cpu=$(sed 's/.*) //' "/proc/$fpid/stat" | awk -v t="$tck" '{printf "%.2f", ($12 + $13) / t}')
	kill "$dpid"
	wait "$dpid" 2>/dev/null || true
	cat /proc/loadavg
	echo "fetcher ($source, cold=$cold): $cpu s of CPU for $n items; $n render items waiting after $((t1 - t0)) ms (stage start included)"
	exit 0
fi
kill "$dpid"
wait "$dpid" 2>/dev/null || true
cat /proc/loadavg
for call in fsync fdatasync syncfs; do
	c=$(grep -cE "(^|[^a-z])$call\(" "$T/strace-fetcher" || true)
	echo "fetcher $call: $c"
done
sync=$(grep -cE '(fsync|fdatasync|syncfs)\(' "$T/strace-fetcher" || true)
echo "fetcher ($source, cold=$cold): $sync sync calls for $n items: $(echo "$sync $n" | awk '{printf "%.2f", $1 / $2}') per item; $n render items waiting after $((t1 - t0)) ms (stage start included)"
if [ "${ORDER:-0}" = 1 ]; then
	awk '
	/rename/ && /\/spool\/[0-9a-f][0-9a-f]\// { renames++; pending++ }
	/syncfs/ && / = 0$/ { pending = 0 }
	/fsync\([0-9]+<[^>]*\/spool\/[0-9a-f][0-9a-f]>\)/ && / = 0$/ { pending = 0 }
	/pwrite(64|v)\([0-9]+<[^>]*journal\.db-wal>/ { wal++; if (pending > 0) bad++ }
	END { printf "order: %d spool renames, %d journal WAL writes, %d WAL writes with a spool rename not yet synced\n", renames, wal, bad }
	' "$T/strace-fetcher"
fi
