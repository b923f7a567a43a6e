#!/bin/sh
# kube_client - common/kube/kube.c against a real kube-apiserver (one for the
# whole file), as a ServiceAccount with a TokenRequest token and RBAC, never
# as admin: get, paginated list, server-side apply and its conflicts, the
# informer (list, watch, bookmarks), a cut watch, 410 Gone after an etcd
# compaction while disconnected, 429/500 retried, a slow answer against the
# deadline, and the token file re-read when it changes.  Faults come from
# t/kube/faultproxy.py between the client and the server.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/kube.sh"

KT=$top_builddir/t/kube/kubetool
PROXY=$top_srcdir/t/kube/faultproxy.py

# a real 410 Gone needs the version out of the API server's watch cache too:
# configmaps are watched from etcd in this file
KUBE_APISERVER_EXTRA_ARGS="--watch-cache-sizes=configmaps#0" kube_start

# --- a namespace, a ServiceAccount with just what these tests need
kubectl_admin create namespace kt >/dev/null
kubectl_admin -n kt create serviceaccount tester >/dev/null
kubectl_admin -n kt create role tester --verb=get,list,watch,create,patch,delete \
    --resource=configmaps >/dev/null
kubectl_admin -n kt create rolebinding tester --role=tester --serviceaccount=kt:tester >/dev/null
TOKEN=$(kube_token kt tester)
[ -n "$TOKEN" ] || bail "TokenRequest gave no token"
kube_token_config "$T/sa.kubeconfig" "$TOKEN" kt
export KUBECONFIG="$T/sa.kubeconfig"

out=$("$KT" --kubeconfig "$KUBE_ADMIN" whoami)
is "$out" "$KUBE_URL default" "admin kubeconfig with client certificate files"
out=$("$KT" whoami)
is "$out" "$KUBE_URL kt" "KUBECONFIG: the ServiceAccount's token, the context's namespace"

