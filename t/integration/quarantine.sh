#!/bin/sh
# quarantine.sh - issue 21: one broken site never delays the others.  Under
# the real supervisor (all four stages, file target), 100 Decofiles: 97
# healthy (inline and dir sources, each confirmed by a reference replica
# through spec.endpoints) and 3 broken in different ways, applied first:
#   badjson  - a dir source whose block is malformed JSON;
#   hunggit  - a git source on a remote that accepts and never answers;
#   hungrep  - a site whose only replica accepts the reload and never answers.
# Every healthy site is published and confirmed (PodsNotified=True) before
# either hung timeout (fetch_timeout, notify_timeout) could have expired
# since the broken ones started, and while both hung sites still wait: none
# of them waited on a broken one.  Each broken site then reports its own
# condition with a message that names the cause.
. "$top_srcdir/t/lib/common.sh"

DECOD=$top_builddir/decod
DECOCTL=$top_builddir/decoctl
SITE=$top_builddir/examples/site/decod-site
REPLICA=$top_builddir/bench/replica
for p in "$DECOD" "$DECOCTL" "$SITE" "$REPLICA"; do [ -x "$p" ] || bail "$p not built"; done
command -v sqlite3 >/dev/null || skip_all "sqlite3 not installed"

mkdir -p "$T/libexec"
for s in fetcher renderer publisher notifier; do
	ln -s "$top_builddir/daemons/$s/$s" "$T/libexec/$s"
done
python3 "$top_srcdir/t/lib/blackhole.py" "$T/hole.port" "$T/hole.count" &
track_pid $!
wait_for 10 test -s "$T/hole.port" || bail "blackhole did not listen"
HOLE=$(cat "$T/hole.port")

TIMEOUT=90	# fetch_timeout and notify_timeout, seconds
cat >"$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
rescan_interval = 300ms
poll_period = 1h
fetch_timeout = ${TIMEOUT}s
notify_timeout = ${TIMEOUT}s
notify_attempts = 1
CONF
export DECOD_CONFIG="$T/decod.conf"
ctl() { "$DECOCTL" -n sites-q "$@"; }
ready4() { [ "$("$DECOCTL" stages 2>/dev/null | grep -c READY)" -eq 4 ]; }
ST=$T/store/kv/decod.d/status.d/decofiles.d/sites-q
condition() { # condition NAME TYPE FIELD
	ctl get decofile "$1" -o json | python3 -c '
import json, sys
for c in json.load(sys.stdin).get("status", {}).get("conditions", []):
    if c["type"] == sys.argv[1]: print(c[sys.argv[2]])' "$2" "$3"; }
condition_is() { [ "$(condition "$1" "$2" "$3")" = "$4" ]; }
confirmed() { # how many healthy sites say PodsNotified=True
	grep -l '"type":"PodsNotified","status":"True"' "$ST".d/h[0-9]*.d/notifier.v 2>/dev/null | wc -l
}
all_confirmed() { [ "$(confirmed)" -eq 97 ]; }
ms() { echo $(( $(date +%s%N) / 1000000 )); }
df() { # df NAME SOURCE SPEC_JSON
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"%s","namespace":"sites-q"},"spec":{"source":"%s","target":"file",%s}}\n---\n' \
	    "$1" "$2" "$3" >>"$T/all.yaml"
}

"$REPLICA" --port 0 >"$T/replica.out" 2>&1 &
track_pid $!
wait_for 10 grep -q '^listening on' "$T/replica.out" || bail "replica did not start"
RPORT=$(awk '/^listening on/ {print $3}' "$T/replica.out")
"$SITE" --port 0 --hang --lenient >"$T/hang.out" 2>&1 &
track_pid $!
wait_for 10 grep -q '^listening on' "$T/hang.out" || bail "hanging replica did not start"
HPORT=$(awk '/^listening on/ {print $3}' "$T/hang.out")

"$DECOD" >>"$T/decod.log" 2>&1 &
track_pid $!
wait_for 20 ready4 || bail "stages not ready"

