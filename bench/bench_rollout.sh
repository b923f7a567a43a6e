#!/bin/sh
# bench_rollout.sh - edit -> every replica confirmed, end to end through the
# real supervisor and stages: a block of a dir-source Decofile is edited,
# `decoctl sync` is run, and `decoctl wait` returns when all N replicas
# (static spec.endpoints on one epoll bench replica) confirmed.  Then the
# resident memory of each stage, idle.
#   sh bench/bench_rollout.sh BUILD_DIR [REPLICAS] [ROUNDS] [SITE_SIZE]
# SITE_SIZE: "sample" (examples/sample-site, a few KB) or e.g. 4.2MB
# (bench/gen, 360 files).
set -eu
build=$(cd "${1:?usage: bench_rollout.sh BUILD_DIR [REPLICAS] [ROUNDS] [SIZE]}" && pwd)
n=${2:-150}
rounds=${3:-10}
size=${4:-sample}
top=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/decod-bench.XXXXXX")
PIDS=""
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; wait 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
trap 'exit 1' INT TERM HUP PIPE	# so the EXIT trap runs (a reader such as head gone too)

mkdir -p "$T/libexec"
for s in fetcher renderer publisher notifier; do
	ln -s "$build/daemons/$s/$s" "$T/libexec/$s"
done
if [ "$size" = sample ]; then
	cp -r "$top/examples/sample-site/blocks" "$T/blocks"
else
	"$build/bench/gen" -s 1 -n 360 -b "$size" "$T/blocks" >/dev/null
fi
printf '{"title":"round 0"}' > "$T/blocks/BenchEdit.json"

"$build/bench/replica" --port 0 > "$T/replica.out" 2>&1 &
PIDS="$PIDS $!"
i=0
until grep -q '^listening on' "$T/replica.out"; do i=$((i+1)); [ $i -lt 200 ]; sleep 0.05; done
port=$(awk '/^listening on/ {print $3}' "$T/replica.out")

cat > "$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
poll_period = 1h
CONF
export DECOD_CONFIG="$T/decod.conf"
"$build/decod" 2>"$T/decod.log" &
PIDS="$PIDS $!"
i=0
until [ "$("$build/decoctl" stages 2>/dev/null | grep -c READY)" -eq 4 ]; do
	i=$((i+1)); [ $i -lt 400 ]; sleep 0.05
done

eps=$(python3 -c "import sys; print(','.join('\"http://127.0.0.1:%s/r/%d\"' % (sys.argv[1], i) for i in range(int(sys.argv[2]))))" "$port" "$n")
cat > "$T/df.json" <<JSON
{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"bench","namespace":"bench"},
 "spec":{"source":"dir","dir":{"path":"$T/blocks"},"endpoints":[$eps]}}
JSON
"$build/decoctl" apply -f "$T/df.json" >/dev/null
"$build/decoctl" -n bench wait bench --for ready --timeout 120s >/dev/null

ts() { "$build/decoctl" -n bench get decofile bench -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"]["timestamp"])'; }
ms() { echo $(( $(date +%s%N) / 1000000 )); }
all=""
r=1
while [ $r -le "$rounds" ]; do
	last=$(ts)
	printf '{"title":"round %d"}' "$r" > "$T/blocks/BenchEdit.json"
	t0=$(ms)
	"$build/decoctl" -n bench sync bench >/dev/null
	"$build/decoctl" -n bench wait bench --for "timestamp:$((last + 1))" --timeout 60s >/dev/null
	t1=$(ms)
	all="$all $((t1 - t0))"
	r=$((r + 1))
done
confirmed=$(sqlite3 "$T/state/journal.db" "SELECT count(DISTINCT replica) FROM acks WHERE content_hash=(SELECT content_hash FROM publishes ORDER BY id DESC LIMIT 1)")
sorted=$(echo $all | tr ' ' '\n' | sort -n | tr '\n' ' ')
med=$(echo $all | tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
f=$T/state/published/bench/bench/decofile.json
[ -f "$f" ] || f=$T/state/published/bench/bench/decofile.bin
bytes=$(wc -c < "$f")
echo "edit -> $n replicas confirmed (site: $size, document $bytes bytes), $rounds rounds:"
echo "  ms: $sorted"
echo "  median ${med} ms; replicas that confirmed the last version: $confirmed/$n"
sleep 2
echo "resident memory of each stage, idle after the rounds:"
"$build/decoctl" stages -o json | python3 -c '
import json, sys
for s in json.load(sys.stdin)["stages"]:
    st = {}
    for line in open("/proc/%d/status" % s["pid"]):
        k, v = line.split(":", 1)
        st[k] = v.strip()
    pss = "?"
    for line in open("/proc/%d/smaps_rollup" % s["pid"]):
        if line.startswith("Pss:"):
            pss = line.split(":", 1)[1].strip()
    print("  %-10s VmRSS %10s (anon %s, file %s), PSS %s, peak %s, threads %s"
          % (s["name"], st["VmRSS"], st["RssAnon"], st["RssFile"], pss, st["VmHWM"], st["Threads"]))'
