#!/bin/sh
# bench_github.sh - the GitHub source's benchmark (doc/benchmarks.md):
#   bench/bench_github.sh BUILD_DIR [ROUNDS]      (or: make bench-github)
# A 360-file / 4.2 MB site (bench/gen, seed 1) in a git repository behind the
# GitHub stand-in (t/stand-in/github.py); decod runs fetcher, renderer and
# publisher (file target).  Each round commits a one-block edit and measures
# from the moment the stand-in answered the poll that saw the new sha (its
# request log) to the publish (mtime of timestamp.txt, written last), with
# the fetch part (zipball served, "fetched" in the log).  Then it counts what
# an unchanged ref costs over 10 polls: commits requests, 304s, zipballs.
set -eu
B=${1:?usage: bench_github.sh BUILD_DIR [ROUNDS]}
ROUNDS=${2:-5}
S=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/decod-bench-github.XXXXXX")
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	for p in $PIDS; do wait "$p" 2>/dev/null || true; done
	rm -rf "$W"
}
trap cleanup EXIT INT TERM
ms() { echo $(( $(date +%s%N) / 1000000 )); }
mtime_ms() { python3 -c 'import os,sys; print(os.stat(sys.argv[1]).st_mtime_ns // 1000000)' "$1"; }
wait_for() { # wait_for SECONDS CMD...
	end=$(( $(ms) + $1 * 1000 )); shift
	while ! "$@" >/dev/null 2>&1; do
		[ "$(ms)" -ge $end ] && return 1
		sleep 0.02
	done
}

# the site in a git repository
"$B/bench/gen" -s 1 -n 360 -b 4.2MB "$W/repo/.deco/blocks" >/dev/null
git init -q -b main "$W/repo"
git -C "$W/repo" config user.email bench@decod.invalid
git -C "$W/repo" config user.name decod-bench
git -C "$W/repo" add -A && git -C "$W/repo" commit -qm site
FILES=$(find "$W/repo/.deco/blocks" -type f | wc -l)
BYTES=$(du -sb "$W/repo/.deco/blocks" | cut -f1)
ZIP=$(git -C "$W/repo" archive --format=zip --prefix=acme-site-0000000/ HEAD | wc -c)

# the stand-in and decod
printf 'ghp_bench%s\n' "$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')" >"$W/token"
mkdir -p "$W/state/secrets/gh" "$W/libexec"
cp "$W/token" "$W/state/secrets/gh/token"
python3 "$S/t/stand-in/github.py" --repo "acme/site=$W/repo" --token "$W/token" \
    --port-file "$W/gh.port" --log "$W/gh.log" 2>"$W/gh.err" &
PIDS="$PIDS $!"
wait_for 10 test -s "$W/gh.port"
read -r GH_PORT _ <"$W/gh.port"
for s in fetcher renderer publisher; do ln -s "$B/daemons/$s/$s" "$W/libexec/$s"; done
cat >"$W/decod.conf" <<CONF
state_dir = $W/state
runtime_dir = $W/run
libexec_dir = $W/libexec
store = local:$W/store
stages = fetcher renderer publisher
rescan_interval = 300ms
github_api_url = http://127.0.0.1:$GH_PORT
log_level = debug
CONF
export DECOD_CONFIG="$W/decod.conf"
"$B/decod" >"$W/decod.log" 2>&1 &
PIDS="$PIDS $!"
ready3() { [ "$("$B/decoctl" stages 2>/dev/null | grep -c READY)" -eq 3 ]; }
wait_for 30 ready3
printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"site","namespace":"bench"},"spec":{"source":"github","target":"file","github":{"org":"acme","repo":"site","commit":"main","path":".deco/blocks","period":"1s","secret":"gh"}}}' >"$W/df.json"
"$B/decoctl" -n bench apply -f "$W/df.json" >/dev/null
TS="$W/state/published/bench/site/timestamp.txt"
wait_for 60 test -s "$TS" || { echo "first publish did not happen" >&2; tail "$W/decod.log" >&2; exit 1; }

echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "# site: $FILES files, $BYTES bytes; zipball $ZIP bytes"
echo "round  seen>served  served>fetched  fetched>rendered  rendered>published  seen>published (ms)"
worst=0
total=0
f=$(ls "$W/repo/.deco/blocks" | grep '\.json$' | head -1)
for r in $(seq "$ROUNDS"); do
	before=$(mtime_ms "$TS")
	python3 - "$W/repo/.deco/blocks/$f" "$r" <<'PY'
import json, sys
p, r = sys.argv[1], sys.argv[2]
d = json.load(open(p))
d = {"benchRound": int(r), "was": d} if not isinstance(d, dict) else dict(d, benchRound=int(r))
json.dump(d, open(p, "w"), indent=2)
PY
	git -C "$W/repo" commit -qam "round $r"
	sha=$(git -C "$W/repo" rev-parse HEAD)
	moved() { [ "$(mtime_ms "$TS")" != "$before" ]; }
	wait_for 60 moved || { echo "round $r: no publish" >&2; exit 1; }
	sleep 0.3	# the log lines are flushed
	row=$(python3 - "$W/gh.log" "$W/decod.log" "$sha" "$(mtime_ms "$TS")" "$r" <<'PY'
import datetime, re, sys
gh, log, sha, pub, r = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
def t(line):
    ts = re.match(r"ts=(\S+)", line).group(1)
    return int(datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp() * 1000)
seen = served = fetched = rendered = None
for line in open(gh):
    if line.startswith("GET /repos/acme/site/commits/main auth 200 "):
        seen = int(line.rsplit("ms=", 1)[1])
    if line.startswith("codeload GET /acme/site/legacy.zip/" + sha + " noauth 200 "):
        served = int(line.rsplit("ms=", 1)[1])
h = None
for line in open(log):
    if "msg=fetched" in line and "commit=" + sha in line:
        fetched = t(line)
    if "msg=rendered" in line and "commit=" + sha in line:
        rendered, h = t(line), re.search(r"hash=(\w+)", line).group(1)
print("%5s  %11d  %14d  %16d  %18d  %14d" % (r, served - seen, fetched - served,
      rendered - fetched, pub - rendered, pub - seen))
PY
)
	echo "$row"
	d=${row##* }
	total=$((total + d))
	[ "$d" -gt "$worst" ] && worst=$d
done
echo "mean seen->published: $((total / ROUNDS)) ms, worst: $worst ms (bound 500 ms)"

# an unchanged ref: what 10 polls cost
stat() { curl -sf "http://127.0.0.1:$GH_PORT/_stand-in/stats" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["commits"], d["commits_304"], d["zipball"], d["codeload"])'; }
polls() { grep -c 'msg="poll done" ns=bench name=site ' "$W/decod.log" || true; }
p0=$(polls)
set -- $(stat)
c0=$1 n0=$2 z0=$3 l0=$4
wait_for 60 sh -c "[ \$(grep -c 'msg=\"poll done\" ns=bench name=site ' '$W/decod.log') -ge $((p0 + 10)) ]"
p1=$(polls)
set -- $(stat)
echo "unchanged ref, $((p1 - p0)) polls: $(( $1 - c0 )) commits requests, $(( $2 - n0 )) of them 304, $(( $3 - z0 )) zipball requests, $(( $4 - l0 )) downloads"
