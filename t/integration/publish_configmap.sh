#!/bin/sh
# publish_configmap - the publisher's configmap target against a real API
# server (one for the file), running as deploy/'s ServiceAccount with a
# TokenRequest token: ConfigMap decofile-<name> owned by the Decofile CR with
# exactly decofile.bin (base64 of brotli, decoded and compared) and
# timestamp.txt, Ready ConfigMapCreated; drift (a key added, the .bin
# changed, the ConfigMap deleted) put back; the same hash publishes nothing;
# TooLarge; adoption of a ConfigMap the Go operator wrote; deletion and
# detach; the garbage collector removes it with its Decofile CR.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/kube.sh"

PUB=$(bin publisher)
TOOL="$top_builddir/t/stage/testtool"
[ -x "$PUB" ] || bail "publisher not built"
command -v sqlite3 >/dev/null || skip_all "sqlite3 command not installed"
command -v brotli >/dev/null || skip_all "brotli command not installed"
command -v curl >/dev/null || skip_all "curl command not installed"

kube_start
kube_apply_deploy || bail "deploy/ does not apply"
kube_start_cm
kubectl_admin create namespace sites-loja >/dev/null
# decod runs as this account only (kube_start exported the admin's KUBECONFIG)
kube_as_decod "$T/decod.kubeconfig" || bail "no token for decod-system/decod"

as_decod() { kubectl --kubeconfig "$T/decod.kubeconfig" "$@"; }
is "$(as_decod auth can-i patch configmaps -n sites-loja)" yes "decod's account may write ConfigMaps"
is "$(as_decod auth can-i get secrets -n sites-loja)" no "... may not read Secrets"
is "$(as_decod auth can-i delete decofiles -n sites-loja)" no "... may not delete Decofiles"
is "$(as_decod auth can-i create pods -n sites-loja)" no "... may not create pods"

# metrics_listen is the supervisor's port; the publisher alone serves on
# the one three after it (metrics_addr's order), a free one
MP=$(free_port)
cat >"$T/conf" <<EOF
metrics_listen = 127.0.0.1:$((MP - 3))
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
kubeconfig = $T/decod.kubeconfig
rescan_interval = 100ms
EOF
C="-c $T/conf"
DB="$T/state/journal.db"
sql() { sqlite3 -cmd '.timeout 5000' "$DB" "$1"; }
STATUS="$T/store/kv/decod.d/status.d/decofiles.d/sites-loja"

# decofile NAME [ANNOTATIONS_JSON]: the CR, and the store's copy as the front
# door mirrors it (the CR's uid on it: the publisher reads Decofile CRs only there)
decofile() {
	ann=${2:-'{}'}
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"%s","namespace":"sites-loja","annotations":%s},"spec":{"source":"inline","target":"configmap","inline":{"value":{"A":1}}}}' \
	    "$1" "$ann" >"$T/df-$1.json"
	kubectl_admin apply --server-side -f "$T/df-$1.json" >/dev/null || return 1
	uid=$(kubectl_admin -n sites-loja get decofile "$1" -o jsonpath='{.metadata.uid}') &&
	    jq --arg u "$uid" '.metadata.annotations["decod.deco.sites/kube-uid"] = $u' \
	    "$T/df-$1.json" >"$T/df-$1.store.json" && "$TOOL" $C apply "$T/df-$1.store.json"
}
render() { # render FILE: spool its bin form, print "content_hash bin_hash"
	brotli -c -q "${2:-8}" "$1" | base64 -w0 >"$1.b64"
	printf '%s %s\n' "$(sha256sum <"$1" | cut -d' ' -f1)" "$("$TOOL" $C spool "$1.b64")"
}
cmjson() { kubectl_admin -n sites-loja get configmap "decofile-$1" -o json; }
bin_is() { [ "$(cmjson "$1" | jq -r '.data["decofile.bin"]')" = "$(cat "$2")" ]; }
cmkeys() { cmjson "$1" | jq -r '.data | keys | join(",")'; }

start_pub() {
	"$PUB" $C >>"$T/pub.log" 2>&1 &
	PUB_PID=$!
	track_pid $PUB_PID
	wait_for 15 grep -q 'msg=ready' "$T/pub.log" || bail "publisher did not start"
}

