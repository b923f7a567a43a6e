#!/bin/sh
# fetch_hung_remote - issue 13, defect 3: a git remote that accepts and
# never answers must not delay anyone else.  Under the real supervisor
# (fetcher, renderer, publisher; file target) with a pool of two workers,
# two Decofiles on a hung remote take every worker remote fetches may have
# (all but one) and wait for it; an inline and a dir Decofile applied
# meanwhile are published within a bound on the worker kept for local
# sources (they used to wait the whole fetch_timeout behind the hung fetch);
# each hung one gets its own Syncing=False FetchError once its deadline
# passes and is retried with a doubling delay.
. "$top_srcdir/t/lib/common.sh"

DECOD=$top_builddir/decod
DECOCTL=$top_builddir/decoctl
for p in "$DECOD" "$DECOCTL"; do [ -x "$p" ] || bail "$p not built"; done
for s in fetcher renderer publisher; do
	[ -x "$top_builddir/daemons/$s/$s" ] || bail "$s not built"
done
command -v git >/dev/null || skip_all "git is not installed"

mkdir -p "$T/libexec"
for s in fetcher renderer publisher; do
	ln -s "$top_builddir/daemons/$s/$s" "$T/libexec/$s"
done
python3 "$top_srcdir/t/lib/blackhole.py" "$T/hole.port" "$T/hole.count" &
track_pid $!
wait_for 10 test -s "$T/hole.port" || bail "blackhole did not listen"
HOLE=$(cat "$T/hole.port")

DEADLINE=4	# fetch_timeout, seconds
cat >"$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
stages = fetcher renderer publisher
rescan_interval = 300ms
poll_period = 1s
fetch_timeout = ${DEADLINE}s
fetch_concurrency = 2
CONF
export DECOD_CONFIG="$T/decod.conf"
ctl() { "$DECOCTL" -n sites-loja "$@"; }
ready3() { [ "$("$DECOCTL" stages 2>/dev/null | grep -c READY)" -eq 3 ]; }
published() { test -s "$T/state/published/sites-loja/$1/decofile.json"; }
condition() { # condition NAME TYPE FIELD
	ctl get decofile "$1" -o json | python3 -c '
import json, sys
for c in json.load(sys.stdin).get("status", {}).get("conditions", []):
    if c["type"] == sys.argv[1]: print(c[sys.argv[2]])' "$2" "$3"; }
condition_is() { [ "$(condition "$1" "$2" "$3")" = "$4" ]; }
held() { [ "$(cat "$T/hole.count" 2>/dev/null || echo 0)" -ge "$1" ]; }
ms() { echo $(( $(date +%s%N) / 1000000 )); }
df() { # df NAME SOURCE SPEC_JSON
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"%s","namespace":"sites-loja"},"spec":{"source":"%s","target":"file",%s}}' \
	    "$1" "$2" "$3" >"$T/$1.json"
	ctl apply -f "$T/$1.json" >/dev/null
}

"$DECOD" >>"$T/decod.log" 2>&1 &
track_pid $!
wait_for 20 ready3 || bail "stages not ready"

# two sources on the hung remote: one holds the worker remote fetches may
# use, the other waits for it
check "apply: hung remote 1" df hung1 git '"git":{"url":"git://127.0.0.1:'"$HOLE"'/a.git","ref":"main","period":"1s"}'
check "apply: hung remote 2" df hung2 git '"git":{"url":"git://127.0.0.1:'"$HOLE"'/b.git","ref":"main","period":"1s"}'
check "a fetch is stuck on the remote" wait_for 10 held 1
T0=$(ms)

# unrelated sources are not delayed
check "apply: inline" df site inline '"inline":{"value":{"Header":{"title":"hello"}}}'
mkdir -p "$T/blocks" && printf '{"dir":true}' >"$T/blocks/Footer.json"
check "apply: dir" df local dir '"dir":{"path":"'"$T/blocks"'"}'
BOUND=$(scaled 2)
check "inline: published" wait_for $((BOUND + 10)) published site
T1=$(ms)
check "dir: published" wait_for $((BOUND + 10)) published local
T2=$(ms)
diag "inline published $((T1 - T0)) ms, dir $((T2 - T0)) ms after the hung fetches started (fetch_timeout ${DEADLINE} s)"
[ $((T1 - T0)) -lt $((BOUND * 1000)) ]; ok $? "inline published within ${BOUND} s ($((T1 - T0)) ms), not after the hung fetch's ${DEADLINE} s"
[ $((T2 - T0)) -lt $((BOUND * 1000)) ]; ok $? "dir published within ${BOUND} s ($((T2 - T0)) ms)"
check "inline: Syncing=True" wait_for 5 condition_is site Syncing status True
grep -q '"Header":{"title":"hello"}' "$T/state/published/sites-loja/site/decofile.json"; ok $? "inline: the document is the one applied"

# the hung ones fail on their own, after their own deadline, and are retried
check "hung1: Syncing=False FetchError after its deadline" wait_for $((DEADLINE + 10)) \
    condition_is hung1 Syncing reason FetchError
check "hung2: its own FetchError" wait_for $((DEADLINE + 10)) condition_is hung2 Syncing reason FetchError
T3=$(ms)
[ $((T3 - T0)) -ge $(( (DEADLINE - 1) * 1000)) ]; ok $? "the hung fetch was given its deadline ($((T3 - T0)) ms)"
check "hung2 was fetched too (after hung1 freed the worker)" held 2
condition hung1 Syncing message | grep -q "^git ls-remote git://127.0.0.1:$HOLE/a.git: timed out after"; ok $? "hung1: the message names the remote and the deadline"
check "hung1: retried with a doubling delay" wait_for $((2 * DEADLINE + 10)) \
    grep -q 'msg="fetch failed" ns=sites-loja name=hung1 .*retry_ms=2000' "$T/decod.log"
[ ! -e "$T/state/published/sites-loja/hung1" ]; ok $? "hung1: nothing published"

# while they keep retrying, an edit of the inline one still goes through at once
printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"site","namespace":"sites-loja"},"spec":{"source":"inline","target":"file","inline":{"value":{"Header":{"title":"again"}}}}}' >"$T/site.json"
T4=$(ms)
ctl apply -f "$T/site.json" >/dev/null
check "edit: published" wait_for $((BOUND + 10)) grep -q again "$T/state/published/sites-loja/site/decofile.json"
T5=$(ms)
[ $((T5 - T4)) -lt $((BOUND * 1000)) ]; ok $? "edit published within ${BOUND} s ($((T5 - T4)) ms) while the hung ones retry"
done_testing
