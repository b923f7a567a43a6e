#!/bin/sh
# fetch_kube - Decofile CRs as a front door against a real API server, the
# fetcher running as deploy/'s ServiceAccount: a CR applied with kubectl is
# mirrored into the store (edit, delete, and a delete made while the fetcher
# was down); every stage's status fragment shows on the CR, merged, under
# the one field manager `decod`, so `kubectl wait
# --for=condition=PodsNotified` works; a restart writes nothing; the CRD accepts the Go operator's values
# (tanstack-kv, endpoint objects).
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/kube.sh"

FETCHER=$(bin fetcher)
TOOL="$top_builddir/t/stage/testtool"
[ -x "$FETCHER" ] || bail "fetcher not built"

kube_start
kube_apply_deploy || bail "deploy/ does not apply"
kubectl_admin create namespace sites-loja >/dev/null
# decod runs as this account only (kube_start exported the admin's KUBECONFIG)
kube_as_decod "$T/decod.kubeconfig" || bail "no token for decod-system/decod"

cat >"$T/conf" <<EOF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
kubeconfig = $T/decod.kubeconfig
rescan_interval = 100ms
stages = fetcher
github_api_url = http://127.0.0.1:$(free_port)
EOF
C="-c $T/conf"
STORE="$T/store/kv/decod.d/decofiles.d/sites-loja.d"
FRAG="$T/store/kv/decod.d/status.d/decofiles.d/sites-loja.d"

start_fetcher() {
	: >"$T/fetcher.log"
	"$FETCHER" $C >>"$T/fetcher.log" 2>&1 &
	F_PID=$!
	track_pid $F_PID
	wait_for 15 grep -q 'msg=ready' "$T/fetcher.log" || bail "fetcher did not start"
}
stop_fetcher() { kill -TERM $F_PID; wait $F_PID 2>/dev/null; }
cr() { kubectl_admin -n sites-loja get decofile "$1" -o json --show-managed-fields; }
# status_applies: server-side applies of Decofile status the API server counted
status_applies() {
	curl -sf --cacert "$KUBE_DIR/ca.crt" --cert "$KUBE_DIR/admin.crt" --key "$KUBE_DIR/admin.key" \
	    "$KUBE_URL/metrics" | awk '/^apiserver_request_total\{/ && /resource="decofiles"/ &&
	    /subresource="status"/ && /verb="APPLY"/ { n += $NF } END { print n + 0 }'
}
# table NAME COLUMN: a printer column's cell, as kubectl's table shows it
table() {
	curl -sf --cacert "$KUBE_DIR/ca.crt" --cert "$KUBE_DIR/admin.crt" --key "$KUBE_DIR/admin.key" \
	    -H 'Accept: application/json;as=Table;v=v1;g=meta.k8s.io' \
	    "$KUBE_URL/apis/deco.sites/v1alpha1/namespaces/sites-loja/decofiles/$1" |
	    jq -r --arg c "$2" '(.columnDefinitions | map(.name) | index($c)) as $i | .rows[0].cells[$i]'
}

cat >"$T/loja.yaml" <<EOF
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata: {name: loja, namespace: sites-loja}
spec:
  source: inline
  target: configmap
  inline: {value: {Header: {title: Loja}}}
EOF
kubectl_admin apply --server-side -f "$T/loja.yaml" >/dev/null || bail "cannot create the CR"
start_fetcher
check "the CR is mirrored into the store" wait_for 10 test -s "$STORE/loja.v"
UID_L=$(cr loja | jq -r .metadata.uid)
check "... marked with the CR's uid" grep -q "\"decod.deco.sites/kube-uid\":\"$UID_L\"" "$STORE/loja.v"
check "... with its spec" grep -q '"inline":{"value":{"Header":{"title":"Loja"}}}' "$STORE/loja.v"

check "the fetcher's status shows on the CR" wait_for 10 sh -c \
    "kubectl --kubeconfig $KUBE_DIR/admin.kubeconfig -n sites-loja get decofile loja -o jsonpath='{.status.sourceType}' | grep -qx inline"
is "$(cr loja | jq -r '[.metadata.managedFields[] | select(.subresource=="status") | .manager] | sort | join(",")')" \
    "decod" "... written under field manager decod, on the status subresource"

# another stage's fragment (the notifier's): the same one manager
"$TOOL" $C condition sites-loja loja notifier PodsNotified True NotificationSucceeded \
    "Successfully notified all pods for timestamp:1731598481" >/dev/null
t0=$(date +%s%N)
kubectl_admin -n sites-loja wait --for=condition=PodsNotified decofile/loja --timeout=15s >/dev/null
ok $? "kubectl wait --for=condition=PodsNotified decofile/loja ($(( ($(date +%s%N) - t0) / 1000000 )) ms)"
is "$(cr loja | jq -r '.status.conditions[] | select(.type=="PodsNotified") | .message')" \
    "Successfully notified all pods for timestamp:1731598481" "the condition's message as the notifier wrote it"