# --- publish ------------------------------------------------------------------
printf '{"A":1,"B":"\303\274","C":[1,2,3]}' >"$T/doc.json"
decofile loja || bail "cannot create the Decofile"
set -- $(render "$T/doc.json"); H=$1; B=$2
start_pub
"$TOOL" $C enqueue publisher sites-loja loja "$H" "format=bin bin=$B commit=abc123" >/dev/null
check "ConfigMap decofile-loja appears" wait_for 15 kubectl_admin -n sites-loja get configmap decofile-loja
UID_DF=$(kubectl_admin -n sites-loja get decofile loja -o jsonpath='{.metadata.uid}')
is "$(cmjson loja | jq -c '.metadata.ownerReferences')" \
    "[{\"apiVersion\":\"deco.sites/v1alpha1\",\"blockOwnerDeletion\":true,\"controller\":true,\"kind\":\"Decofile\",\"name\":\"loja\",\"uid\":\"$UID_DF\"}]" \
    "owned by the Decofile CR (controller, blockOwnerDeletion)"
is "$(cmkeys loja)" "decofile.bin,timestamp.txt" "data keys are exactly decofile.bin and timestamp.txt"
cmjson loja | jq -r '.data["decofile.bin"]' | base64 -d | brotli -d >"$T/got.json"
check "decofile.bin is standard base64 of brotli of the merged document" cmp -s "$T/got.json" "$T/doc.json"
TS=$(cmjson loja | jq -r '.data["timestamp.txt"]')
case $TS in *[!0-9]*|'') ok 1 "timestamp.txt is unix seconds ($TS)" ;; *) ok 0 "timestamp.txt is unix seconds" ;; esac
out=$($KUBE_PY - "$KUBE_DIR/admin.kubeconfig" <<'PY'
import base64, sys, subprocess
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
cm = client.CoreV1Api().read_namespaced_config_map("decofile-loja", "sites-loja")
raw = base64.b64decode(cm.data["decofile.bin"], validate=True)
doc = subprocess.run(["brotli", "-d", "-c"], input=raw, capture_output=True, check=True).stdout
print(doc.decode(), [m.manager for m in cm.metadata.managed_fields][0])
PY
)
is "$out" "$(cat "$T/doc.json") decod-publisher" "the Python client decodes the same document, managed by decod-publisher"
check "Ready=True ConfigMapCreated with the operator's message" wait_for 5 grep -q \
    '"type":"Ready","status":"True","reason":"ConfigMapCreated","message":"ConfigMap decofile-loja created successfully from inline source"' "$STATUS.d/loja.d/publisher.v"
check "status fields by the operator's names" grep -q "\"configMapName\":\"decofile-loja\",\"sourceType\":\"inline\",\"contentHash\":\"$H\",\"timestamp\":$TS" "$STATUS.d/loja.d/publisher.v"
is "$(sql "SELECT target||' '||location||' '||timestamp FROM publishes WHERE name='loja'")" \
    "configmap configmap/sites-loja/decofile-loja $TS" "publish recorded in the journal"
is "$(sql "SELECT hash||' '||detail FROM items WHERE stage='notifier' AND name='loja'")" \
    "$H timestamp=$TS commit=abc123" "one notifier item"
pub_bytes() { curl -s --max-time 5 "http://127.0.0.1:$MP/metrics" |
    sed -n 's/^decod_published_bytes_total{target="configmap"} //p'; }
PB=$(pub_bytes)
B64=$(wc -c <"$T/doc.json.b64" | tr -d ' ')
case $PB in
''|*[!0-9]*) ok 1 "decod_published_bytes_total{target=\"configmap\"} is a count ($PB)" ;;
*) ok "$([ "$PB" -gt "$B64" ] && [ "$PB" -lt $((B64 + 2048)) ]; echo $?)" \
    "decod_published_bytes_total{target=\"configmap\"}: the ConfigMap body sent once ($PB bytes, its decofile.bin $B64)" ;;
esac

# --- the same hash again: nothing written -------------------------------------
RV=$(cmjson loja | jq -r .metadata.resourceVersion)
"$TOOL" $C enqueue publisher sites-loja loja "$H" "format=bin bin=$B commit=abc123" >/dev/null
check "second item done" wait_for 5 sh -c "[ \"\$(sqlite3 '$DB' \"SELECT count(*) FROM items WHERE stage='publisher' AND state='done' AND name='loja'\")\" = 2 ]"
is "$(cmjson loja | jq -r .metadata.resourceVersion)" "$RV" "the ConfigMap is not written again"
is "$(sql "SELECT count(*) FROM publishes WHERE name='loja'")" 1 "one publish per content hash"
is "$(pub_bytes)" "$PB" "... and no more bytes counted"

