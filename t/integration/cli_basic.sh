#!/bin/sh
# cli_basic - decoctl against a real local store and journal: apply (YAML,
# two documents), get (table, -o json/yaml, generation and created_at),
# delete, not-found exit codes, status and describe from status fragments
# written by another process, wait (done, failed, timed out), sync,
# history and journal, and the control-socket commands without decod.
. "$top_srcdir/t/lib/common.sh"

DECOCTL=$(bin decoctl)
TOOL="$top_builddir/t/stage/testtool"
[ -x "$DECOCTL" ] || bail "decoctl not built"

mkdir -p "$T/state" "$T/run"
cat >"$T/decod.conf" <<EOF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
EOF
export DECOD_CONFIG="$T/decod.conf"
dc() { "$DECOCTL" "$@"; }
tool() { "$TOOL" -c "$T/decod.conf" "$@"; }
# json_field FILE PATH: a value from JSON with python3 (a real parser)
json_field() {
	python3 -c 'import json,sys
v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v=v[int(k)] if isinstance(v,list) else v[k]
print(v)' "$1" "$2"
}

# --- help and usage ---------------------------------------------------
dc --help >"$T/help" 2>&1
is "$?" 0 "decoctl --help exits 0"
check "help lists the commands" grep -q "wait" "$T/help"
dc wait --help >"$T/help" 2>&1
is "$?" 0 "decoctl wait --help exits 0"
check "wait help names --for" grep -q -- "--for" "$T/help"
dc frobnicate >/dev/null 2>&1
is "$?" 2 "unknown command: exit 2"
dc get -o xml >/dev/null 2>&1
is "$?" 2 "unknown output format: exit 2"
dc get --bogus >/dev/null 2>&1
is "$?" 2 "unknown option: exit 2"
dc apply >/dev/null 2>&1
is "$?" 2 "apply without -f: exit 2"

# --- apply ------------------------------------------------------------
cat >"$T/sites.yaml" <<'EOF'
# two sites
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata:
  name: loja
spec:
  source: inline
  inline:
    value:
      Header: {title: "Loja", items: 3}
      Version: "1.10"
---
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata:
  name: vitrine
  labels: {team: web}
spec:
  source: git
  git: {url: "https://git.example/vitrine.git", ref: main, period: 15s}
EOF
dc apply -f "$T/sites.yaml" >"$T/out" 2>&1
is "$?" 0 "apply two documents"
is "$(cat "$T/out")" "decofile/loja created
decofile/vitrine created" "apply prints both as created"
dc apply -f "$T/sites.yaml" >"$T/out" 2>&1
is "$(cat "$T/out")" "decofile/loja unchanged
decofile/vitrine unchanged" "apply again: unchanged"

dc get >"$T/out" 2>&1
is "$?" 0 "get lists decofiles"
check "get shows loja" grep -q "^loja " "$T/out"
check "get shows vitrine with its source" grep -q "^vitrine  *git " "$T/out"
check "get has a header" grep -q "^NAME  *SOURCE  *TARGET  *GENERATION  *READY  *AGE" "$T/out"

dc get df loja -o json >"$T/g1.json"
is "$?" 0 "get df loja -o json"
is "$(json_field "$T/g1.json" metadata.generation)" 1 "generation 1 after create"
is "$(json_field "$T/g1.json" spec.inline.value.Version)" "1.10" "quoted number kept a string"
is "$(json_field "$T/g1.json" spec.inline.value.Header.items)" 3 "plain number is a number"
created1=$(json_field "$T/g1.json" metadata.created_at)
check "created_at stamped" test -n "$created1"

sed 's/items: 3/items: 4/' "$T/sites.yaml" >"$T/sites2.yaml"
dc apply -f "$T/sites2.yaml" >"$T/out" 2>&1
is "$(cat "$T/out")" "decofile/loja configured
decofile/vitrine unchanged" "spec change: configured"
dc get decofile loja -o json >"$T/g2.json"
is "$(json_field "$T/g2.json" metadata.generation)" 2 "generation 2 after a spec change"
is "$(json_field "$T/g2.json" metadata.created_at)" "$created1" "created_at kept"
dc get decofiles loja -o yaml >"$T/g2.yaml"
check "-o yaml prints YAML" grep -q "^  generation: 2$" "$T/g2.yaml"
check "-o yaml quotes a string that looks like a number" grep -q "Version: \"1.10\"" "$T/g2.yaml"

