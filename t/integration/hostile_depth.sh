#!/bin/sh
# hostile_depth.sh - deep nesting never crashes anything (issue 13, defect
# 1): a block of 1,000,000 nested "[" reaching the renderer stops the
# publish with Syncing=False ValidationError naming file, line and column,
# and the replica is never pushed; the reference replica answers 400 to a
# deep body and keeps serving; decoctl refuses deep JSON and YAML input and
# prints a deep stored value without crashing.
. "$top_srcdir/t/lib/common.sh"

DECOD=$top_builddir/decod
DECOCTL=$top_builddir/decoctl
SITE=$top_builddir/examples/site/decod-site
for p in "$DECOD" "$DECOCTL" "$SITE"; do [ -x "$p" ] || bail "$p not built"; done
command -v python3 >/dev/null || skip_all "python3 not installed"

mkdir -p "$T/libexec" "$T/blocks"
for s in fetcher renderer publisher notifier; do
	ln -s "$top_builddir/daemons/$s/$s" "$T/libexec/$s"
done
cat > "$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
rescan_interval = 300ms
poll_period = 500ms
notify_timeout = 2s
notify_attempts = 1
CONF
export DECOD_CONFIG="$T/decod.conf"
ctl() { "$DECOCTL" -n sites-deep "$@"; }
ready4() { [ "$("$DECOCTL" stages 2>/dev/null | grep -c READY)" -eq 4 ]; }
condition() { # condition TYPE FIELD
	ctl get decofile deep -o json 2>/dev/null | python3 -c '
import json, sys
for c in json.load(sys.stdin).get("status", {}).get("conditions", []):
    if c["type"] == sys.argv[1]: print(c[sys.argv[2]])' "$1" "$2"; }
cond_is() { [ "$(condition "$1" "$2")" = "$3" ]; }
# deep N OPEN CLOSE FILE: N nested brackets
deep() { python3 -c 'import sys; n=int(sys.argv[1]); sys.stdout.write(sys.argv[2]*n + sys.argv[3]*n)' "$@"; }

printf '{"title": "good"}' > "$T/blocks/Header.json"
"$DECOD" 2>"$T/decod.log" &
track_pid $!
wait_for 10 ready4 || bail "decod did not start"

DECO_RELEASE_RELOAD_TOKEN=tok "$SITE" --port 0 --register "local:$T/store" \
    --namespace sites-deep --deployment deep --id r1 --ttl 30 >"$T/r1.out" 2>"$T/r1.err" &
SITEPID=$!
track_pid $SITEPID
wait_for 10 grep -q '^listening on' "$T/r1.out" || bail "replica did not start"
PORT=$(awk '/^listening on/ {print $3}' "$T/r1.out")

cat > "$T/deep.json" <<JSON
{"apiVersion": "deco.sites/v1alpha1", "kind": "Decofile",
 "metadata": {"name": "deep", "namespace": "sites-deep"},
 "spec": {"source": "dir", "dir": {"path": "$T/blocks"}}}
JSON
ctl apply -f "$T/deep.json" >/dev/null
ok $? "apply a dir Decofile"
want=$(printf '%s' '{"Header":{"title":"good"}}' | sha256sum | cut -d' ' -f1)
wait_for 30 sh -c "[ \"\$(curl -s http://127.0.0.1:$PORT/.decofile | grep -o $want)\" ]"
ok $? "the good version reaches the replica"
pushes=$(grep -c 'decofile reloaded' "$T/r1.err")

# 1,000,000 levels: valid JSON, refused by the depth limit.  Written
# beside the folder and moved in (one rename, as a deploy does), so the
# fetcher never reads it half-written: a half-written block is its own
# error (premature EOF), not the one this checks
deep 1000000 '[' ']' > "$T/Deep.json.tmp" && mv "$T/Deep.json.tmp" "$T/blocks/Deep.json"
ctl sync deep >/dev/null
wait_for 30 cond_is Syncing reason ValidationError
ok $? "a 1,000,000-deep block: Syncing=False ValidationError"
msg=$(condition Syncing message)
case "$msg" in
*Deep.json:1:512:*"nested deeper than 511 levels"*) ok 0 "the message names file, line and column: $msg" ;;
*) ok 1 "the message names file, line and column"; diag "got: $msg" ;;
esac
is "$(condition Syncing status)" False "Syncing status is False"
check "the replica still serves the good version" sh -c "[ \"\$(curl -s http://127.0.0.1:$PORT/.decofile | grep -o $want)\" ]"
# the renderer refused before recording a render, so nothing downstream
# (publisher, then notifier) was ever asked: the published file is the good one
is "$(cat "$T/state/published/sites-deep/deep/decofile.json")" '{"Header":{"title":"good"}}' \
    "the published document is still the good one"