# --- drift ------------------------------------------------------------------------
kubectl_admin -n sites-loja patch configmap decofile-loja --type merge -p '{"data":{"extra":"x"}}' >/dev/null
check "a key added by hand is removed" wait_for 10 sh -c "[ \"\$(kubectl --kubeconfig $KUBE_DIR/admin.kubeconfig -n sites-loja get cm decofile-loja -o json | jq -r '.data|keys|join(\",\")')\" = decofile.bin,timestamp.txt ]"
kubectl_admin -n sites-loja patch configmap decofile-loja --type merge -p '{"data":{"decofile.bin":"AAAA"}}' >/dev/null
check "a changed decofile.bin is put back" wait_for 10 bin_is loja "$T/doc.json.b64"
kubectl_admin -n sites-loja delete configmap decofile-loja >/dev/null
check "a deleted ConfigMap is re-created" wait_for 10 kubectl_admin -n sites-loja get configmap decofile-loja
is "$(cmjson loja | jq -r '.data["timestamp.txt"]')" "$TS" "... with the published timestamp"
wait_for 5 sh -c "[ \"\$(sqlite3 -cmd '.timeout 5000' '$DB' \"SELECT count(*) FROM drift WHERE name='loja'\")\" -ge 3 ]"
sql "SELECT detail FROM drift WHERE name='loja'" | sed "s/^/# drift: /"
is "$(sql "SELECT count(*) FROM drift WHERE name='loja'")" 3 "three drift repairs journaled"
check "Drifted=True counts them" grep -q '"type":"Drifted","status":"True","reason":"Repaired"' "$STATUS.d/loja.d/publisher.v"

# --- a restart writes nothing, and still repairs what changes ------------------
RV=$(cmjson loja | jq -r .metadata.resourceVersion)
kill -TERM $PUB_PID; wait $PUB_PID 2>/dev/null
: >"$T/pub.log"
start_pub
check "restarted: the ConfigMaps it published are its own again" wait_for 15 grep -q 'msg="configmap target synced" configmaps=1' "$T/pub.log"
is "$(cmjson loja | jq -r .metadata.resourceVersion)" "$RV" "a restart writes nothing to a ConfigMap that holds the content"
kubectl_admin -n sites-loja patch configmap decofile-loja --type merge -p '{"data":{"timestamp.txt":"1"}}' >/dev/null
check "... and repairs drift after it" wait_for 10 sh -c "[ \"\$(kubectl --kubeconfig $KUBE_DIR/admin.kubeconfig -n sites-loja get cm decofile-loja -o jsonpath='{.data.timestamp\\.txt}')\" = $TS ]"