# JSON input (a List) and -n
cat >"$T/t.json" <<'EOF'
{"apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "deco.sites/v1alpha1", "kind": "Tenant",
  "metadata": {"name": "loja"}, "spec": {"valkeyAcl": true, "site": "loja"}}
]}
EOF
dc apply -n sites-loja -f - <"$T/t.json" >"$T/out" 2>&1
is "$(cat "$T/out")" "tenant/loja created" "apply a JSON List from stdin"
dc get tenants -n sites-loja >"$T/out" 2>&1
check "tenant listed in its namespace" grep -q "^loja  *loja  *true" "$T/out"
dc get -A >"$T/out" 2>&1
check "-A shows the NAMESPACE column" grep -q "^default  *loja " "$T/out"

# errors name file and line
printf 'apiVersion: deco.sites/v1alpha1\nkind: Decofile\nmetadata:\n  name: x\n spec: 1\n' \
    >"$T/bad.yaml"
dc apply -f "$T/bad.yaml" >"$T/out" 2>&1
is "$?" 1 "bad YAML: exit 1"
check "bad YAML: file and line named" grep -q "bad.yaml:5:" "$T/out"
printf '{\n "kind": "Decofile",\n "metadata": {"name": "x",}\n}\n' >"$T/bad.json"
dc apply -f "$T/bad.json" >"$T/out" 2>&1
is "$?" 1 "bad JSON: exit 1"
check "bad JSON: file and line named" grep -q "bad.json:3:" "$T/out"
printf 'apiVersion: deco.sites/v1alpha1\nkind: Gadget\nmetadata: {name: x}\n' >"$T/kind.yaml"
dc apply -f "$T/kind.yaml" >"$T/out" 2>&1
is "$?" 1 "unknown kind: exit 1"
check "unknown kind named" grep -q 'unknown kind "Gadget"' "$T/out"
# decod's own annotations (the front door's mirror mark) come from the front door only
printf 'apiVersion: deco.sites/v1alpha1\nkind: Decofile\nmetadata:\n  name: forjado\n  annotations: {decod.deco.sites/kube-uid: 0b1c}\nspec: {source: inline, inline: {value: {}}}\n' \
    >"$T/forged.yaml"
dc apply -f "$T/forged.yaml" >"$T/out" 2>&1
is "$?" 1 "apply with decod's own annotation: exit 1"
check "... the annotation named" grep -q 'forged.yaml:1: decofile/forjado: the annotation decod.deco.sites/kube-uid is decod.s own' "$T/out"
dc get df forjado >/dev/null 2>&1
is "$?" 1 "... and nothing written"
dc diff -f "$T/forged.yaml" >"$T/out" 2>&1
check "diff refuses it too" grep -q "the annotation decod.deco.sites/kube-uid is decod.s own" "$T/out"
# a CR's mirror (as the front door writes it) is changed on the CR, not with apply
printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"forjado","annotations":{"decod.deco.sites/kube-uid":"0b1c"}},"spec":{"source":"inline","inline":{"value":{}}}}' \
    >"$T/mirror.json"
tool apply "$T/mirror.json" >/dev/null || bail "cannot write a mirror"
sed 's/  annotations: .*//' "$T/forged.yaml" >"$T/over.yaml"
dc apply -f "$T/over.yaml" >"$T/out" 2>&1
is "$?" 1 "apply over a CR's mirror: exit 1"
check "... says to change the CR with kubectl" grep -q 'decofile/forjado mirrors the Decofile CR default/forjado: change the CR with kubectl' "$T/out"
check "... and the mirror keeps its mark" sh -c "'$DECOCTL' get df forjado -o json | grep -q kube-uid"
tool delete default forjado >/dev/null

# --- not found ----------------------------------------------------------
dc get decofile nope >"$T/out" 2>&1
is "$?" 1 "get of a missing decofile: exit 1"
check "NotFound message" grep -q 'Error from server (NotFound): decofiles "nope" not found' "$T/out"
dc describe nope >/dev/null 2>&1
is "$?" 1 "describe of a missing decofile: exit 1"
dc sync nope >/dev/null 2>&1
is "$?" 1 "sync of a missing decofile: exit 1"

