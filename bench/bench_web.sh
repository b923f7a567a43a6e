#!/bin/sh
# bench_web.sh - the web stage with N decofiles (default 10,000) on the
# local store, under the real supervisor with the fetcher (which fetches
# them all at start: the "busy stage"):
#   1. /metrics of the busy fetcher and of the web stage while the fetcher
#      works through the N decofiles (curl time_total, loopback);
#   2. the page: GET / (the HTML) and GET /api/v1/status (the rows the page
#      draws), server side (curl time_total on loopback; median and max);
#   3. Debian's chromium (playwright-core, bench/web_paint.js): first paint
#      (the paint timing API's first-contentful-paint), and the first and
#      all N rows drawn, from navigation;
#   4. a condition change (Ready written through the store by
#      t/stage/testtool, as a stage writes it) seen in the page's row, via
#      the Server-Sent Events: written -> row changed, measured in the page;
#   5. push receiver -> fetch started: a signed GitHub push POSTed (client
#      clock) -> the fetcher's "sync requested" log line (it schedules the
#      fetch in the same loop turn), for a git Decofile served by git daemon.
#   sh bench/bench_web.sh BUILD_DIR [N] [REPEATS]
# METRICS_ONLY=1: part 1 only (e.g. METRICS_ONLY=1 sh bench/bench_web.sh _build 2000)
# SAMPLES (default 40): the most scrapes of part 1 (more spread them over the whole fetch)
set -eu
build=$(cd "${1:?usage: bench_web.sh BUILD_DIR [N] [REPEATS]}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
n=${2:-10000}
reps=${3:-10}
T=$(mktemp -d "${TMPDIR:-/tmp}/decod-bench.XXXXXX")
PIDS=""
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; wait 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
trap 'exit 1' INT TERM HUP PIPE	# so the EXIT trap runs (a reader such as head gone too)
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
wait_for() { # SECONDS CMD...
	end=$(( $(now_ms) + $1 * 1000 )); shift
	while ! "$@" >/dev/null 2>&1; do
		[ "$(now_ms)" -ge $end ] && return 1
		sleep 0.05
	done
}
free_ports() { # N: P with P..P+N-1 free on 127.0.0.1
	python3 - "$1" <<'PY'
import socket, sys
n = int(sys.argv[1])
for _ in range(200):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close()
    if p + n > 65535:
        continue
    socks = []
    try:
        for i in range(n):
            t = socket.socket(); t.bind(("127.0.0.1", p + i)); socks.append(t)
    except OSError:
        continue
    finally:
        for t in socks: t.close()
    print(p); break
PY
}
# stats: median and max of the numbers on stdin (ms, one decimal)
stats() { sort -n | awk '{a[NR]=$1} END {printf "median %.1f ms, max %.1f ms (n=%d)", a[int((NR+1)/2)], a[NR], NR}'; }
# curl_ms URL: the time of a 200 answer in ms; a failed one counts in $T/failed
curl_ms() {
	curl -s -o /dev/null -w '%{http_code} %{time_total}\n' "$1" | awk -v f="$T/failed" \
	    '$1 == 200 {printf "%.1f\n", $2 * 1000; next} {print "failed " $1 >> f}'
}

echo "# machine: $(nproc) cores, $(uname -sr); load at start: $(uptime | sed 's/.*load average: //')"
MB=$(free_ports 8)
WP=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$T/libexec" "$T/remotes"
for s in fetcher web; do ln -s "$build/daemons/$s/$s" "$T/libexec/$s"; done
printf 'gh-bench-secret' >"$T/github.secret"
cat >"$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
stages = fetcher web
poll_period = 1h
log_level = info
metrics_listen = 127.0.0.1:$MB
web_listen = 127.0.0.1:$WP
web_github_secret_file = $T/github.secret
web_static_dir = $src/daemons/web/static
CONF
export DECOD_CONFIG="$T/decod.conf"
BASE="http://127.0.0.1:$WP"

# N inline decofiles in 100 namespaces, applied by decoctl in one go
python3 - "$n" >"$T/all.yaml" <<'PY'
import sys
n = int(sys.argv[1])
for i in range(n):
    print("---\napiVersion: deco.sites/v1alpha1\nkind: Decofile\nmetadata: {name: loja-%05d, namespace: sites-%02d}\n"
          "spec: {source: inline, inline: {value: {Header: {title: \"Loja %d\"}, Page: {path: /}}}}" % (i, i % 100, i))
PY
t0=$(now_ms)
"$build/decoctl" apply -f "$T/all.yaml" >/dev/null
echo "applied $n decofiles in $(( $(now_ms) - t0 )) ms"

# a git Decofile for the push receiver
git init -q -b main "$T/work"
git -C "$T/work" config user.email b@decod.invalid
git -C "$T/work" config user.name bench
mkdir -p "$T/work/.deco/blocks"
printf '{"v":1}' >"$T/work/.deco/blocks/Header.json"
git -C "$T/work" add -A && git -C "$T/work" commit -qm one
git clone -q --bare "$T/work" "$T/remotes/site.git"
GP=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
git daemon --export-all --reuseaddr --base-path="$T/remotes" --port="$GP" --listen=127.0.0.1 \
    "$T/remotes" >"$T/git.log" 2>&1 &
PIDS="$PIDS $!"
cat >"$T/git.json" <<JSON
{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"gitsite","namespace":"sites-git"},
 "spec":{"source":"git","git":{"url":"git://127.0.0.1:$GP/site.git","ref":"main","dir":".deco/blocks","period":"1h"}}}