# --- a recompressed .bin is swapped in place: no publish, no notifier item ------
python3 -c 'import json, random
random.seed(7)
w = ["loja", "produto", "preço", "camiseta", "azul", "promoção", "frete", "grátis", "tamanho"]
print(json.dumps({"B%03d" % i: {"t": " ".join(random.choice(w) for _ in range(40)), "n": i} for i in range(400)}, ensure_ascii=False, separators=(",", ":"), sort_keys=True), end="")' >"$T/big2.json"
set -- $(render "$T/big2.json" 8); H2=$1; B8=$2; cp "$T/big2.json.b64" "$T/big2.q8"
"$TOOL" $C enqueue publisher sites-loja loja "$H2" "format=bin bin=$B8 commit=def456" >/dev/null
check "the new content is published at the fast quality" wait_for 15 bin_is loja "$T/big2.q8"
TS2=$(cmjson loja | jq -r '.data["timestamp.txt"]')
NOTIF=$(sql "SELECT count(*) FROM items WHERE stage='notifier' AND name='loja'")
set -- $(render "$T/big2.json" 11); B11=$2; cp "$T/big2.json.b64" "$T/big2.q11"
[ "$B11" != "$B8" ] && [ "$(wc -c <"$T/big2.q11")" -lt "$(wc -c <"$T/big2.q8")" ]
ok $? "quality 11 is smaller than 8 for this document ($(wc -c <"$T/big2.q11") < $(wc -c <"$T/big2.q8"))"
"$TOOL" $C enqueue publisher sites-loja loja "$H2" "format=bin bin=$B11 commit=def456" recompress >/dev/null
check "a recompress item swaps decofile.bin" wait_for 15 bin_is loja "$T/big2.q11"
is "$(cmjson loja | jq -r '.data["timestamp.txt"]')" "$TS2" "timestamp.txt is kept"
cmjson loja | jq -r '.data["decofile.bin"]' | base64 -d | brotli -d >"$T/got2.json"
check "the swapped .bin decodes to the same document" cmp -s "$T/got2.json" "$T/big2.json"
check "the item is done: swapped" wait_for 5 sh -c "[ \"\$(sqlite3 -cmd '.timeout 5000' '$DB' \"SELECT result FROM items WHERE stage='publisher' AND kind='recompress' AND name='loja'\")\" = swapped ]"
is "$(sql "SELECT count(*) FROM items WHERE stage='notifier' AND name='loja'")" "$NOTIF" "no notifier item for the swap"
is "$(sql "SELECT count(*) FROM publishes WHERE name='loja' AND content_hash='$H2'")" 1 "no new publish"
# one for older content: the target moved on, nothing is written
RV=$(cmjson loja | jq -r .metadata.resourceVersion)
"$TOOL" $C enqueue publisher sites-loja loja "$H" "format=bin bin=$B8" recompress >/dev/null
check "a recompress item for content no longer published is superseded" wait_for 15 sh -c "[ \"\$(sqlite3 -cmd '.timeout 5000' '$DB' \"SELECT result FROM items WHERE stage='publisher' AND kind='recompress' AND hash='$H'\")\" = superseded ]"
is "$(cmjson loja | jq -r .metadata.resourceVersion)" "$RV" "... and the ConfigMap is not written"
check "drift repair keeps the swapped bytes" bin_is loja "$T/big2.q11"

# --- too large -----------------------------------------------------------------------
head -c 1200000 /dev/urandom | base64 -w0 | sed 's/.*/{"Big":"&"}/' >"$T/big.json"
decofile big
set -- $(render "$T/big.json")
"$TOOL" $C enqueue publisher sites-loja big "$1" "format=bin bin=$2" >/dev/null
check "Ready=False TooLarge suggests target: s3" wait_for 10 grep -q \
    '"type":"Ready","status":"False","reason":"TooLarge","message":"[^"]*target: s3' "$STATUS.d/big.d/publisher.v"
kubectl_admin -n sites-loja get configmap decofile-big >/dev/null 2>&1
[ $? -ne 0 ]; ok $? "no ConfigMap written"

# --- a write the API server refuses: the item is retried, Ready says why --------
printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"ghost","namespace":"nowhere"},"spec":{"source":"inline","target":"configmap","inline":{"value":{"A":1}}}}' >"$T/ghost.json"
"$TOOL" $C apply "$T/ghost.json"
set -- $(render "$T/doc.json")
"$TOOL" $C enqueue publisher nowhere ghost "$1" "format=bin bin=$2" >/dev/null
check "Ready=False ConfigMapFailed names the API's answer" wait_for 10 grep -q \
    '"type":"Ready","status":"False","reason":"ConfigMapFailed","message":"Cannot write ConfigMap decofile-ghost: [^"]*404' \
    "$T/store/kv/decod.d/status.d/decofiles.d/nowhere.d/ghost.d/publisher.v"
is "$(sql "SELECT state FROM items WHERE stage='publisher' AND name='ghost'")" pending "... and the item waits for a retry"

# --- adoption of what the Go operator wrote ---------------------------------------------
printf '{"Header":{"x":1}}' >"$T/old.json"
decofile old
UID_OLD=$(kubectl_admin -n sites-loja get decofile old -o jsonpath='{.metadata.uid}')
brotli -c -q 3 "$T/old.json" | base64 -w0 >"$T/old.theirs"
kubectl_admin -n sites-loja create configmap decofile-old --from-file=decofile.bin="$T/old.theirs" \
    --from-literal=timestamp.txt=1731598481 >/dev/null