# the three broken ones first, so they are ahead of everyone in every queue
mkdir -p "$T/bad"
printf '{"title": "ok"}' >"$T/bad/Header.json"
printf '{\n  "title": "broken",\n  "oops"\n}\n' >"$T/bad/Broken.json"
: >"$T/all.yaml"
df badjson dir '"dir":{"path":"'"$T/bad"'"}'
df hunggit git '"git":{"url":"git://127.0.0.1:'"$HOLE"'/q.git","ref":"main"}'
df hungrep inline '"inline":{"value":{"A":{"hung":true}}},"endpoints":["http://127.0.0.1:'"$HPORT"'"]'
T0=$(ms)
ctl apply -f "$T/all.yaml" >/dev/null
ok $? "apply the three broken sites"
check "the hung remote holds a fetch" wait_for 20 sh -c "[ \"\$(cat '$T/hole.count' 2>/dev/null || echo 0)\" -ge 1 ]"
check "the hanging replica holds a reload" wait_for 30 sh -c "grep -q '\"type\":\"PodsNotified\",\"status\":\"Unknown\"' '$ST.d/hungrep.d/notifier.v'"

# 97 healthy sites: every fourth a dir source, the rest inline
: >"$T/all.yaml"
i=1
while [ $i -le 97 ]; do
	n=$(printf 'h%02d' $i)
	ep='"endpoints":["http://127.0.0.1:'"$RPORT"'/r/'"$i"'"]'
	if [ $((i % 4)) -eq 0 ]; then
		mkdir -p "$T/dir/$n" && printf '{"site":"%s"}' "$n" >"$T/dir/$n/Header.json"
		df "$n" dir '"dir":{"path":"'"$T/dir/$n"'"},'"$ep"
	else
		df "$n" inline '"inline":{"value":{"Header":{"site":"'"$n"'"}}},'"$ep"
	fi
	i=$((i + 1))
done
ctl apply -f "$T/all.yaml" >/dev/null
ok $? "apply 97 healthy sites"
wait_for $((TIMEOUT - 5)) all_confirmed
ok $? "all 97 healthy sites confirmed by their replica ($(confirmed)/97)"
T1=$(ms)
diag "97 healthy sites confirmed $((T1 - T0)) ms after the broken ones were applied (fetch_timeout = notify_timeout = ${TIMEOUT} s)"
[ $((T1 - T0)) -lt $((TIMEOUT * 1000)) ]
ok $? "... sooner than either hung timeout since the broken ones started"
# and the hung ones are still waiting: no one waited for their timeouts to pass
[ "$(condition hungrep PodsNotified status)" = Unknown ]
ok $? "... while the hanging replica's reload is still pending"
[ "$(condition hunggit Syncing reason)" != FetchError ]
ok $? "... and the hung fetch has not timed out"
n=0
for f in "$ST".d/h[0-9]*.d/publisher.v; do grep -q '"type":"Ready","status":"True"' "$f" && n=$((n + 1)); done
is "$n" 97 "every healthy site is Ready"

# each broken site says what is wrong with it
check "badjson: Syncing=False ValidationError" wait_for 10 condition_is badjson Syncing reason ValidationError
msg=$(condition badjson Syncing message)
case "$msg" in *Broken.json:4:*) ok 0 "... naming the file and line ($msg)" ;; *) ok 1 "... naming the file and line ($msg)" ;; esac
test ! -e "$T/state/published/sites-q/badjson"
ok $? "... and nothing of it is published"
check "hungrep: PodsNotified=False once its timeout passes" wait_for $((TIMEOUT + 30)) condition_is hungrep PodsNotified status False
msg=$(condition hungrep PodsNotified message)
case "$msg" in *"$HPORT"*) ok 0 "... naming the hanging replica ($msg)" ;; *) ok 1 "... naming the hanging replica ($msg)" ;; esac
check "hunggit: Syncing=False FetchError once its deadline passes" wait_for 60 condition_is hunggit Syncing reason FetchError
msg=$(condition hunggit Syncing message)
case "$msg" in *"127.0.0.1:$HOLE"*"timed out"*) ok 0 "... naming the remote and the deadline ($msg)" ;;
*) ok 1 "... naming the remote and the deadline ($msg)" ;; esac
done_testing