is "$(grep -c 'decofile reloaded' "$T/r1.err")" "$pushes" "the replica was never pushed the deep block"
check "every stage is alive" ready4
check "the replica is alive" alive $SITEPID
rm -f "$T/blocks/Deep.json"

# 511 levels fit (the rendered decofile adds one: 512)
deep 511 '[' ']' > "$T/Deep.json.tmp" && mv "$T/Deep.json.tmp" "$T/blocks/Deep.json"
ctl sync deep >/dev/null
wait_for 30 cond_is Syncing status True
ok $? "a 511-deep block renders (Syncing=True)"
want2=$(python3 -c 'import sys; n=511; sys.stdout.write("{\"Deep\":"+"["*n+"]"*n+",\"Header\":{\"title\":\"good\"}}")' | sha256sum | cut -d' ' -f1)
wait_for 30 sh -c "[ \"\$(curl -s http://127.0.0.1:$PORT/.decofile | grep -o $want2)\" ]"
ok $? "and reaches the replica (its 512 levels are within the replica's limit)"

# the replica itself: a deep body is a 400, and it keeps serving
python3 -c 'import sys; n=1000000; sys.stdout.write("{\"decofile\":{\"a\":" + "["*n + "]"*n + "}}")' > "$T/body.json"
code=$(curl -s -o "$T/resp" -w '%{http_code}' --max-time 30 -X POST -H 'Authorization: Token tok' \
    -H 'Content-Type: application/json' --data-binary "@$T/body.json" "http://127.0.0.1:$PORT/.decofile/reload")
is "$code" 400 "the replica answers 400 to a 1,000,000-deep body"
check "its answer says why" grep -q 'nested deeper than 513 levels' "$T/resp"
check "the replica is alive after it" alive $SITEPID
is "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$PORT/.decofile)" 200 "and keeps serving"
check "still the last good document" sh -c "[ \"\$(curl -s http://127.0.0.1:$PORT/.decofile | grep -o $want2)\" ]"

# decoctl: JSON apply input, YAML apply input, a deep value in the store
python3 -c 'import sys; n=100000; sys.stdout.write("{\"apiVersion\":\"deco.sites/v1alpha1\",\"kind\":\"Decofile\",\"metadata\":{\"name\":\"d2\"},\"spec\":{\"source\":\"inline\",\"inline\":{\"value\":{\"x\":" + "["*n + "]"*n + "}}}}")' > "$T/d2.json"
ctl apply -f "$T/d2.json" >"$T/apply.out" 2>&1
rc=$?
check "apply refuses a 100,000-deep JSON resource" [ $rc -ne 0 ] && [ $rc -lt 128 ]
check "naming the depth limit" grep -q 'nested deeper than 512 levels' "$T/apply.out"
python3 -c 'import sys; n=100000; sys.stdout.write("a: " + "["*n + "]"*n + "\n")' > "$T/d3.yaml"
ctl apply -f "$T/d3.yaml" >"$T/apply.out" 2>&1
rc=$?
check "apply refuses 100,000-deep YAML" [ $rc -ne 0 ] && [ $rc -lt 128 ]
check "naming the depth limit" grep -q 'nested deeper than 512 levels' "$T/apply.out"
# a value written into the store by hand (or before this limit existed)
v=$(find "$T/store" -path '*sites-deep*' -name 'deep.v' | grep -v status | head -1)
[ -n "$v" ] || bail "cannot find the stored Decofile"
python3 -c 'import sys; n=100000; sys.stdout.write("{\"apiVersion\":\"deco.sites/v1alpha1\",\"kind\":\"Decofile\",\"metadata\":{\"name\":\"deep2\",\"namespace\":\"sites-deep\"},\"spec\":{\"source\":\"inline\",\"inline\":{\"value\":{\"x\":" + "["*n + "]"*n + "}}}}")' > "$(dirname "$v")/deep2.v"
ctl get decofile deep2 -o yaml >"$T/get.out" 2>&1
rc=$?
check "get -o yaml of a 100,000-deep stored value does not crash" [ $rc -lt 128 ]
ctl get decofiles -o yaml >"$T/get.out" 2>&1
rc=$?
check "listing beside it does not crash either" [ $rc -lt 128 ]
rm -f "$(dirname "$v")/deep2.v"
check "every stage survived the deep stored value" ready4

done_testing