set -- $(render "$T/old.json" 8)
"$TOOL" $C enqueue publisher sites-loja old "$1" "format=bin bin=$2 commit=c0ffee" >/dev/null
check "adopted: owner reference set" wait_for 10 sh -c "[ \"\$(kubectl --kubeconfig $KUBE_DIR/admin.kubeconfig -n sites-loja get cm decofile-old -o jsonpath='{.metadata.ownerReferences[0].uid}')\" = $UID_OLD ]"
is "$(cmjson old | jq -r '.data["timestamp.txt"]')" 1731598481 "... the operator's timestamp kept"
check "... and its bytes (no new publish)" bin_is old "$T/old.theirs"
is "$(sql "SELECT count(*) FROM publishes WHERE name='old'")" 0 "no publish row"
is "$(sql "SELECT count(*) FROM items WHERE stage='notifier' AND name='old'")" 0 "no reload"
is "$(sql "SELECT count(*) FROM audit WHERE object='decofile/sites-loja/old' AND action='adopt'")" 1 "adoption audited"

# the adopted one is ours after a restart too (the store's status says so)
kill -TERM $PUB_PID; wait $PUB_PID 2>/dev/null
: >"$T/pub.log"
start_pub
check "restarted with both" wait_for 15 grep -q 'msg="configmap target synced" configmaps=2' "$T/pub.log"
kubectl_admin -n sites-loja patch configmap decofile-old --type merge -p '{"data":{"x":"y"}}' >/dev/null
check "drift on the adopted ConfigMap is put back after a restart" wait_for 10 sh -c "[ \"\$(kubectl --kubeconfig $KUBE_DIR/admin.kubeconfig -n sites-loja get cm decofile-old -o json | jq -r '.data|keys|join(\",\")')\" = decofile.bin,timestamp.txt ]"
is "$(cmjson old | jq -r '.data["timestamp.txt"]')" 1731598481 "... with the operator's timestamp"

# a CR deleted with its ConfigMap orphaned, then created again under the same
# name: the store's copy names the new uid, and the owner reference follows it
owner_of_old() { kubectl_admin -n sites-loja get cm decofile-old -o jsonpath='{.metadata.ownerReferences[*].uid}'; }
kubectl_admin -n sites-loja delete decofile old --cascade=orphan >/dev/null
orphaned() { [ -z "$(owner_of_old)" ]; }
check "orphaned by the garbage collector: no owner reference" wait_for 60 orphaned
decofile old
UID_NEW=$(kubectl_admin -n sites-loja get decofile old -o jsonpath='{.metadata.uid}')
[ -n "$UID_NEW" ] && [ "$UID_NEW" != "$UID_OLD" ]; ok $? "... the CR created again has a new uid"
owned_anew() { [ "$(owner_of_old)" = "$UID_NEW" ]; }
check "... and owns its ConfigMap again (the publisher follows the store's copy)" wait_for 10 owned_anew
check "... with the same bytes" bin_is old "$T/old.theirs"

# --- deletion: detach keeps it (no owner reference left), delete removes it --------------
decofile keep '{"deco.sites/deletion":"detach"}'
set -- $(render "$T/doc.json")
"$TOOL" $C enqueue publisher sites-loja keep "$1" "format=bin bin=$2" >/dev/null
check "detach: published" wait_for 10 kubectl_admin -n sites-loja get configmap decofile-keep
is "$(cmjson keep | jq -c '.metadata.ownerReferences // []')" "[]" "detach: no owner reference"
kubectl_admin -n sites-loja delete decofile keep >/dev/null
"$TOOL" $C delete sites-loja keep
"$TOOL" $C delete sites-loja old
check "delete: the ConfigMap goes with its Decofile" wait_for 10 sh -c "! kubectl --kubeconfig $KUBE_DIR/admin.kubeconfig -n sites-loja get configmap decofile-old 2>/dev/null"
kubectl_admin -n sites-loja get configmap decofile-keep >/dev/null 2>&1
ok $? "detach: the ConfigMap stays"
# the CR alone (the store's copy is the fetcher's business): the garbage
# collector follows the owner reference
kill -TERM $PUB_PID; wait $PUB_PID 2>/dev/null
gc_done() { ! kubectl_admin -n sites-loja get configmap decofile-loja >/dev/null 2>&1; }
kubectl_admin -n sites-loja delete decofile loja --wait=false >/dev/null
check "the garbage collector removes the ConfigMap of a deleted Decofile CR" wait_for 60 gc_done
if grep -q "$TOKEN" "$T/pub.log"; then ok 1 "token never logged"; else ok 0 "token never logged"; fi
done_testing
