#!/bin/sh
# bench_notify.sh BUILD_DIR - notify N replicas three ways, side by side, on
# the same URLs served by one bench/replica (epoll, answers at once, closes
# each connection as a distinct host would): decod's notify engine (at its
# default concurrency 30 and at 1000), `curl -Z --parallel-max 1000` (curl's
# own parallel mode) and `xargs -P 30 curl` (a process per call).  Replica i
# is http://127.0.X.Y:PORT/r/i, one loopback address per replica.
# Prints a Markdown table on stdout.  COUNTS="150 1000 10000" by default;
# xargs runs up to XARGS_MAX=1000 replicas (a process per call is slow).
set -eu
B=${1:?usage: bench_notify.sh BUILD_DIR}
COUNTS=${COUNTS:-150 1000 10000}
XARGS_MAX=${XARGS_MAX:-1000}	# a process per call: 10,000 takes minutes
T=$(mktemp -d "${TMPDIR:-/tmp}/bench-notify.XXXXXX")
RPID=
cleanup() { [ -n "$RPID" ] && kill "$RPID" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP PIPE	# so the EXIT trap runs (a reader such as head gone too)

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
"$B/bench/replica" --any > "$T/replica.out" 2> "$T/replica.err" &
RPID=$!
i=0
while ! grep -q '^listening on' "$T/replica.out"; do
	i=$((i + 1)); [ $i -gt 100 ] && { echo "replica did not start" >&2; exit 1; }
	sleep 0.05
done
PORT=$(awk '{print $3}' "$T/replica.out")

# the same push body for every tool (about 2 KB, as bench_notify sends)
python3 -c 'import sys; sys.stdout.write("{\"decofile\":{\"Page\":{\"html\":\"" + "x"*1977 + "\"}},\"source\":\"operator\",\"timestamp\":\"1731598481\"}")' > "$T/body.json"

ms() { echo $(( $(date +%s%N) / 1000000 )); }

echo "| replicas | engine c=30 | engine c=1000 | curl -Z (1000) | xargs -P 30 curl | xargs / engine c=30 |"
echo "|---:|---:|---:|---:|---:|---:|"
for n in $COUNTS; do
	python3 - "$n" "$PORT" > "$T/urls" <<'PY'
import sys
n, port = int(sys.argv[1]), sys.argv[2]
for i in range(n):
    print("http://127.0.%d.%d:%s/r/%d/.decofile/reload" % ((i // 250) % 250, i % 250 + 1, port, i))
PY
	# the engine (its own figure: start of the job to the last answer)
	e30=$("$B/bench/bench_notify" --hosts --base "$PORT" --count "$n" --concurrency 30 |
	    awk '{for (i = 1; i <= NF; i++) if ($i ~ /^(ms|confirmed)=/) printf "%s ", $i}')
	e1k=$("$B/bench/bench_notify" --hosts --base "$PORT" --count "$n" --concurrency 1000 |
	    awk '{for (i = 1; i <= NF; i++) if ($i ~ /^(ms|confirmed)=/) printf "%s ", $i}')

	# curl's parallel mode: one process, a config file of URLs
	awk '{printf "url = \"%s\"\noutput = \"/dev/null\"\n", $0}' "$T/urls" > "$T/curl.cfg"
	t0=$(ms)
	curl -s --no-progress-meter -Z --parallel-max 1000 -X POST -H 'Content-Type: application/json' \
	    --data-binary @"$T/body.json" -w '%{http_code}\n' -K "$T/curl.cfg" > "$T/curl.codes" || true
	t1=$(ms)
	cz="ms=$((t1 - t0)) confirmed=$(grep -c '^200$' "$T/curl.codes" || true)"

	# a process per call, 30 at once
	if [ "$n" -le "$XARGS_MAX" ]; then
		t0=$(ms)
		xargs -P 30 -n 1 curl -s -o /dev/null -w '%{http_code}\n' -X POST \
		    -H 'Content-Type: application/json' --data-binary @"$T/body.json" \
		    < "$T/urls" > "$T/xargs.codes" || true
		t1=$(ms)
		xa="ms=$((t1 - t0)) confirmed=$(grep -c '^200$' "$T/xargs.codes" || true)"
	else
		xa="skipped"
	fi
	e30ms=$(echo "$e30" | sed 's/.*ms=\([0-9]*\).*/\1/')
	xams=$(echo "$xa" | sed -n 's/.*ms=\([0-9]*\).*/\1/p')
	ratio=$( [ -n "$xams" ] && [ "$e30ms" -gt 0 ] && echo "$((xams / e30ms))x" || echo "-")
	echo "| $n | $e30| $e1k| $cz | $xa | $ratio |"
done
echo
echo "load average after the runs: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