JSON
"$build/decoctl" apply -f "$T/git.json" >/dev/null

# 1. /metrics while the fetcher works through them
t0=$(now_ms)
"$build/decod" 2>"$T/decod.log" &
PIDS="$PIDS $!"
wait_for 60 curl -sf "http://127.0.0.1:$((MB + 1))/metrics" || { tail "$T/decod.log"; exit 1; }
: >"$T/m-fetcher" ; : >"$T/m-web"
i=0
while [ $i -lt "${SAMPLES:-40}" ] && [ "$(grep -c 'msg=fetched' "$T/decod.log")" -lt "$n" ]; do
	curl_ms "http://127.0.0.1:$((MB + 1))/metrics" >>"$T/m-fetcher"
	curl_ms "http://127.0.0.1:$((MB + 7))/metrics" >>"$T/m-web"
	i=$((i + 1))
done
echo "   failed answers (not in the figures): $(cat "$T/failed" 2>/dev/null | wc -l)"
echo "1. /metrics of the fetcher while it fetches (busy; $(grep -c 'msg=fetched' "$T/decod.log") of $n fetched after the samples; load $(uptime | sed 's/.*load average: //')): $(stats <"$T/m-fetcher")"
echo "   /metrics of the web stage meanwhile: $(stats <"$T/m-web")"
echo "   a fetcher exposition: $(curl -s "http://127.0.0.1:$((MB + 1))/metrics" | wc -c) bytes, $(curl -s "http://127.0.0.1:$((MB + 1))/metrics" | grep -vc '^#') samples"
wait_for 900 sh -c "[ \$(grep -c 'msg=fetched' '$T/decod.log') -ge $n ]" || echo "# not every decofile fetched after 900 s"
echo "   the fetcher fetched all $n in $(( $(now_ms) - t0 )) ms from start"
[ -z "${METRICS_ONLY:-}" ] || exit 0	# METRICS_ONLY=1: part 1 only
sleep 2	# let the status writes settle before timing the page (not a measurement)

# 2. the page server side
: >"$T/html"; : >"$T/api"
i=0
while [ $i -lt "$reps" ]; do
	curl_ms "$BASE/" >>"$T/html"
	curl_ms "$BASE/api/v1/status" >>"$T/api"
	i=$((i + 1))
done
echo "2. GET / (the HTML): $(stats <"$T/html"); load $(uptime | sed 's/.*load average: //')"
echo "   GET /api/v1/status ($n rows, $(curl -s "$BASE/api/v1/status" | wc -c) bytes): $(stats <"$T/api")"
echo "   the events snapshot: $(curl -s -N --max-time 5 -o /dev/null -w '%{time_starttransfer}' "$BASE/api/v1/events" | awk '{printf "%.1f ms to the first byte", $1 * 1000}')"

# 3-4. chromium
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$CHROMIUM" ] && BR=$("$src/t/browser/setup.sh" "$build/t/browser" 2>"$T/setup.err"); then
	BASE=$BASE N=$n REPS=$reps CHROMIUM=$CHROMIUM \
	    WRITE="$build/t/stage/testtool -c $T/decod.conf condition sites-07 loja-00007 bench Ready" \
	    NODE_PATH="$BR/node_modules" node "$src/bench/web_paint.js" || echo "# the browser part failed"
	echo "   load $(uptime | sed 's/.*load average: //')"
else
	echo "3-4. skipped: no chromium or playwright-core"
fi

# 5. push -> fetch started
hmac() { openssl dgst -sha256 -hmac gh-bench-secret "$1" | sed 's/^.*= //'; }
: >"$T/push"
i=0
while [ $i -lt "$reps" ]; do
	printf '{"ref":"refs/heads/main","after":"%040d","repository":{"full_name":"x/site","clone_url":"git://127.0.0.1:%s/site.git","default_branch":"main"}}' \
	    $i "$GP" >"$T/push.json"
	before=$(grep -c 'msg="sync requested"' "$T/decod.log" || true)
	sig=$(hmac "$T/push.json")
	t=$(date +%s%N)
	curl -s -o "$T/push.out" -X POST -H "Content-Type: application/json" -H "X-GitHub-Event: push" \
	    -H "X-GitHub-Delivery: bench-$i-$$" -H "X-Hub-Signature-256: sha256=$sig" \
	    --data-binary "@$T/push.json" "$BASE/hooks/github"
	grep -q '"name":"gitsite"' "$T/push.out" || { echo "# push not matched: $(cat "$T/push.out")"; break; }
	wait_for 10 sh -c "[ \$(grep -c 'msg=\"sync requested\"' '$T/decod.log') -gt $before ]" || { echo "# no sync requested"; break; }
	ts=$(grep 'msg="sync requested"' "$T/decod.log" | tail -1 | sed 's/^ts=\([^ ]*\).*/\1/')
	python3 -c 'import sys, datetime
t = datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
print("%.1f" % (t.timestamp() * 1000 - int(sys.argv[2]) / 1e6))' "$ts" "$t" >>"$T/push"
	sleep 1	# pacing: the fetch it started ends before the next push (not measured)
	i=$((i + 1))
done
echo "5. push -> the fetcher's sync requested (fetch scheduled at once; ms clock of the log): $(stats <"$T/push"); load $(uptime | sed 's/.*load average: //')"