is "$(cr loja | jq -r '[.metadata.managedFields[] | select(.subresource=="status") | .manager] | sort | join(",")')" \
    "decod" "every stage's fragment under the one field manager decod"
is "$(table loja PodsNotified)" "True" "printer column PodsNotified"
is "$(table loja Source)" "inline" "printer column Source"
"$TOOL" $C condition sites-loja loja notifier PodsNotified False NotificationFailed "Failed to notify pods for timestamp:2: a (HTTP 500)" >/dev/null
check "a condition that changes is changed on the CR" wait_for 10 sh -c \
    "kubectl --kubeconfig $KUBE_DIR/admin.kubeconfig -n sites-loja get decofile loja -o json | jq -r '.status.conditions[] | select(.type==\"PodsNotified\") | .status' | grep -qx False"
is "$(cr loja | jq '[.status.conditions[] | select(.type=="PodsNotified")] | length')" 1 \
    "conditions are a list-map keyed by type: one PodsNotified"

# edit and delete
kubectl_admin -n sites-loja patch decofile loja --type merge -p '{"spec":{"inline":{"value":{"Header":{"title":"Nova"}}}}}' >/dev/null
check "a CR edit reaches the store" wait_for 10 grep -q '"title":"Nova"' "$STORE/loja.v"
# ... and the fetcher's status of it the CR (else the restart below owes that write)
observed() { [ "$(cr loja | jq '.status.observedGeneration == .metadata.generation')" = true ]; }
check "... and the CR shows the fetcher observed it" wait_for 15 observed

# a restart writes nothing to the CR: the API server counts the status
# applies (metrics), and across the restart only the new fragment is one
A0=$(status_applies)
"$TOOL" $C status sites-loja loja >"$T/st.before"
stop_fetcher
start_fetcher
check "restarted and caught up" wait_for 10 grep -q 'Kubernetes front door caught up' "$T/fetcher.log"
check "... having written no status: every CR listed already showed its merged status" \
    grep -q 'Kubernetes front door caught up.*status_writes=0' "$T/fetcher.log"
"$TOOL" $C condition sites-loja loja renderer Probe True Probe "restart probe" >/dev/null
wait_for 10 sh -c "kubectl --kubeconfig $KUBE_DIR/admin.kubeconfig -n sites-loja get decofile loja -o json | jq -e '.status.conditions[] | select(.type==\"Probe\")' >/dev/null"
A1=$(status_applies)
diag "status applies across the restart and the probe: $((A1 - A0))"
# (the fetcher itself may pass through Syncing=Unknown at start, which the
# mirror faithfully writes, so one or two more may follow the probe's)
[ "$((A1 - A0))" -ge 1 ] && [ "$((A1 - A0))" -le 3 ]
ok $? "after the restart: the probe's apply, and at most the fetcher's own Syncing moves"
is "$(cr loja | jq -r '[.metadata.managedFields[] | select(.subresource=="status") | .manager] | join(",")')" \
    "decod" "... still under the one manager"

kubectl_admin -n sites-loja delete decofile loja >/dev/null
check "a CR delete removes the store's copy" wait_for 10 sh -c "! test -e $STORE/loja.v"

# deleted while the fetcher is down: the next list finds it gone
sed 's/name: loja/name: second/' "$T/loja.yaml" | kubectl_admin apply --server-side -f - >/dev/null
check "second mirrored" wait_for 10 test -s "$STORE/second.v"
stop_fetcher
kubectl_admin -n sites-loja delete decofile second >/dev/null
start_fetcher
check "deleted while down: removed at start" wait_for 10 sh -c "! test -e $STORE/second.v"

# what decoctl applied (no CR) is left alone by the sweep
printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"local","namespace":"sites-loja"},"spec":{"source":"inline","inline":{"value":{"A":1}}}}' >"$T/local.json"
"$TOOL" $C apply "$T/local.json"
stop_fetcher
start_fetcher
sleep_ms=0
wait_for 5 grep -q 'msg=ready' "$T/fetcher.log"
check "a Decofile applied with decoctl stays" test -s "$STORE/local.v"

# the Go operator's values validate (the fetch itself fails: no GitHub here)
cat >"$T/tanstack.yaml" <<EOF
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata: {name: kv, namespace: sites-loja}
spec:
  source: github
  github: {org: deco-sites, repo: loja-kv, commit: main, path: .deco/blocks/}
  target: tanstack-kv
  tanstackKV: {kvNamespaceId: 0f2c8e4b9a7d4c1e8f6b3a2d5c7e9f10}
  endpoints:
  - http://10.0.0.7:8000
  - {url: "http://10.0.0.8:8000", style: poll, tsFile: /app/decofile/timestamp.txt}
EOF
kubectl_admin apply --server-side --validate=strict -f "$T/tanstack.yaml" >/dev/null
ok $? "the CRD accepts target tanstack-kv and endpoint objects"
check "... and it is mirrored" wait_for 10 test -s "$STORE/kv.v"
if grep -q "$TOKEN" "$T/fetcher.log"; then ok 1 "token never logged"; else ok 0 "token never logged"; fi
done_testing