# --- status from fragments written by another process --------------------
H1=9b74c9aa00000000000000000000000000000000000000000000000000000001
H0=1111111100000000000000000000000000000000000000000000000000000000
C1=3f2a9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b
TS=$(date +%s)
tool fields default loja fetcher "{\"githubCommit\":\"$C1\",\"sourceType\":\"inline\",\"observedGeneration\":2}"
tool fields default loja publisher "{\"contentHash\":\"$H1\",\"timestamp\":$TS,\"format\":\"json\",\"location\":\"file:///srv/default/loja/decofile.json\"}"
tool condition default loja publisher Ready True Published "Published to file:///srv/default/loja/decofile.json"
tool condition default loja notifier PodsNotified True NotificationSucceeded "Successfully notified all pods for commit:$C1"
dc status >"$T/out" 2>&1
is "$?" 0 "status"
check "status header" grep -q "^NAMESPACE  *NAME  *SOURCE  *COMMIT  *HASH  *TARGET  *SUSPENDED  *READY  *SYNCING  *PODSNOTIFIED  *PUBLISHED  *AGE  *OWNER  *MESSAGE" "$T/out"
check "status row from the merged status" \
    grep -q "^default  *loja  *inline  *3f2a9c0  *9b74c9aa0000  *file  *False  *True  *-  *True .* -$" "$T/out"
check "vitrine has no status yet" grep -q "^default  *vitrine  *git  *-  *-  *file  *False  *-  *-  *-  *-" "$T/out"
dc status -o json >"$T/st.json"
is "$(json_field "$T/st.json" 0.contentHash)" "$H1" "status -o json: contentHash"
dc get df loja -o json >"$T/g3.json"
is "$(json_field "$T/g3.json" status.githubCommit)" "$C1" "get -o json merges the status fragments"

# --- journal rows the stages would write ----------------------------------
tool fetch default loja inline "$C1" aaaa000000000000000000000000000000000000000000000000000000000000
tool render default loja "$H0" json 120
tool publish default loja file file:///srv/default/loja/decofile.json "$H0" $((TS - 60))
tool ack default loja http://10.0.0.1:8000 "$H0" $((TS - 60)) ok
tool ack default loja http://10.0.0.2:8000 "$H0" $((TS - 60)) ok
tool render default loja "$H1" json 130
tool publish default loja file file:///srv/default/loja/decofile.json "$H1" "$TS"
tool ack default loja http://10.0.0.1:8000 "$H1" "$TS" ok
tool drift default loja file:///srv/default/loja/decofile.json "changed by someone else"
tool inventory default loja file file:///srv/default/loja/decofile.json "$H1"
tool audit publisher decofile/default/loja publish "hash=$H1"
tool audit publisher decofile/default/vitrine publish "hash=x"

dc history loja >"$T/out" 2>&1
is "$?" 0 "history"
events=$(awk 'NR > 1 { print $3 }' "$T/out" | tr '\n' ' ')
is "$events" "condition condition fetch render publish acks render publish acks drift " \
    "history in time order (acks summarised at their newest answer)"
check "history summarises confirmations per hash" \
    grep -q "hash 111111110000: 2 of 2 replicas confirmed" "$T/out"
dc history loja -o json >"$T/h.json"
is "$(json_field "$T/h.json" 2.event)" fetch "history -o json"

dc describe loja >"$T/out" 2>&1
is "$?" 0 "describe"
check "describe: conditions" grep -q "PodsNotified  *True  *NotificationSucceeded" "$T/out"
check "describe: location" grep -q "^Location: *file:///srv/default/loja/decofile.json" "$T/out"
check "describe: replica on the current hash" grep -q "http://10.0.0.1:8000  *9b74c9aa0000  *ok" "$T/out"
check "describe: replica on an old hash marked" grep -q "http://10.0.0.2:8000  *111111110000 (old)" "$T/out"
check "describe: count" grep -q "1 of 2 replicas confirmed the current hash" "$T/out"
check "describe: inventory" grep -q "^  file  *file:///srv/default/loja/decofile.json" "$T/out"

dc journal >"$T/out" 2>&1
is "$?" 0 "journal"
check "journal shows the audit rows" grep -q "publisher  *decofile/default/vitrine  *publish" "$T/out"
dc journal --decofile loja --since 1h >"$T/out" 2>&1
is "$(grep -c publish "$T/out")" 1 "journal --decofile keeps only that decofile"
dc journal --since 1h -o json >"$T/j.json"
is "$(json_field "$T/j.json" 0.object)" decofile/default/loja "journal -o json"
dc journal --since 1x >/dev/null 2>&1
is "$?" 2 "journal --since with a bad duration: exit 2"