# in a pod: KUBERNETES_SERVICE_HOST/PORT and the service-account folder
mkdir -p "$T/sa"
kube_token kt tester >"$T/sa/token"
cp "$KUBE_DIR/ca.crt" "$T/sa/ca.crt"
printf 'kt\n' >"$T/sa/namespace"
hp=${KUBE_URL#https://}
out=$(env -u KUBECONFIG KUBERNETES_SERVICE_HOST=${hp%:*} KUBERNETES_SERVICE_PORT=${hp##*:} \
    DECOD_KUBE_SA_DIR="$T/sa" "$KT" whoami)
is "$out" "$KUBE_URL kt" "in-cluster: server from the environment, namespace from the file"
env -u KUBECONFIG KUBERNETES_SERVICE_HOST=${hp%:*} KUBERNETES_SERVICE_PORT=${hp##*:} \
    DECOD_KUBE_SA_DIR="$T/sa" "$KT" list configmaps kt >/dev/null 2>"$T/err"
ok $? "in-cluster: the projected token and CA work"

# --- get, apply, conflicts
"$KT" get configmaps kt nothing >/dev/null 2>"$T/err"
[ $? -eq 1 ]; ok $? "get of an absent object fails"
grep -q "HTTP 404 NotFound" "$T/err"; ok $? "... with 404 NotFound"
"$KT" get secrets kt x >/dev/null 2>"$T/err"
grep -q "HTTP 403 Forbidden" "$T/err"; ok $? "RBAC applies: secrets are Forbidden to the account"

printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm1","namespace":"kt"},"data":{"a":"1","b":"2"}}' >"$T/cm1.json"
"$KT" apply configmaps kt cm1 decod-test noforce "$T/cm1.json" 2>"$T/err"
ok $? "server-side apply creates"
out=$($KUBE_PY - "$KUBE_ADMIN" <<'PY'
import sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
cm = client.CoreV1Api().read_namespaced_config_map("cm1", "kt")
mf = [m.manager for m in cm.metadata.managed_fields]
print(cm.data["a"], cm.data["b"], ",".join(mf))
PY
)
is "$out" "1 2 decod-test" "the Python client reads what was applied, managed by decod-test"
kubectl_admin -n kt patch configmap cm1 --type merge -p '{"data":{"a":"hand"}}' --field-manager=hand >/dev/null
"$KT" apply configmaps kt cm1 decod-test noforce "$T/cm1.json" 2>"$T/err"
st=$?
grep -q "HTTP 409 Conflict.*data.a" "$T/err"
ok $(( st == 0 || $? )) "apply without force: 409 naming the field another manager set"
"$KT" apply configmaps kt cm1 decod-test force "$T/cm1.json" 2>"$T/err"
ok $? "apply with force takes the field back"
is "$(kubectl_admin -n kt get cm cm1 -o jsonpath='{.data.a}')" "1" "... the value is decod's again"

# --- pagination
i=0
while [ $i -lt 23 ]; do echo "---"; printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p%02d}\n' $i; i=$((i + 1)); done |
    kubectl_admin -n kt apply -f - >/dev/null
want=$(kubectl_admin -n kt get cm -o name | wc -l)
out=$("$KT" list configmaps kt "" 5 | head -1)
is "$out" "$want objects rv=set" "list in pages of 5 returns all $want"

# --- the fault proxy in front of the server
python3 "$PROXY" --upstream "$KUBE_URL" --cacert "$KUBE_DIR/ca.crt" --port-file "$T/proxy.port" \
    2>"$T/proxy.log" &
track_pid $!
wait_for 10 test -s "$T/proxy.port" || bail "fault proxy did not start"
PP=$(cat "$T/proxy.port")
PURL=http://127.0.0.1:$PP
fault() { curl -sf -X POST -d "$1" "$PURL/__fault" >/dev/null; }
sed "s#server: \"$KUBE_URL\", certificate-authority: \"$KUBE_DIR/ca.crt\"#server: \"$PURL\"#" \
    "$T/sa.kubeconfig" >"$T/proxy.kubeconfig"
grep -q "$PURL" "$T/proxy.kubeconfig" || bail "could not write the proxy kubeconfig"

fault '{"match":"GET /api/v1/namespaces/kt/configmaps/cm1","status":429,"retry_after":1,"count":2}'
t0=$(date +%s%N)
KUBECONFIG=$T/proxy.kubeconfig "$KT" get configmaps kt cm1 >/dev/null 2>"$T/err"
st=$?; t1=$(date +%s%N)
ok $st "429 twice with Retry-After: 1, then the answer"
grep -q "attempts=3 status=200" "$T/err"; ok $? "... after 3 attempts"
[ $(( (t1 - t0) / 1000000 )) -ge 1900 ]; ok $? "... Retry-After honoured ($(( (t1 - t0) / 1000000 )) ms)"

fault '{"match":"PATCH /api/v1/namespaces/kt/configmaps/cm1","status":500,"count":1}'
KUBECONFIG=$T/proxy.kubeconfig "$KT" apply configmaps kt cm1 decod-test force "$T/cm1.json" 2>"$T/err"
ok $? "500 on an apply: retried"
grep -q "attempts=2 status=200" "$T/err"; ok $? "... once"

fault '{"match":"GET /api/v1/namespaces/kt/configmaps/cm1","delay_ms":4000,"count":1}'
t0=$(date +%s%N)
KUBECONFIG=$T/proxy.kubeconfig DECOD_KUBE_TIMEOUT=1s "$KT" get configmaps kt cm1 >/dev/null 2>"$T/err"
st=$?; t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
[ $st -ne 0 ] && grep -q "deadline exceeded" "$T/err"; ok $? "a slow answer ends at the deadline"
[ $ms -lt 2500 ]; ok $? "... kube_timeout=1s holds ($ms ms)"

# --- the informer through the proxy: events, a cut watch, 410 after compaction
KUBECONFIG=$T/proxy.kubeconfig "$KT" informer configmaps kt >"$T/inf.out" 2>"$T/inf.err" &
INF=$!
track_pid $INF
wait_for 20 grep -q "^SYNCED $want" "$T/inf.out"; ok $? "informer: listed $want objects, then SYNCED"
kubectl_admin -n kt create configmap w1 --from-literal=x=1 >/dev/null
wait_for 10 grep -q "^ADDED kt/w1" "$T/inf.out"; ok $? "informer: ADDED from the watch"
kubectl_admin -n kt delete configmap p00 >/dev/null
wait_for 10 grep -q "^DELETED kt/p00" "$T/inf.out"; ok $? "informer: DELETED from the watch"

fault '{"match":"watch=1","cut_after":1,"count":1}'
# the next watch (after this cut) is the faulted one: cut the current one
fault '{"down":true}'; fault '{"down":false}'
kubectl_admin -n kt create configmap w2 --from-literal=x=1 >/dev/null
kubectl_admin -n kt create configmap w3 --from-literal=x=1 >/dev/null
wait_for 15 grep -q "^ADDED kt/w3" "$T/inf.out"; ok $? "watch cut mid-stream: reconnected, nothing missed"
grep -q "^ADDED kt/w2" "$T/inf.out"; ok $? "... w2 seen too"

# disconnected: changes, then etcd compacted past the informer's version
fault '{"down":true}'
kubectl_admin -n kt create configmap gone1 --from-literal=x=1 >/dev/null
kubectl_admin -n kt delete configmap p01 >/dev/null
kubectl_admin -n kt create configmap gone2 --from-literal=x=1 >/dev/null
rev=$("$KUBEBUILDER_ASSETS/etcdctl" --endpoints "$KUBE_ETCD_URL" endpoint status -w json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Status"]["header"]["revision"])')
"$KUBEBUILDER_ASSETS/etcdctl" --endpoints "$KUBE_ETCD_URL" compact "$rev" >/dev/null 2>&1
ok $? "etcd compacted at revision $rev while the informer is cut off"
fault '{"down":false}'
wait_for 30 grep -q "^DELETED kt/p01" "$T/inf.out"; ok $? "410 Gone: re-listed, the deletion made meanwhile is delivered"
grep -q "^ADDED kt/gone1" "$T/inf.out" && grep -q "^ADDED kt/gone2" "$T/inf.out"
ok $? "... and both additions"
kubectl_admin -n kt create configmap after --from-literal=x=1 >/dev/null
wait_for 10 grep -q "^ADDED kt/after" "$T/inf.out"; ok $? "watching again after the re-list"
kill -TERM $INF
wait_for 10 grep -q "^STATS" "$T/inf.out"
stats=$(grep "^STATS" "$T/inf.out")
diag "$stats"
echo "$stats" | grep -Eq "gone=[1-9]"; ok $? "the informer counted a 410"
echo "$stats" | grep -Eq "lists=[2-9]"; ok $? "... and listed again"
n=$(grep -c "^ADDED kt/w1 " "$T/inf.out")
is "$n" 1 "no event delivered twice across reconnects"

# --- the token file re-read when it changes (projected tokens rotate)
echo "not-a-valid-token" >"$T/token"
kube_token_file_config "$T/tf.kubeconfig" "$T/token" kt
KUBECONFIG=$T/tf.kubeconfig "$KT" informer configmaps kt >"$T/inf2.out" 2>"$T/inf2.err" &
INF2=$!
track_pid $INF2
wait_for 10 grep -q "HTTP 401" "$T/inf2.err"; ok $? "an invalid token: 401"
kube_token kt tester >"$T/token.new" && mv "$T/token.new" "$T/token"
wait_for 30 grep -q "^SYNCED" "$T/inf2.out"; ok $? "the rotated token file is re-read: listed"
if grep -q "not-a-valid-token\|$TOKEN" "$T/inf2.err" "$T/inf.err" "$T/err"; then ok 1 "tokens never logged"; else ok 0 "tokens never logged"; fi
kill -TERM $INF2

done_testing
