#!/bin/sh
# bench_s3_drift.sh BUILD_DIR - the s3 target's drift re-check at scale: N
# Decofiles (N=1000) published to the S3 stand-in (s3rver behind the aws4
# SigV4 verifier, t/stand-in/s3), then, after a warm-up of WARMUP (65)
# seconds, the publisher left alone for WINDOW seconds (120) with
# s3_check_interval=CHECK (60s): every object is HEAD-checked once a
# minute.  Reports the publish time of the N objects, the HEADs the
# stand-in counted per minute, and the publisher's CPU (utime+stime from
# /proc) as a share of one core over the window.  CHECK=1h gives the idle
# baseline; PERF_OUT=FILE records a perf profile of the window.  Needs node
# and npm, and `make check` built once (for t/stage/testtool).
set -eu
B=$(cd "${1:?usage: bench_s3_drift.sh BUILD_DIR}" && pwd)
N=${N:-1000}
WINDOW=${WINDOW:-120}
WARMUP=${WARMUP:-65}	# one check interval: the first round lands after it
top=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/bench-s3.XXXXXX")
SPID= PPID_=
cleanup() {
	for p in $PPID_ $SPID; do kill "$p" 2>/dev/null || true; done
	for p in $PPID_ $SPID; do wait "$p" 2>/dev/null || true; done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP PIPE	# so the EXIT trap runs (a reader such as head gone too)
TOOL="$B/t/stage/testtool"
PUB="$B/daemons/publisher/publisher"
[ -x "$TOOL" ] || make -C "$B" -s t/stage/testtool >/dev/null
NM=$("$top/t/stand-in/s3/setup.sh" "$B/t/stand-in/s3")
export NODE_PATH="$NM/node_modules"

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
EP="http://127.0.0.1:$PORT"
S3_STAND_IN_SECRET=bench-secret node "$top/t/stand-in/s3/s3-stand-in.js" --port "$PORT" \
    --dir "$T/s3data" --bucket bench --region us-east-1 --access-key AKIDBENCH \
    --ready "$T/ready" >"$T/s3.log" 2>&1 &
SPID=$!
i=0
until [ -s "$T/ready" ]; do i=$((i + 1)); [ $i -gt 400 ] && { echo "stand-in did not start" >&2; exit 1; }; sleep 0.05; done

cat >"$T/conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
s3_bucket = bench
s3_endpoint = $EP
s3_check_interval = ${CHECK:-60s}
CONF
C="-c $T/conf"
stat_of() { curl -s "$EP/__stand-in/stats" | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
inventory() { sqlite3 -cmd '.timeout 5000' "$T/state/journal.db" "SELECT count(*) FROM inventory WHERE target='s3'" 2>/dev/null || echo 0; }

python3 -c 'import sys; sys.stdout.write("{\"Page\":{\"html\":\"" + "x"*2000 + "\"}}")' >"$T/doc.json"
H=$("$TOOL" $C spool "$T/doc.json")
i=0
while [ $i -lt "$N" ]; do
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"site%d","namespace":"bench"},"spec":{"source":"inline","inline":{"value":{}},"target":"s3"}}' $i >"$T/df.json"
	"$TOOL" $C apply "$T/df.json"
	"$TOOL" $C enqueue publisher bench "site$i" "$H" "format=json" >/dev/null
	i=$((i + 1))
done

t0=$(date +%s%N)
AWS_ACCESS_KEY_ID=AKIDBENCH AWS_SECRET_ACCESS_KEY=bench-secret "$PUB" $C >"$T/pub.log" 2>&1 &
PPID_=$!
until [ "$(inventory)" -ge "$N" ]; do
	kill -0 $PPID_ 2>/dev/null || { tail "$T/pub.log" >&2; exit 1; }
	sleep 0.2
done
t1=$(date +%s%N)
PUBLISH_S=$(awk "BEGIN{printf \"%.1f\", ($t1 - $t0) / 1e9}")
PUBLISH_CPU=$(cpu_ticks $PPID_)

sleep "$WARMUP"
h0=$(stat_of HEAD)
c0=$(cpu_ticks $PPID_)
w0=$(date +%s%N)
if [ -n "${PERF_OUT:-}" ]; then
	perf record -F 999 -g -p $PPID_ -o "$PERF_OUT" -- sleep "$WINDOW" 2>/dev/null
else
	sleep "$WINDOW"
fi
h1=$(stat_of HEAD)
c1=$(cpu_ticks $PPID_)
w1=$(date +%s%N)
HZ=$(getconf CLK_TCK)
awk -v n="$N" -v h=$((h1 - h0)) -v c=$((c1 - c0)) -v hz="$HZ" -v w=$((w1 - w0)) \
    -v ps="$PUBLISH_S" -v pc="$PUBLISH_CPU" 'BEGIN {
	wall = w / 1e9; cpu = c / hz; per_min = h * 60 / wall
	printf "| objects | publish all (wall) | publish CPU | HEAD checks/min | publisher CPU (window %.0f s) | share of one core | CPU per check |\n", wall
	printf "|---:|---:|---:|---:|---:|---:|---:|\n"
	printf "| %d | %s s | %.2f s | %.0f | %.2f s | %.2f %% | %.0f us |\n", n, ps, pc / hz,
	    per_min, cpu, 100 * cpu / wall, (h > 0 ? 1e6 * cpu / h : 0)
}'
grep -c 'level=error' "$T/pub.log" | awk '{ if ($1 > 0) print "errors logged: " $1 }'