# --- wait -------------------------------------------------------------------
C2=77aa0011223344556677889900aabbccddeeff00
dc wait loja --for commit:77aa00 --timeout 30s >"$T/wait.out" 2>&1 &
WPID=$!
track_pid $WPID
# the first progress line means the watch is set up and the first read done
wait_for 10 grep -q "notified" "$T/wait.out"
ok $? "wait started"
kill -0 $WPID 2>/dev/null
ok $? "wait is still waiting for the commit"
TS2=$(date +%s)
tool fields default loja fetcher "{\"githubCommit\":\"$C2\"}"
tool fields default loja publisher "{\"contentHash\":\"$H1\",\"timestamp\":$TS2}"
tool condition default loja notifier PodsNotified Unknown NotificationInProgress "Notifying pods for commit:$C2"
tool condition default loja notifier PodsNotified True NotificationSucceeded "Successfully notified all pods for commit:$C2"
wait $WPID
is "$?" 0 "wait returns 0 once the commit is notified"
check "wait says so" grep -q "condition met" "$T/wait.out"

dc wait loja --for ready --timeout 10s >"$T/out" 2>&1
is "$?" 0 "wait --for ready on a ready decofile"
dc wait loja --for commit:ffff00 --timeout 1s >"$T/out" 2>&1
is "$?" 3 "wait: timeout exits 3"
check "timeout message" grep -q "timed out" "$T/out"
dc wait loja --for "timestamp:$TS2" --timeout 5s >/dev/null 2>&1
is "$?" 0 "wait --for timestamp:N already reached"
dc wait loja --for bogus >/dev/null 2>&1
is "$?" 2 "wait --for bogus: exit 2"

C3=cc00ee0011223344556677889900aabbccddeeff
dc wait loja --for commit:cc00ee --timeout 30s >"$T/wait2.out" 2>&1 &
WPID=$!
track_pid $WPID
wait_for 10 grep -q "notified" "$T/wait2.out"
tool fields default loja fetcher "{\"githubCommit\":\"$C3\"}"
tool condition default loja notifier PodsNotified False NotificationFailed "Failed to notify pods for commit:$C3: http://10.0.0.2:8000: connection refused"
wait $WPID
is "$?" 1 "wait returns 1 when notification failed"
check "wait prints the failure" grep -q "connection refused" "$T/wait2.out"

# --- sync and delete -----------------------------------------------------------
dc sync loja >"$T/out" 2>&1
is "$?" 0 "sync"
check "sync trigger written" test -f "$T/store/kv/decod.d/sync.d/default.d/loja.v"
dc delete decofile vitrine >"$T/out" 2>&1
is "$?" 0 "delete"
is "$(cat "$T/out")" 'decofile "vitrine" deleted' "delete prints what it deleted"
dc get df vitrine >/dev/null 2>&1
is "$?" 1 "deleted decofile is gone"
dc delete decofile vitrine >/dev/null 2>&1
is "$?" 1 "delete of a missing decofile: exit 1"
dc delete gadget x >/dev/null 2>&1
is "$?" 2 "delete of an unknown kind: exit 2"

# --- endpoints (a replica's record dropped into the local store by hand) ---------
mkdir -p "$T/store/kv/decod.d/endpoints.d/default.d/loja.d"
printf '{"url":"http://127.0.0.1:8000","token":"sekrit"}' \
    >"$T/store/kv/decod.d/endpoints.d/default.d/loja.d/r1.v"
dc get endpoints >"$T/out" 2>&1
check "get endpoints lists the replica" grep -q "^loja  *r1  *http://127.0.0.1:8000  *push" "$T/out"
dc get ep -o json >"$T/out" 2>&1
is "$(json_field "$T/out" items.0.url)" "http://127.0.0.1:8000" "get ep -o json"
check "an endpoint's token is never printed" sh -c "! grep -q sekrit '$T/out'"

# --- control socket without a supervisor ----------------------------------------
dc stages >"$T/out" 2>&1
is "$?" 1 "stages without decod: exit 1"
check "stages says it cannot reach the supervisor" grep -q "cannot reach the supervisor" "$T/out"

done_testing
